package wire

import (
	"encoding/json"
	"testing"
)

// The discover result is the MCP 2026-07-28 shape the TypeScript SDK v2
// and the MCP Go SDK v1.8.0 answer (serverInfo in _meta, resultType,
// ttlMs, cacheScope).
const discoverResult = `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"2"}},"ttlMs":0,"cacheScope":"public",
"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"tasks":{"list":{}},"experimental":{"x":{}}},"instructions":"Ask away."}`

func TestBridgedInitializeResult(t *testing.T) {
	for _, tc := range []struct{ requested, want string }{
		{"2025-06-18", `{"capabilities":{"logging":{},"resources":{},"tools":{}},"instructions":"Ask away.","protocolVersion":"2025-06-18","serverInfo":{"name":"modern","version":"2"}}`},
		{"2025-03-26", `{"capabilities":{"logging":{},"resources":{},"tools":{}},"instructions":"Ask away.","protocolVersion":"2025-03-26","serverInfo":{"name":"modern","version":"2"}}`},
		{"2024-11-05", `{"capabilities":{"logging":{},"resources":{},"tools":{}},"instructions":"Ask away.","protocolVersion":"2025-11-25","serverInfo":{"name":"modern","version":"2"}}`},
		{"2026-07-28", `{"capabilities":{"logging":{},"resources":{},"tools":{}},"instructions":"Ask away.","protocolVersion":"2025-11-25","serverInfo":{"name":"modern","version":"2"}}`},
	} {
		got, err := BridgedInitializeResult(json.RawMessage(discoverResult), tc.requested)
		if err != nil || string(got) != tc.want {
			t.Errorf("requested %s: %s %v\nwant %s", tc.requested, got, err, tc.want)
		}
	}
	if !DiscoverSpeaksStateless(json.RawMessage(discoverResult)) || DiscoverSpeaksStateless(json.RawMessage(`{"supportedVersions":["2025-11-25"]}`)) {
		t.Error("DiscoverSpeaksStateless: wrong on a 2026-07-28 or a 2025-11-25 server")
	}
}

func TestRequestEnvelope(t *testing.T) {
	m := &Message{JSONRPC: Version, ID: NumberID(4), Method: "tools/call", Params: json.RawMessage(`{"name":"ask","_meta":{"progressToken":7}}`)}
	env, err := RequestEnvelope(m, json.RawMessage(`{"name":"old","version":"1"}`), nil, "debug")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"old","version":"1"},"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7},"name":"ask"}`
	if string(env.Params) != want {
		t.Errorf("enveloped params\n%s\nwant\n%s", env.Params, want)
	}
	retry, err := WithInputResponses(env, map[string]json.RawMessage{"who": json.RawMessage(`{"action":"accept"}`)}, "st-1")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   string                     `json:"requestState"`
		Meta           map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(retry.Params, &p) != nil || string(p.InputResponses["who"]) != `{"action":"accept"}` || p.RequestState != "st-1" || p.Meta == nil || retry.ID.String() != "4" {
		t.Errorf("retry params %s id %s", retry.Params, retry.ID)
	}
	if _, err := RequestEnvelope(&Message{Method: "tools/call", Params: json.RawMessage(`[1]`)}, nil, nil, ""); err == nil {
		t.Error("params that are not an object were enveloped")
	}
	if got := string(WithoutResultType(json.RawMessage(`{"resultType":"complete","content":[]}`))); got != `{"content":[]}` {
		t.Errorf("WithoutResultType: %s", got)
	}
}
