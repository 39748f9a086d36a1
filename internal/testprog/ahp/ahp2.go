package ahp

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// ahp-shipped-two, for ahp_client_two_resources.txtar: a fake agent host
// over stdio shaped strictly like the shipped Agent Host Protocol (the
// same sources as ahp-shipped-host in ahp.go:
// microsoft/agent-host-protocol types/common/commands.ts @
// 2f81aadbe141cfed8d69ffdd6c4cb22037d5b7b6, types/channels-root/state.ts
// @ f995c7b0922506412f04ca1683921cddea01bb9e, types/common/errors.ts @
// 5299191f6344eeed3341803593b8b50d9183bb20), whose one agent declares two
// protected resources and, as shipped, no scheme ids: only the resources
// tell them apart. authenticate {resource, token} accepts a token only for
// the resource its JWT names as audience (the fake reads the claim without
// checking the signature); gated calls need both.
func init() {
	programs["ahp-shipped-two"] = ahpShippedTwoMain
}

func ahpShippedTwoMain() {
	as := flag.String("as", "https://github.com/login/oauth", "the authorization server both protected resources name")
	flag.Parse()
	resources := []any{
		map[string]any{"resource": "https://api.github.com", "resource_name": "GitHub Copilot",
			"authorization_servers": []any{*as}, "scopes_supported": []any{"agent:use"}},
		map[string]any{"resource": "https://api.example.com", "resource_name": "Example API",
			"authorization_servers": []any{*as}, "scopes_supported": []any{"agent:use"}},
	}
	root := map[string]any{"resource": "ahp-root://", "fromSeq": 0, "state": map[string]any{"agents": []any{map[string]any{
		"provider": "copilot", "displayName": "GitHub Copilot", "description": "AI pair programmer", "models": []any{},
		"protectedResources": resources,
	}}}}
	f := &shippedFake{root: root, LineWriter: progutil.NewLineWriter(os.Stdout)}
	send, fail := f.Send, f.Fail
	find := func(resource any) map[string]any {
		for _, r := range resources {
			if r := r.(map[string]any); r["resource"] == resource {
				return r
			}
		}
		return nil
	}
	authenticated := map[any]bool{}
	f.serve(func(id any, method string, p map[string]any) {
		switch {
		case method == "authenticate" && find(p["resource"]) == nil:
			fail(id, -32602, fmt.Sprintf("unknown resource %v", p["resource"]), nil)
		case method == "authenticate" && !audienceHas(p["token"], p["resource"]):
			fail(id, -32007, fmt.Sprintf("the token is not for %v", p["resource"]), map[string]any{"resources": []any{find(p["resource"])}})
		case method == "authenticate":
			authenticated[p["resource"]] = true
			send(map[string]any{"id": id, "result": map[string]any{}})
		default:
			var missing []any
			for _, r := range resources {
				if !authenticated[r.(map[string]any)["resource"]] {
					missing = append(missing, r)
				}
			}
			if len(missing) > 0 {
				fail(id, -32007, "Authentication required", map[string]any{"resources": missing})
				return
			}
			send(map[string]any{"id": id, "result": map[string]any{"method": method}})
		}
	})
}

// audienceHas reports whether token is a JWT whose aud claim (a string or
// an array) holds resource. The signature is not checked: a fake.
func audienceHas(token, resource any) bool {
	t, _ := token.(string)
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var c struct {
		Aud json.RawMessage `json:"aud"`
	}
	if json.Unmarshal(payload, &c) != nil {
		return false
	}
	var one string
	var many []string
	if json.Unmarshal(c.Aud, &one) == nil {
		many = []string{one}
	} else if json.Unmarshal(c.Aud, &many) != nil {
		return false
	}
	return slices.Contains(many, resource.(string))
}
