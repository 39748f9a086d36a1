package agents

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// ahpVersionedHostMain is an agent host over stdio that speaks exactly one
// AHP version line, as hosts built from microsoft/agent-host-protocol
// ship: "0.9.0" (^0.9.0 up to 0.9.0), "1.0.0" (^1.0.0 up to 1.0.0) or
// "1.1.0" (^1.0.0 up to 1.1.0; types/version/registry.ts @
// 0383429738a78b810f71f5a91d7e57d6b951fdf5). Initialize picks the newest
// offered version it speaks, else -32005; a 1.x result carries _meta,
// accountRevocation and authentication.flows (types/authentication.test.ts
// @ e034159f2e6dc4739947af053a75f2c02d804f4d, types/accounts.test.ts @
// c0e5745a07bc39476050dbf0f706aaae134cae92). authenticate {channel,
// resource, token} accepts gho_good (or a JWT) and answers {} — or, with
// --vscode, {"authenticated": true} as VS Code's host does
// (src/vs/platform/agentHost/node/agentHostAuthenticationService.ts);
// listSessions is -32007 with the protected resources until then.
func ahpVersionedHostMain() {
	vscode := flag.Bool("vscode", false, `answer authenticate with {"authenticated": true}`)
	brokered := flag.Bool("brokered", os.Getenv("AHP_HOST_BROKERED") != "", "advertise authentication.flows clientBrokered: authenticate needs a binding from authBegin (default: $AHP_HOST_BROKERED set)")
	noBegin := flag.Bool("no-authbegin", os.Getenv("AHP_HOST_NO_AUTHBEGIN") != "", "with -brokered: answer authBegin -32601 and take unbound deliveries, as a host that advertises the flow without the method (default: $AHP_HOST_NO_AUTHBEGIN set)")
	as := flag.String("as", "https://github.com/login/oauth", "the authorization server the protected resource names")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ahp-versioned-host [-vscode] [-as URL] 0.9.0|1.0.0|1.1.0")
		os.Exit(2)
	}
	own := flag.Arg(0)
	resource := map[string]any{"resource": "https://api.github.com", "resource_name": "GitHub Copilot",
		"authorization_servers": []any{*as}, "scopes_supported": []any{"read:user", "user:email"}}
	root := map[string]any{"resource": "ahp-root://", "fromSeq": 0, "state": map[string]any{"agents": []any{map[string]any{
		"provider": "copilot", "displayName": "GitHub Copilot", "description": "AI pair programmer", "models": []any{},
		"protectedResources": []any{resource}}}}}
	lw := progutil.NewLineWriter(os.Stdout)
	send, fail := lw.Send, lw.Fail
	authenticated, attempts := false, 0
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m struct {
			ID     any
			Method string
			Params map[string]any
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		if m.ID == nil {
			if m.Method == "auth/revoked" {
				account, _ := json.Marshal(m.Params["account"])
				fmt.Fprintf(os.Stderr, "host: auth/revoked resource=%v account=%s\n", m.Params["resource"], account)
				authenticated = false
			}
			continue
		}
		switch m.Method {
		case "initialize":
			offered, _ := m.Params["protocolVersions"].([]any)
			v := pickVersion(own, offered)
			if v == "" {
				fail(m.ID, -32005, "unsupported protocol version", map[string]any{"supportedVersions": []any{"^" + baseline(own)}})
				continue
			}
			res := map[string]any{"protocolVersion": v, "serverSeq": 0, "snapshots": []any{root}}
			if !strings.HasPrefix(v, "0.") {
				res["_meta"] = map[string]any{"example.com/build": "test"}
				res["accountRevocation"] = map[string]any{}
				if *brokered {
					res["authentication"] = map[string]any{"flows": []any{map[string]any{"kind": "clientBrokered"}}}
				}
			}
			send(map[string]any{"id": m.ID, "result": res})
		case "authBegin":
			if *noBegin {
				fmt.Fprintln(os.Stderr, "host: authBegin refused (-32601)")
				fail(m.ID, -32601, "method not found", nil)
				continue
			}
			target, _ := m.Params["target"].(map[string]any)
			consumer, _ := target["consumer"].(map[string]any)
			if !*brokered || m.Params["channel"] != "ahp-accounts://" || consumer["provider"] != "copilot" || consumer["resource"] != "https://api.github.com" {
				fail(m.ID, -32602, "invalid authBegin", nil)
				continue
			}
			attempts++
			send(map[string]any{"id": m.ID, "result": map[string]any{"flow": "clientBrokered", "attemptId": fmt.Sprintf("attempt-%d", attempts)}})
		case "authenticate":
			account, _ := json.Marshal(m.Params["account"])
			binding, _ := m.Params["binding"].(map[string]any)
			fmt.Fprintf(os.Stderr, "host: authenticate account=%s binding=%v\n", account, binding["kind"])
			token, _ := m.Params["token"].(string)
			valid := token == "gho_good" || strings.Count(token, ".") == 2 // or a JWT from serve's issuer
			if *brokered && valid && !*noBegin {
				switch {
				case binding["kind"] == "attempt" && binding["attemptId"] == fmt.Sprintf("attempt-%d", attempts):
				case binding["kind"] == "account" && binding["accountId"] == "account-1":
				default:
					fail(m.ID, -32602, "unbound delivery refused: send authBegin first", nil)
					continue
				}
				authenticated = true
				send(map[string]any{"id": m.ID, "result": map[string]any{"accountId": "account-1"}})
				continue
			}
			switch {
			case m.Params["resource"] != "https://api.github.com":
				fail(m.ID, -32602, "unknown resource", nil)
			case !valid:
				fail(m.ID, -32007, "invalid token", []any{resource})
			case *vscode:
				authenticated = true
				send(map[string]any{"id": m.ID, "result": map[string]any{"authenticated": true}})
			default:
				authenticated = true
				send(map[string]any{"id": m.ID, "result": map[string]any{}})
			}
		case "listSessions":
			if !authenticated {
				fail(m.ID, -32007, "Authentication required for GitHub Copilot", []any{resource})
				continue
			}
			send(map[string]any{"id": m.ID, "result": map[string]any{"items": []any{}}})
		case "ping":
			send(map[string]any{"id": m.ID, "result": map[string]any{}})
		default:
			fail(m.ID, -32601, "method not found", nil)
		}
	}
}

// baseline is the caret baseline of version v's line: 1.x.y → 1.0.0,
// 0.9.y → 0.9.0.
func baseline(v string) string {
	p := strings.Split(v, ".")
	if p[0] != "0" {
		return p[0] + ".0.0"
	}
	return "0." + p[1] + ".0"
}

// pickVersion is the newest offered version on own's line that is not
// newer than own.
func pickVersion(own string, offered []any) string {
	best := ""
	for _, o := range offered {
		s, _ := o.(string)
		if s == "" || baseline(s) != baseline(own) || newer(s, own) {
			continue
		}
		if best == "" || newer(s, best) {
			best = s
		}
	}
	return best
}

func newer(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3 && i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x > y
		}
	}
	return false
}
