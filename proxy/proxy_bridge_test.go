package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// modernMCP is a server of MCP 2026-07-28 only, as the TypeScript SDK v2
// answers with legacy requests refused (testdata/proxy/modern-server.mjs
// runs that SDK itself): initialize gets 400 UNSUPPORTED_PROTOCOL_VERSION;
// server/discover lists 2026-07-28; the tool "ask" wants a name through
// an input request first. It keeps what each request carried.
type modernMCP struct {
	mu   sync.Mutex
	seen []string
}

func (f *modernMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta           map[string]json.RawMessage `json:"_meta"`
			InputResponses map[string]struct {
				Action  string            `json:"action"`
				Content map[string]string `json:"content"`
			} `json:"inputResponses"`
			RequestState string `json:"requestState"`
		} `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&m)
	f.mu.Lock()
	f.seen = append(f.seen, fmt.Sprintf("%s %s version=%s meta.version=%s caps=%s level=%s", r.Method, m.Method,
		r.Header.Get("Mcp-Protocol-Version"), m.Params.Meta["io.modelcontextprotocol/protocolVersion"],
		m.Params.Meta["io.modelcontextprotocol/clientCapabilities"], m.Params.Meta["io.modelcontextprotocol/logLevel"]))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case m.Method == "initialize":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}`, m.ID)
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "server/discover":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{}},"instructions":"Ask away.","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","title":"Modern server","version":"2"}},"resultType":"complete"}}`, m.ID)
	case m.Method == "tools/call" && m.Params.RequestState == "":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}}`, m.ID)
	case m.Method == "tools/call":
		who := m.Params.InputResponses["who"]
		if m.Params.RequestState != "st-1" || who.Action != "accept" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad retry"}}`, m.ID)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, %s!"}]}}`, m.ID, who.Content["name"])
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no %s"}}`, m.ID, m.Method)
	}
}

// A client of MCP 2025-06-18 reaches a server of 2026-07-28 only through
// the bridge: its initialize is answered from server/discover (its own
// revision, capabilities less listChanged and subscribe), ping and
// logging/setLevel by the proxy, and a tool's input request comes to it
// as elicitation/create, whose answer goes back to the server with the
// server's requestState; the final result has no resultType. Every request
// the server gets carries 2026-07-28 and the client's capabilities and
// log level.
func TestProxyBridgesToModernServer(t *testing.T) {
	f := &modernMCP{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	in, lines, done := runProxy(t, srv.URL+"/mcp")
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"old","version":"1"}}}`)
	want := `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"logging":{},"resources":{},"tools":{}},"instructions":"Ask away.","protocolVersion":"2025-06-18","serverInfo":{"name":"modern","title":"Modern server","version":"2"}}}`
	if l := next(t, lines); l != want {
		t.Fatalf("initialize answered\n%s\nwant\n%s", l, want)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if l := next(t, lines); l != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Fatalf("ping answered %s", l)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`)
	if l := next(t, lines); l != `{"jsonrpc":"2.0","id":3,"result":{}}` {
		t.Fatalf("logging/setLevel answered %s", l)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	ask := next(t, lines)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(ask), &req) != nil || req.Method != "elicitation/create" || req.Params.Message != "Your name?" {
		t.Fatalf("the client got %s, want the server's elicitation/create", ask)
	}
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada"}}}`+"\n", req.ID)
	if l := next(t, lines); l != `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Hello, Ada!"}]}}` {
		t.Fatalf("tools/call answered %s", l)
	}
	in.Close()
	if err := <-done; err != nil {
		t.Fatalf("Proxy: %v", err)
	}
	caps := `{"elicitation":{"form":{},"url":{}}}` // the proxy adds url: it opens URL elicitations itself
	wantSeen := []string{
		`POST initialize version= meta.version= caps= level=`,
		`POST server/discover version=2026-07-28 meta.version="2026-07-28" caps=` + caps + ` level=`,
		`POST tools/call version=2026-07-28 meta.version="2026-07-28" caps=` + caps + ` level="debug"`,
		`POST tools/call version=2026-07-28 meta.version="2026-07-28" caps=` + caps + ` level="debug"`,
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := strings.Join(f.seen, "\n"); got != strings.Join(wantSeen, "\n") {
		t.Errorf("the server saw\n%s\nwant\n%s", got, strings.Join(wantSeen, "\n"))
	}
}
