package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// The shapes below are VS Code's agent host's (microsoft/vscode,
// src/vs/platform/agentHost/): common/agent.ts @ b93bea085642ae3932b697d02ba8f94c24324a86
// (GITHUB_COPILOT_PROTECTED_RESOURCE, shared by the Copilot CLI and Claude
// agents), node/claude/claudeAgent.ts @ b559f469ae03e4933793d1834964913836375288 and
// node/copilot/copilotAgent.ts @ 413b84f752397c1927ee44486b66b9485eca58c9
// (-32007 with getProtectedResources() as its data).
const vscodeCopilotResource = `{"resource": "https://api.github.com", "resource_name": "GitHub Copilot",
  "authorization_servers": ["https://github.com/login/oauth"], "scopes_supported": ["read:user", "user:email"], "required": true}`

// Two agents of one VS Code host that consume one GitHub Copilot token
// are one requirement: one authenticate serves both.
func TestRequirementsOneResourceSeveralAgents(t *testing.T) {
	raw := `{"protocolVersion": "0.9.0", "serverSeq": 0, "snapshots": [{"resource": "ahp-root://", "fromSeq": 0, "state": {"agents": [
	  {"provider": "copilotcli", "displayName": "Copilot CLI", "description": "Copilot SDK agent running in a dedicated process", "models": [],
	   "protectedResources": [` + vscodeCopilotResource + `]},
	  {"provider": "claude", "displayName": "Claude", "description": "Claude agent backed by the Anthropic Claude Agent SDK", "models": [],
	   "protectedResources": [` + vscodeCopilotResource + `,
	     {"resource": "https://api.github.com/repos", "authorization_servers": ["https://github.com/login/oauth"], "scopes_supported": ["repo"], "required": false}]}]}}]}`
	var res wire.InitializeResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatal(err)
	}
	reqs := res.Requirements()
	if len(reqs) != 2 {
		t.Fatalf("requirements = %+v, want api.github.com once and the repo resource", reqs)
	}
	if r := reqs[0]; r.Resource != "https://api.github.com" || !r.Required || strings.Join(r.ScopesSupported, " ") != "read:user user:email" {
		t.Errorf("requirement = %+v", r)
	}
	if r := reqs[1]; r.Resource != "https://api.github.com/repos" || r.Required {
		t.Errorf("requirement = %+v", r)
	}
}

// VS Code's agents answer -32007 with a bare array of protected resources.
func TestAuthRequiredBareArray(t *testing.T) {
	e := &wire.Error{Code: wire.CodeAuthRequired, Message: "Authentication is required to use Claude", Data: json.RawMessage(`[` + vscodeCopilotResource + `]`)}
	d, ok := e.AuthRequired()
	if !ok || len(d.Resources) != 1 || d.Resources[0].Resource != "https://api.github.com" || len(d.Challenges) != 0 {
		t.Errorf("AuthRequired() = %+v, %v", d, ok)
	}
	d, ok = (&wire.Error{Code: wire.CodeAuthRequired, Message: "Authentication failed for resource: https://api.github.com"}).AuthRequired()
	if !ok || len(d.Resources) != 0 || len(d.Challenges) != 0 {
		t.Errorf("AuthRequired() without data = %+v, %v", d, ok)
	}
}

// Each published-dialect connection has its own clientId: VS Code's host
// sends a client's pushes to its newest connection only.
func TestPublishedClientIDPerConnection(t *testing.T) {
	a := wire.NewInitializeParams(wire.DialectPublished, "agentauth-authenticate")
	b := wire.NewInitializeParams(wire.DialectPublished, "agentauth-authenticate")
	if a.ClientID == b.ClientID || !strings.HasPrefix(a.ClientID, "agentauth-authenticate-") {
		t.Errorf("clientIds %q and %q: want one per connection", a.ClientID, b.ClientID)
	}
	if d := wire.NewInitializeParams(wire.DialectDesign, "cli"); d.ClientID != "cli" {
		t.Errorf("design dialect clientId = %q, want it unchanged", d.ClientID)
	}
}
