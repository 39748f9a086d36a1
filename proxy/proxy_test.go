package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// fakeMCP is a Streamable HTTP server without authorization that records
// what reaches it: a session at initialize, no GET stream (405), a "slow"
// tool whose stream stays open until the client goes, and each
// notification and DELETE.
type fakeMCP struct {
	mu       sync.Mutex
	seen     []string
	slowSeen chan struct{}
}

func (f *fakeMCP) record(s string) {
	f.mu.Lock()
	f.seen = append(f.seen, s)
	f.mu.Unlock()
}

func (f *fakeMCP) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		f.record("DELETE " + r.Header.Get("Mcp-Session-Id"))
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&m)
	switch {
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}}`, m.ID)
	case m.ID == nil:
		f.record(m.Method + " " + string(m.Params) + " " + r.Header.Get("Mcp-Session-Id"))
		w.WriteHeader(http.StatusAccepted)
	default: // the slow tool: progress, then nothing until the client goes
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":0}}\n\n")
		w.(http.Flusher).Flush()
		close(f.slowSeen)
		<-r.Context().Done()
	}
}

// runProxy starts Proxy on pipes; lines reads what it writes.
func runProxy(t *testing.T, target string) (in io.WriteCloser, lines <-chan string, done <-chan error) {
	t.Helper()
	cl := newTestClient(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), cl, Request{Target: target}, inR, outW)
		outW.Close()
	}()
	out := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			out <- sc.Text()
		}
		close(out)
	}()
	return inW, out, errc
}

func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line from the proxy")
		return ""
	}
}

// EOF on stdin ends the proxy: the request under way is cancelled at the
// server (notifications/cancelled) and the session ended (DELETE).
func TestProxyEOFCancelsInFlight(t *testing.T) {
	f := &fakeMCP{slowSeen: make(chan struct{})}
	srv := httptest.NewServer(f)
	defer srv.Close()
	in, lines, done := runProxy(t, srv.URL+"/mcp")
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := next(t, lines); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize answered %s", l)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":1}}}`)
	if l := next(t, lines); !strings.Contains(l, `"method":"notifications/progress"`) {
		t.Fatalf("got %s, want the progress", l)
	}
	<-f.slowSeen
	in.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Proxy: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not end at EOF")
	}
	want := []string{
		`notifications/initialized  s1`,
		`notifications/cancelled {"reason":"the client went away","requestId":"call-7"} s1`,
		`DELETE s1`,
	}
	if got := f.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A server that cannot be reached: each request gets a JSON-RPC error,
// a bad line an invalid-request error, and the proxy goes on.
func TestProxyDeadServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	target := srv.URL + "/mcp"
	srv.Close()
	in, lines, done := runProxy(t, target)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if l := next(t, lines); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"agentauth proxy: initialize failed: cannot reach the MCP server`) {
		t.Errorf("got %s", l)
	}
	fmt.Fprintln(in, `not json`)
	if l := next(t, lines); !strings.Contains(l, `"error":{"code":-32700`) {
		t.Errorf("got %s, want a parse error", l)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if l := next(t, lines); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,`) {
		t.Errorf("got %s", l)
	}
	in.Close()
	if err := <-done; err != nil {
		t.Errorf("Proxy: %v", err)
	}
}

// The client's initialize declares elicitation.url when it does not: an
// empty elicitation (form mode) stays form, other capabilities stay.
func TestDeclareURLElicitation(t *testing.T) {
	for _, tc := range []struct{ caps, want string }{
		{`{}`, `{"elicitation":{"url":{}}}`},
		{`{"roots":{}}`, `{"elicitation":{"url":{}},"roots":{}}`},
		{`{"elicitation":{}}`, `{"elicitation":{"form":{},"url":{}}}`},
		{`{"elicitation":{"form":{}}}`, `{"elicitation":{"form":{},"url":{}}}`},
		{`{"elicitation":{"url":{}}}`, `{"elicitation":{"url":{}}}`},
	} {
		p := &proxy{}
		m, rpcErr := wire.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":` + tc.caps + `}}`))
		if rpcErr != nil {
			t.Fatal(rpcErr)
		}
		var params struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(p.declareURLElicitation(m).Params, &params); err != nil {
			t.Fatal(err)
		}
		if string(params.Capabilities) != tc.want {
			t.Errorf("%s: declared %s, want %s", tc.caps, params.Capabilities, tc.want)
		}
		if declared := p.clientURLElicitation(); declared != strings.Contains(tc.caps, "url") {
			t.Errorf("%s: the client's own url declaration noted %v", tc.caps, declared)
		}
	}
}

// http-first on a server that has neither transport: both refusals are
// named in the request's error.
func TestProxyNoTransport(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	in, lines, done := runProxy(t, srv.URL+"/mcp")
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	l := next(t, lines)
	if !strings.Contains(l, `initialize failed: over Streamable HTTP: the server answered HTTP 404 Not Found`) ||
		!strings.Contains(l, `; over HTTP+SSE: the server answered HTTP 404 Not Found`) {
		t.Errorf("got %s", l)
	}
	in.Close()
	if err := <-done; err != nil {
		t.Errorf("Proxy: %v", err)
	}
}
