package ahp

import (
	"flag"
	"os"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// vscode-host, for ahp_client_vscode.txtar: a fake agent host over stdio
// shaped like VS Code's (microsoft/vscode, src/vs/platform/agentHost/),
// the shipped implementation of the Agent Host Protocol. Two agents,
// Copilot CLI and Claude, both list the GitHub Copilot resource
// (common/agent.ts @ b93bea085642ae3932b697d02ba8f94c24324a86,
// GITHUB_COPILOT_PROTECTED_RESOURCE); Claude also lists a second, optional
// resource (the fake's own https://api.example.com). authenticate accepts
// a token for the resource its JWT names as audience and answers {}, or
// -32007 without data, as node/protocolServerHandler.ts @
// 01230893d55a5b69ca4eb2a597924c7b45da13e8 answers a refused one
// ("Authentication failed for resource: …"). A gated call without the
// Copilot token is -32007 whose data is the bare array of the agent's
// protected resources (node/claude/claudeAgent.ts @
// b559f469ae03e4933793d1834964913836375288, _ensureAuthenticated);
// createSession answers null. The protocol loop (ping, initialize, root
// subscribe) is shippedFake's (ahp.go).
func init() {
	programs["vscode-host"] = vscodeHostMain
}

func vscodeHostMain() {
	as := flag.String("as", "https://github.com/login/oauth", "the authorization server the protected resources name")
	flag.Parse()
	// VSCODE_HOST_MODE, not a flag, so that the target (the command line,
	// to which stored credentials are bound) stays the same:
	// "expire-copilot": once both resources are authenticated, push
	// auth/required "expired" for the Copilot resource, and exit after the
	// next authenticate; "forget-once": forget the Copilot token at the
	// first gated call after it was authenticated (as a restarted agent).
	mode := os.Getenv("VSCODE_HOST_MODE")
	expire, forget := mode == "expire-copilot", mode == "forget-once"
	copilot := map[string]any{"resource": "https://api.github.com", "resource_name": "GitHub Copilot",
		"authorization_servers": []any{*as}, "scopes_supported": []any{"read:user", "user:email"}, "required": true}
	example := map[string]any{"resource": "https://api.example.com", "resource_name": "Example API",
		"authorization_servers": []any{*as}, "required": false}
	root := map[string]any{"resource": "ahp-root://", "fromSeq": 0, "state": map[string]any{"agents": []any{
		map[string]any{"provider": "copilotcli", "displayName": "Copilot CLI", "description": "Copilot SDK agent running in a dedicated process",
			"models": []any{}, "protectedResources": []any{copilot}},
		map[string]any{"provider": "claude", "displayName": "Claude", "description": "Claude agent backed by the Anthropic Claude Agent SDK",
			"models": []any{}, "protectedResources": []any{copilot, example}},
	}}}
	f := &shippedFake{root: root, LineWriter: progutil.NewLineWriter(os.Stdout)}
	authenticated := map[any]bool{}
	pushed := false
	f.serve(func(id any, method string, p map[string]any) {
		switch {
		case method == "authenticate" && (p["resource"] != copilot["resource"] && p["resource"] != example["resource"] || !audienceHas(p["token"], p["resource"])):
			f.Fail(id, -32007, "Authentication failed for resource: "+p["resource"].(string), nil)
		case method == "authenticate":
			authenticated[p["resource"]] = true
			f.Send(map[string]any{"id": id, "result": map[string]any{}})
			if pushed {
				os.Exit(0)
			}
			if expire && authenticated[copilot["resource"]] && authenticated[example["resource"]] {
				pushed = true
				delete(authenticated, copilot["resource"])
				f.Send(map[string]any{"method": "auth/required", "params": map[string]any{"channel": "ahp-root://", "resource": copilot, "reason": "expired"}})
			}
		case !authenticated[copilot["resource"]]:
			f.Fail(id, -32007, "Authentication is required to use Claude", []any{copilot, example})
		case forget:
			forget = false
			delete(authenticated, copilot["resource"])
			f.Fail(id, -32007, "Authentication is required to use Claude", []any{copilot, example})
		default:
			f.Send(map[string]any{"id": id, "result": nil})
		}
	})
}
