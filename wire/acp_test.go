package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/wire"
)

// The auth methods here are as real agents advertise them to a client
// that declares clientCapabilities._meta["terminal-auth"].
func TestTerminalAuth(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		want     *wire.TerminalAuth
		runs     bool
		wantKind string
	}{
		{"copilot 1.0.102", `{"id":"copilot-login","name":"Log in with Copilot CLI","description":"Run ` + "`copilot login`" + ` in the terminal","_meta":{"terminal-auth":{"command":"/opt/copilot","args":["login"],"label":"Copilot Login"}}}`,
			&wire.TerminalAuth{Command: "/opt/copilot", Args: []string{"login"}, Label: "Copilot Login"}, true, "agent"},
		{"auggie 0.36.0, with env", `{"id":"auggie-login","name":"Log in with Auggie","_meta":{"terminal-auth":{"command":"node","args":["/x/auggie","login"],"label":"Auggie Agent Login","env":{"AUGMENT_LOGIN_FAST_EXIT":"1"}}}}`,
			&wire.TerminalAuth{Command: "node", Args: []string{"/x/auggie", "login"}, Env: map[string]string{"AUGMENT_LOGIN_FAST_EXIT": "1"}, Label: "Auggie Agent Login"}, true, "agent"},
		{"a terminal method keeps its type", `{"id":"pi_terminal_login","name":"Launch pi","type":"terminal","args":["--terminal-login"],"_meta":{"terminal-auth":{"command":"pi-acp","args":["--terminal-login"]}}}`,
			&wire.TerminalAuth{Command: "pi-acp", Args: []string{"--terminal-login"}}, true, "terminal"},
		{"qwen-code's own _meta is no command", `{"id":"openai","name":"Use OpenAI API key","_meta":{"type":"terminal","args":["--auth-type=openai"]}}`, nil, false, "agent"},
		{"no command", `{"id":"x","name":"x","_meta":{"terminal-auth":{"args":["login"]}}}`, nil, false, "agent"},
		{"not an object", `{"id":"x","name":"x","_meta":{"terminal-auth":true}}`, nil, false, "agent"},
		{"an env_var method", `{"id":"x","name":"x","type":"env_var","_meta":{"terminal-auth":{"command":"x"}}}`, &wire.TerminalAuth{Command: "x"}, false, "env_var"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m wire.AuthMethod
			if err := json.Unmarshal([]byte(tt.method), &m); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m.TerminalAuth()); diff != "" {
				t.Errorf("TerminalAuth (-want +got):\n%s", diff)
			}
			if m.RunsCommand() != tt.runs || m.Kind() != tt.wantKind {
				t.Errorf("RunsCommand, Kind = %v, %s; want %v, %s", m.RunsCommand(), m.Kind(), tt.runs, tt.wantKind)
			}
		})
	}
}

func TestTerminalAuthBounded(t *testing.T) {
	args := make([]string, 65)
	for i := range args {
		args[i] = "a"
	}
	m := wire.AuthMethod{ID: "x", Meta: map[string]any{"terminal-auth": map[string]any{"command": "x", "args": args}}}
	if m.TerminalAuth() != nil {
		t.Error("a terminal-auth command with 65 arguments was read")
	}
}
