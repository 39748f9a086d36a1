package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

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

// claudeInitialize is the initialize result claude-agent-acp 0.101.0 gives
// an ACP client of protocol version 1, trimmed to what matters here
// (@agentclientprotocol/claude-agent-acp 0.101.0, dist/acp-agent.js,
// initialize): the authStatus extension's marker in
// agentCapabilities._meta, and no auth-state query.
const claudeInitialize = `{"protocolVersion": 1, "agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": true}, "authStatus": {}},
	"promptCapabilities": {"image": true}}, "authMethods": [{"id": "claude-ai-login", "name": "Claude Subscription", "type": "terminal"}]}`

// TestPushedAuthStatus: an agent of the authStatus extension is read from
// its first _auth/status_update after initialize, as claude-agent-acp and
// codex-acp push it (kind "none": logged out; a label, and a detail where
// there is one); other notifications before it are passed over; an agent
// without the marker, or silent, has no state.
func TestPushedAuthStatus(t *testing.T) {
	var claude wire.InitializeResult
	if err := json.Unmarshal([]byte(claudeInitialize), &claude); err != nil {
		t.Fatal(err)
	}
	if !claude.AgentCapabilities.PushesAuthStatus() || AuthStateMethod(claude.AgentCapabilities) != "" {
		t.Fatalf("claude-agent-acp's capabilities: pushes %v, query %q", claude.AgentCapabilities.PushesAuthStatus(), AuthStateMethod(claude.AgentCapabilities))
	}
	for push, want := range map[string]string{
		`{"authStatus": {"kind": "none", "label": "Not logged in"}}`:                                   "false Not logged in",
		`{"authStatus": {"kind": "gateway", "label": "Custom model gateway", "detail": "gw.example"}}`: "true Custom model gateway, gw.example",
		`{"authStatus": {"kind": "subscription"}}`:                                                     "true subscription",
	} {
		pushes := []string{
			`{"jsonrpc": "2.0", "method": "session/update", "params": {}}`,
			`{"jsonrpc": "2.0", "method": "_auth/status_update", "params": {"authStatus": {}}}`,
			`{"jsonrpc": "2.0", "method": "_auth/status_update", "params": ` + push + `}`,
		}
		hc := &HostConn{Client: fakeAgent(t, pushes), Init: &claude}
		st := hc.PushedAuthStatus(context.Background())
		if st == nil {
			t.Errorf("push %s: no state", push)
			continue
		}
		if got := fmt.Sprintf("%v %s", st.Authenticated, st.Message); got != want {
			t.Errorf("push %s: got %q, want %q", push, got, want)
		}
	}
	var bare wire.InitializeResult
	json.Unmarshal([]byte(`{"protocolVersion": 1, "agentCapabilities": {"_meta": {"authStatus": null}}}`), &bare)
	hc := &HostConn{Client: fakeAgent(t, []string{`{"jsonrpc": "2.0", "method": "_auth/status_update", "params": {"authStatus": {"kind": "none"}}}`}), Init: &bare}
	if st := hc.PushedAuthStatus(context.Background()); st != nil {
		t.Errorf("without the marker: %+v", st)
	}
	// Silent: nothing within the wait (cut short by the context).
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	hc = &HostConn{Client: fakeAgent(t, nil), Init: &claude}
	if st := hc.PushedAuthStatus(ctx); st != nil {
		t.Errorf("silent agent: %+v", st)
	}
}

// fakeAgent is a JSON-RPC client connected to an agent that sends the
// lines of pushes, and nothing else, over newline-delimited JSON on pipes,
// as an ACP agent's stdio.
func fakeAgent(t *testing.T, pushes []string) *wire.Client {
	toClient, fromAgent := io.Pipe()
	_, fromClient := io.Pipe()
	t.Cleanup(func() { fromClient.Close(); fromAgent.Close() })
	go func() {
		for _, line := range pushes {
			fmt.Fprintln(fromAgent, line)
		}
	}()
	return wire.NewClient(wire.NewStdioConn(toClient, fromClient, fromClient, 0))
}
