package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ahp-shipped-two, for ahp_client_two_resources.txtar: a fake agent host
// over stdio shaped strictly like the shipped Agent Host Protocol (the
// same sources as ahp-shipped-host in ahp_helpers_test.go:
// microsoft/agent-host-protocol types/common/commands.ts @
// 2f81aadbe141cfed8d69ffdd6c4cb22037d5b7b6, types/channels-root/state.ts
// @ f995c7b0922506412f04ca1683921cddea01bb9e, types/common/errors.ts @
// 5299191f6344eeed3341803593b8b50d9183bb20), whose one agent declares two
// protected resources and, as shipped, no scheme ids: only the resources
// tell them apart. authenticate {resource, token} accepts a token only for
// the resource its JWT names as audience (the fake reads the claim without
// checking the signature); gated calls need both.
func init() {
	scriptPrograms["ahp-shipped-two"] = ahpShippedTwoMain
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
	out := json.NewEncoder(os.Stdout)
	send := func(m map[string]any) { m["jsonrpc"] = "2.0"; out.Encode(m) }
	fail := func(id any, code int, msg string, data any) {
		e := map[string]any{"code": code, "message": msg}
		if data != nil {
			e["data"] = data
		}
		send(map[string]any{"id": id, "error": e})
	}
	find := func(resource any) map[string]any {
		for _, r := range resources {
			if r := r.(map[string]any); r["resource"] == resource {
				return r
			}
		}
		return nil
	}
	authenticated := map[any]bool{}
	initialized := false
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var p map[string]any
		json.Unmarshal(m.Params, &p)
		switch {
		case m.Method == "ping":
			send(map[string]any{"id": m.ID, "result": nil})
		case m.Method == "initialize" && initialized:
			fail(m.ID, -32601, "already initialized", nil)
		case m.Method == "initialize":
			versions, _ := p["protocolVersions"].([]any)
			if !slices.Contains(versions, any("0.9.0")) {
				fail(m.ID, -32005, "unsupported protocol version", map[string]any{"supportedVersions": []any{"^0.9.0"}})
				continue
			}
			initialized = true
			snaps := []any{}
			if subs, _ := p["initialSubscriptions"].([]any); slices.Contains(subs, any("ahp-root://")) {
				snaps = append(snaps, root)
			}
			send(map[string]any{"id": m.ID, "result": map[string]any{"protocolVersion": "0.9.0", "serverSeq": 0, "snapshots": snaps}})
		case !initialized:
			fail(m.ID, -32601, "not initialized", nil)
		case m.Method == "subscribe" && p["channel"] == "ahp-root://":
			send(map[string]any{"id": m.ID, "result": map[string]any{"snapshot": root}})
		case m.Method == "authenticate" && find(p["resource"]) == nil:
			fail(m.ID, -32602, fmt.Sprintf("unknown resource %v", p["resource"]), nil)
		case m.Method == "authenticate" && !audienceHas(p["token"], p["resource"]):
			fail(m.ID, -32007, fmt.Sprintf("the token is not for %v", p["resource"]), map[string]any{"resources": []any{find(p["resource"])}})
		case m.Method == "authenticate":
			authenticated[p["resource"]] = true
			send(map[string]any{"id": m.ID, "result": map[string]any{}})
		default:
			var missing []any
			for _, r := range resources {
				if !authenticated[r.(map[string]any)["resource"]] {
					missing = append(missing, r)
				}
			}
			if len(missing) > 0 {
				fail(m.ID, -32007, "Authentication required", map[string]any{"resources": missing})
				continue
			}
			send(map[string]any{"id": m.ID, "result": map[string]any{"method": m.Method}})
		}
	}
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
