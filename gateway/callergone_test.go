package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A caller that goes away while the backend's event stream is open ends
// the call as "caller went away", not as a backend failure: under load a
// client (or a proxy in front of serve) dropping its connection was
// logged as "backend call failed … broke off its event stream: context
// canceled", blaming the backend for the caller's cancel.
func TestCallerGoneMidStream(t *testing.T) {
	backendDone := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(backendDone)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"started\"}}\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // the gateway ends the backend's request
	}))
	defer backend.Close()
	logs := &syncBuffer{}
	g, err := New(Options{Backends: []Backend{{Name: "rally", URL: backend.URL}}, Log: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	served := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		g.Mounts()[0].Serve(w, r, callers["tok-writer-0123456789"])
	}))
	defer front.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, front.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := bufio.NewReader(resp.Body)
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("no notification before the stream ended: %v", err)
		}
		if strings.Contains(line, "notifications/message") {
			break
		}
	}
	cancel() // the caller goes away with the stream open
	resp.Body.Close()
	<-served
	<-backendDone
	out := logs.String()
	if !strings.Contains(out, `"reason":"caller went away"`) || strings.Contains(out, "backend call failed") {
		t.Errorf("log:\n%s\nwant the call ended as \"caller went away\", no backend failure", out)
	}
}

// A backend without a stream at GET answers 405 (MCP 2025-11-25
// "Transports"), and so does serve: clients take 405 as "no stream here"
// and anything else as a failure (the TypeScript SDK reported the 502
// serve used to answer as an error on every stateless session).
func TestBackendWithoutGETStream(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}))
	defer backend.Close()
	srv, _ := front(t, Backend{Name: "rally", URL: backend.URL}, Policy{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer tok-writer-0123456789")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST, DELETE" {
		t.Errorf("GET: %d, Allow %q; want 405 with Allow: POST, DELETE", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestHTTPBackendTimeoutAndCallerGone: a tools/call an HTTP backend does
// not answer ends at the backend's timeout with the error naming it, and
// one whose caller goes away ends then (at once, or once the call has
// waited callerWatchAfter: here the caller leaves before); either way the backend's
// request ends (serve closes its connection) and the caller's slot is
// given back.
func TestHTTPBackendTimeoutAndCallerGone(t *testing.T) {
	started, ended := make(chan struct{}, 4), make(chan struct{}, 4)
	list := constBackend()
	defer list.Close()
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"tools/call"`) {
			// tools/list, answered as the constant backend does.
			resp, err := http.Post(list.URL, "application/json", strings.NewReader(string(body)))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			io.Copy(w, resp.Body)
			return
		}
		started <- struct{}{}
		<-r.Context().Done() // never answers; serve gives up
		ended <- struct{}{}
	}))
	defer be.Close()
	mount := func(timeout time.Duration) (*Gateway, *Mount) {
		g, err := New(Options{Backends: []Backend{{Name: "b", URL: be.URL, Timeout: Duration(timeout)}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Close)
		return g, g.Mounts()[0]
	}
	c := callers["tok-writer-0123456789"]
	post := func(m *Mount, ctx context.Context) *httptest.ResponseRecorder {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		w := httptest.NewRecorder()
		m.Serve(w, r, c)
		return w
	}
	_, m := mount(300 * time.Millisecond)
	w := post(m, context.Background())
	if !strings.Contains(w.Body.String(), "backend b did not answer within 300ms") {
		t.Errorf("a backend that does not answer: %d %s", w.Code, w.Body)
	}
	<-started
	<-ended

	// The caller goes away once the backend has the call: the call ends
	// then (its timeout, an hour, would outlast the test).
	g, m := mount(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- post(m, ctx) }()
	<-started
	cancel()
	w = <-done
	if strings.Contains(w.Body.String(), "did not answer within") {
		t.Errorf("a caller gone ended as a timeout: %s", w.Body)
	}
	<-ended
	g.limits.mu.Lock()
	held := g.limits.calls
	g.limits.mu.Unlock()
	if held != 0 {
		t.Errorf("%d calls still held after both ended", held)
	}
}
