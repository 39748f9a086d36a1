package wire

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPSessionParamHeaders: a 2026-07-28 tools/call refused with
// -32020 is sent again once with the Mcp-Param-* headers the tool's input
// schema names (x-mcp-header), values as the body has them.
func TestHTTPSessionParamHeaders(t *testing.T) {
	f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
		var body []byte
		switch m.Method {
		case MethodServerDiscover:
			body = result(t, m.ID, map[string]any{"supportedVersions": []string{"2026-07-28"}})
		case "tools/list":
			body = result(t, m.ID, map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": json.RawMessage(
				`{"type":"object","properties":{"text":{"type":"string","x-mcp-header":"Text"},"n":{"type":"number","x-mcp-header":"N"},"other":{"type":"string"}}}`)}}})
		case "tools/call":
			if r.Header.Get("Mcp-Param-Text") == "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				body, _ = Encode(NewErrorResponse(m.ID, Errorf(-32020, "header mismatch")))
				w.Write(body)
				return
			}
			body = result(t, m.ID, map[string]any{"content": []any{}})
		}
		writeJSON(w, body)
	})
	s := f.session(t, "tok")
	if _, err := s.Initialize(context.Background(), "agentauth", "1"); err != nil {
		t.Fatal(err)
	}
	err := s.Call(context.Background(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ünï", "n": 42, "other": "x"}}, nil)
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	got := f.requests()
	last := got[len(got)-1]
	wantText := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("ünï")) + "?="
	if len(got) != 4 || last.header.Get("Mcp-Param-Text") != wantText || last.header.Get("Mcp-Param-N") != "42" || last.header.Get("Mcp-Param-Other") != "" {
		t.Errorf("%d requests; last headers %v", len(got), last.header)
	}
}

// TestHTTPSessionVersion: a session held to one revision speaks it only:
// 2025-11-25 sends initialize offering it (no server/discover) and refuses
// another answer; 2026-07-28 does not fall back.
func TestHTTPSessionVersion(t *testing.T) {
	f := newFakeMCP(t, mcpServer(t, false, "sess-1"))
	s := f.session(t, "tok")
	s.Version = MCPProtocolVersion
	if _, err := s.Initialize(context.Background(), "agentauth", "1"); err != nil {
		t.Fatal(err)
	}
	got := f.requests()
	if got[0].msg.Method != MethodInitialize || !strings.Contains(string(got[0].msg.Params), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("first request = %s %s, want initialize offering 2025-11-25", got[0].msg.Method, got[0].msg.Params)
	}

	s = f.session(t, "tok")
	s.Version = "2025-06-18"
	if _, err := s.Initialize(context.Background(), "agentauth", "1"); err == nil || !strings.Contains(err.Error(), `answers MCP "2025-11-25", not 2025-06-18`) {
		t.Errorf("err = %v, want the version mismatch", err)
	}

	n := len(f.requests())
	s = f.session(t, "tok")
	s.Version = MCPStatelessVersion
	if _, err := s.Initialize(context.Background(), "agentauth", "1"); err == nil {
		t.Error("a 2025-11-25 server accepted with Version 2026-07-28")
	}
	if got := f.requests()[n:]; len(got) != 1 || got[0].msg.Method != MethodServerDiscover {
		t.Errorf("%d requests, want server/discover alone", len(got))
	}
}
