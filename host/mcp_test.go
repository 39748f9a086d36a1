package host

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/wire"
)

// statelessCall posts one MCP 2026-07-28 request: the standard headers and
// _meta as a conformant client sends them, then the case's changes
// (a header set to "" is removed; meta replaces _meta when not nil).
func statelessCall(t *testing.T, h *Host, method, params string, meta *string, headers map[string]string) httpAnswer {
	t.Helper()
	m := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if meta != nil {
		m = *meta
	}
	p := map[string]json.RawMessage{}
	if params != "" {
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			t.Fatal(err)
		}
	}
	if m != "" {
		p["_meta"] = json.RawMessage(m)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": p})
	hdr := bearer("t-alice")
	hdr["Mcp-Protocol-Version"] = []string{"2026-07-28"}
	hdr["Mcp-Method"] = []string{method}
	if n, ok := mcpserver.NameOf(&wire.Message{Method: method, Params: body[strings.Index(string(body), `"params":`)+9 : len(body)-1]}); ok {
		hdr["Mcp-Name"] = []string{n}
	}
	for k, v := range headers {
		if v == "" {
			delete(hdr, k)
		} else {
			hdr[k] = []string{v}
		}
	}
	return post(t, h.HTTPHandler(), "/mcp", string(body), hdr)
}

func ptr(s string) *string { return &s }

func TestMCPStatelessValidation(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{Version: "1.2.3", ConformanceFixtures: true})
	for _, tc := range []struct {
		name    string
		method  string
		params  string
		meta    *string
		headers map[string]string
		status  int
		code    int
		message string
	}{
		{"unsupported version", "server/discover", "", nil, map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, 400, mcpserver.CodeUnsupportedProtocolVersion,
			"unsupported MCP-Protocol-Version '2099-01-01': this server speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"},
		{"a version with a control character", "server/discover", "", nil, map[string]string{"Mcp-Protocol-Version": "x\x01y"}, 400, mcpserver.CodeUnsupportedProtocolVersion,
			"unsupported MCP-Protocol-Version 'x?y'"},
		{"no version header, _meta names one", "server/discover", "", nil, map[string]string{"Mcp-Protocol-Version": ""}, 400, mcpserver.CodeHeaderMismatch,
			"header mismatch: the MCP-Protocol-Version header is missing but _meta names '2026-07-28'"},
		{"header and _meta differ", "server/discover", "", ptr(`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`), nil, 400, mcpserver.CodeHeaderMismatch,
			"header mismatch: MCP-Protocol-Version is '2026-07-28' but _meta names '2025-11-25'"},
		{"no _meta", "server/discover", "", ptr(""), nil, 400, wire.CodeInvalidParams, "invalid params: an MCP 2026-07-28 request carries params._meta"},
		{"no capabilities", "server/discover", "", ptr(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), nil, 400, wire.CodeInvalidParams, "invalid params"},
		{"no Mcp-Method", "tools/list", "", nil, map[string]string{"Mcp-Method": ""}, 400, mcpserver.CodeHeaderMismatch, "header mismatch: the Mcp-Method header is missing; send Mcp-Method: 'tools/list'"},
		{"Mcp-Method differs", "tools/list", "", nil, map[string]string{"Mcp-Method": "prompts/list"}, 400, mcpserver.CodeHeaderMismatch, "header mismatch: Mcp-Method is 'prompts/list' but the body says 'tools/list'"},
		{"Mcp-Method values are case-sensitive", "tools/list", "", nil, map[string]string{"Mcp-Method": "TOOLS/LIST"}, 400, mcpserver.CodeHeaderMismatch, "header mismatch"},
		{"no Mcp-Name", "tools/call", `{"name":"whoami","arguments":{}}`, nil, map[string]string{"Mcp-Name": ""}, 400, mcpserver.CodeHeaderMismatch, "the Mcp-Name header is missing"},
		{"Mcp-Name differs", "tools/call", `{"name":"whoami","arguments":{}}`, nil, map[string]string{"Mcp-Name": "echo"}, 400, mcpserver.CodeHeaderMismatch, "Mcp-Name is 'echo' but the body says 'whoami'"},
		{"Mcp-Name with spaces around", "tools/call", `{"name":"whoami","arguments":{}}`, nil, map[string]string{"Mcp-Name": "  whoami "}, 200, 0, ""},
		{"Mcp-Name in Base64", "tools/call", `{"name":"whoami","arguments":{}}`, nil, map[string]string{"Mcp-Name": "=?base64?d2hvYW1p?="}, 200, 0, ""},
		{"no Mcp-Param header for an argument that names one", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, nil, nil, 400, mcpserver.CodeHeaderMismatch, "the Mcp-Param-Text header is missing; send Mcp-Param-Text: 'hi'"},
		{"Mcp-Param differs", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, nil, map[string]string{"Mcp-Param-Text": "ho"}, 400, mcpserver.CodeHeaderMismatch, "Mcp-Param-Text is 'ho' but the body says 'hi'"},
		{"Mcp-Param literal", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, nil, map[string]string{"Mcp-Param-Text": "hi"}, 200, 0, ""},
		{"Mcp-Param in Base64 without padding", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, nil, map[string]string{"Mcp-Param-Text": "=?base64?aGk?="}, 400, mcpserver.CodeHeaderMismatch, "not valid Base64"},
		{"Mcp-Param not Base64", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, nil, map[string]string{"Mcp-Param-Text": "=?base64?a!k=?="}, 400, mcpserver.CodeHeaderMismatch, "not valid Base64"},
		{"initialize was removed", "initialize", `{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"x","version":"0"}}`, nil, nil, 404, wire.CodeMethodNotFound, "method not found: MCP 2026-07-28 has no initialize"},
		{"ping was removed", "ping", "", nil, nil, 404, wire.CodeMethodNotFound, ""},
		{"the agent host's methods are not MCP", "whoami", "", nil, nil, 404, wire.CodeMethodNotFound, ""},
		{"sampling not declared", "tools/call", `{"name":"test_missing_capability","arguments":{}}`, nil, nil, 400, mcpserver.CodeMissingClientCapability, "declare it in _meta"},
		{"unknown resource", "resources/read", `{"uri":"test://nothing"}`, nil, nil, 400, wire.CodeInvalidParams, "resource not found: 'test://nothing'"},
	} {
		a := statelessCall(t, h, tc.method, tc.params, tc.meta, tc.headers)
		if a.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, a.status, tc.status, a.body)
			continue
		}
		m := a.rpc(t)
		if m.ID.String() != "7" {
			t.Errorf("%s: id %s, want 7", tc.name, m.ID)
		}
		switch {
		case tc.code == 0 && m.Error != nil:
			t.Errorf("%s: %+v", tc.name, m.Error)
		case tc.code != 0 && (m.Error == nil || m.Error.Code != tc.code || !strings.Contains(m.Error.Message, tc.message)):
			t.Errorf("%s: body %s, want error %d with %q", tc.name, a.body, tc.code, tc.message)
		}
	}
}

func TestMCPStatelessResults(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{Version: "1.2.3", ConformanceFixtures: true})
	result := func(method, params string, meta *string) map[string]json.RawMessage {
		t.Helper()
		a := statelessCall(t, h, method, params, meta, nil)
		m := a.rpc(t)
		var r map[string]json.RawMessage
		if a.status != 200 || m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
			t.Fatalf("%s: %d %s", method, a.status, a.body)
		}
		if string(r["_meta"]) != `{"io.modelcontextprotocol/serverInfo":{"name":"agentauth","title":"agentauth agent host","version":"1.2.3"}}` {
			t.Errorf("%s: _meta %s", method, r["_meta"])
		}
		return r
	}
	d := result("server/discover", "", nil)
	if string(d["supportedVersions"]) != `["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]` || string(d["resultType"]) != `"complete"` ||
		string(d["cacheScope"]) != `"public"` || string(d["ttlMs"]) != "0" || !strings.Contains(string(d["capabilities"]), `"tools":{}`) {
		t.Errorf("server/discover: %v", d)
	}
	if l := result("resources/templates/list", "", nil); string(l["resourceTemplates"]) != "[]" || string(l["cacheScope"]) != `"public"` {
		t.Errorf("resources/templates/list: %v", l)
	}
	if l := result("tools/list", "", nil); !strings.Contains(string(l["tools"]), `"name":"test_missing_capability"`) || string(l["cacheScope"]) != `"public"` {
		t.Errorf("tools/list: %s", l["tools"])
	}
	a := statelessCall(t, h, "tools/call", `{"name":"echo","arguments":{"text":"hi there"}}`, nil, map[string]string{"Mcp-Param-Text": "=?base64?aGkgdGhlcmU=?="})
	if a.status != 200 || !strings.Contains(a.body, `"content":[{"text":"hi there","type":"text"}],"isError":false`) {
		t.Errorf("echo: %d %s", a.status, a.body)
	}
	if r := result("tools/call", `{"name":"test_error_handling"}`, nil); string(r["isError"]) != "true" {
		t.Errorf("test_error_handling: %v", r)
	}

	// An input request round trip (MCP 2026-07-28 "Multi Round-Trip").
	sampling := ptr(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`)
	r := result("tools/call", `{"name":"test_missing_capability","arguments":{}}`, sampling)
	if string(r["resultType"]) != `"input_required"` || !strings.Contains(string(r["inputRequests"]), `"hello":{"method":"sampling/createMessage"`) {
		t.Errorf("first round: %v", r)
	}
	r = result("tools/call", `{"name":"test_missing_capability","arguments":{},"inputResponses":{"hello":{"role":"assistant","content":{"type":"text","text":"Hi!"},"model":"m"}}}`, sampling)
	if string(r["resultType"]) != `"complete"` || string(r["content"]) != `[{"text":"The client's model says: Hi!","type":"text"}]` {
		t.Errorf("second round: %v", r)
	}
	elicit := ptr(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`)
	r = result("tools/call", `{"name":"test_streaming_elicitation","arguments":{},"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}}}`, elicit)
	if string(r["content"]) != `[{"text":"Hello, Ada.","type":"text"}]` {
		t.Errorf("elicitation: %v", r)
	}
}

// A request that sets _meta logLevel gets the tool's log messages as
// events before the result; without it, no log message at all.
func TestMCPStatelessLogLevel(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{ConformanceFixtures: true})
	withLevel := func(level string) *string {
		return ptr(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"` + level + `"}`)
	}
	a := statelessCall(t, h, "tools/call", `{"name":"test_logging_tool"}`, withLevel("info"), nil)
	if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" || strings.Count(a.body, `"method":"notifications/message"`) != 3 ||
		!strings.HasSuffix(a.body, `"resultType":"complete"}}`+"\n\n") {
		t.Errorf("logLevel info: %d %v\n%s", a.status, a.header, a.body)
	}
	for _, meta := range []*string{nil, withLevel("warning")} {
		a = statelessCall(t, h, "tools/call", `{"name":"test_logging_tool"}`, meta, nil)
		if a.status != 200 || a.header.Get("Content-Type") != "application/json" || strings.Contains(a.body, "notifications/message") {
			t.Errorf("no info logs asked for: %d %s", a.status, a.body)
		}
	}
	if a = statelessCall(t, h, "tools/call", `{"name":"test_logging_tool"}`, withLevel("loud"), nil); a.status != 400 || !strings.Contains(a.body, `"code":-32602`) {
		t.Errorf("unknown level: %d %s", a.status, a.body)
	}
}

// FuzzMCPRequest sends arbitrary bodies and MCP headers to the HTTP face
// with a valid token: every answer is 202 without a body or one JSON-RPC
// response whose id is the request's (null when it has none), and an
// error's message is printable ASCII or UTF-8 without control characters.
func FuzzMCPRequest(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+meta+`}}`, "2026-07-28", "tools/call", "echo", "=?base64?aGk=?=")
	f.Add(`{"jsonrpc":"2.0","id":"x","method":"server/discover","params":{`+meta+`}}`, "2026-07-28", "server/discover", "", "")
	f.Add(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_missing_capability","inputResponses":{"hello":{}},`+meta+`}}`, "2026-07-28", "tools/call", "test_missing_capability", "")
	f.Add(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://static-text"}}`, "2025-11-25", "", "", "")
	f.Add(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "", "", "")
	c, err := ParseConfig([]byte(baseConfig))
	if err != nil {
		f.Fatal(err)
	}
	c.Resolve("http://127.0.0.1:7777")
	h, err := New(Options{Config: c, ConformanceFixtures: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(h.Close)
	face := h.HTTPHandler()
	f.Fuzz(func(t *testing.T, body, version, method, name, param string) {
		hdr := bearer("t-alice")
		for k, v := range map[string]string{"Mcp-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name, "Mcp-Param-Text": param} {
			if v != "" {
				hdr[k] = []string{v}
			}
		}
		a := post(t, face, "/mcp", body, hdr)
		if a.status == http.StatusAccepted {
			if a.body != "" {
				t.Fatalf("202 with a body: %q", a.body)
			}
			return
		}
		var resp struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if a.header.Get("Content-Type") == "text/event-stream" {
			return // log messages, then the response: TestMCPStatelessLogLevel
		}
		if err := json.Unmarshal([]byte(a.body), &resp); err != nil {
			t.Fatalf("status %d, body %q: %v", a.status, a.body, err)
		}
		if resp.Error != nil && strings.ContainsFunc(resp.Error.Message, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("control character in %q", resp.Error.Message)
		}
		if m, derr := wire.Decode([]byte(body)); derr == nil && m.IsRequest() && string(resp.ID) != m.ID.String() {
			t.Fatalf("id %s, want %s", resp.ID, m.ID)
		}
	})
}
