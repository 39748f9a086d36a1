package client

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// TestRPCText: an agent's error shows its data, which is where ACP agents
// say why (codex-acp: -32603 "Internal error", data "CODEX_API_KEY is not
// set").
func TestRPCText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&wire.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`"CODEX_API_KEY is not set"`)}, "Internal error: CODEX_API_KEY is not set (-32603)"},
		{&wire.Error{Code: -32602, Message: "Invalid params", Data: json.RawMessage(`{"field":"clientInfo.version"}`)}, `Invalid params: {"field":"clientInfo.version"} (-32602)`},
		{&wire.Error{Code: -32000, Message: "Gemini API key is missing or not configured."}, "Gemini API key is missing or not configured. (-32000)"},
		// qwen-code 0.24.4 (qwen --acp) refusing authenticate {methodId: "openai"} without OPENAI_API_KEY, as it answered.
		{&wire.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`{"details":"Missing API key for openai auth. Current model: 'coder-model', baseUrl: '(default)'. Provide an API key via settings (security.auth.apiKey), or set the environment variable 'OPENAI_API_KEY'."}`)},
			"Internal error: Missing API key for openai auth. Current model: 'coder-model', baseUrl: '(default)'. Provide an API key via settings (security.auth.apiKey), or set the environment variable 'OPENAI_API_KEY'. (-32603)"},
		// opencode 1.18.33 (opencode acp): a member that does not say why.
		{&wire.Error{Code: -32603, Message: "Internal error: OpenCode service failure", Data: json.RawMessage(`{"service":"directory"}`)}, `Internal error: OpenCode service failure: {"service":"directory"} (-32603)`},
		{&wire.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`{"details":"a","more":"b"}`)}, `Internal error: {"details":"a","more":"b"} (-32603)`},
		{errors.New("plain"), "plain"},
	} {
		if got := RPCText(tc.err); got != tc.want {
			t.Errorf("RPCText = %q, want %q", got, tc.want)
		}
	}
}

// TestErrorEnvVars: the variables an agent's error names in its data, as
// codex-acp 2.6.0 answers authenticate {methodId: "api-key"} without a key
// (@agentclientprotocol/codex-acp 2.6.0, dist/index.js, readApiKeyFromEnv);
// anything else names none.
func TestErrorEnvVars(t *testing.T) {
	for data, want := range map[string]string{
		`{"envVars":["CODEX_API_KEY","OPENAI_API_KEY"]}`: "CODEX_API_KEY OPENAI_API_KEY",
		`{"envVars":[]}`:                                    "",
		`{"envVars":["A B"]}`:                               "",
		`{"envVars":["X\u001b[2J"]}`:                        "",
		`{"envVars":"CODEX_API_KEY"}`:                       "",
		`"CODEX_API_KEY is not set"`:                        "",
		`{"details":"set OPENAI_API_KEY"}`:                  "",
		`{"envVars":["A","B","C","D","E","F","G","H","I"]}`: "",
	} {
		err := &wire.Error{Code: -32603, Message: "CODEX_API_KEY or OPENAI_API_KEY is not set", Data: json.RawMessage(data)}
		got := ErrorEnvVars(err)
		if s := strings.Join(got, " "); s != want {
			t.Errorf("ErrorEnvVars(%s) = %q, want %q", data, s, want)
		}
	}
	if ErrorEnvVars(errors.New("plain")) != nil {
		t.Error("a plain error names variables")
	}
}

// TestMissingVars: an env_var method's variables as codex-acp advertises
// them (vars[].name), or the older varName; optional ones are never
// missing.
func TestMissingVars(t *testing.T) {
	t.Setenv("AGENTAUTH_TEST_SET", "x")
	var m wire.AuthMethod
	json.Unmarshal([]byte(`{"id":"k","type":"env_var","vars":[{"name":"AGENTAUTH_TEST_SET"},{"name":"AGENTAUTH_TEST_UNSET"},{"name":"AGENTAUTH_TEST_OPT","optional":true}]}`), &m)
	if got := MissingVars(m); len(got) != 1 || got[0] != "AGENTAUTH_TEST_UNSET" {
		t.Errorf("MissingVars = %v", got)
	}
	m = wire.AuthMethod{}
	json.Unmarshal([]byte(`{"id":"k","type":"env_var","varName":"AGENTAUTH_TEST_UNSET"}`), &m)
	if got := m.VarNames(); len(got) != 1 || got[0] != "AGENTAUTH_TEST_UNSET" {
		t.Errorf("VarNames (varName) = %v", got)
	}
}
