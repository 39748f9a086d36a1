package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an HTTP backend that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var conns atomic.Int32
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &conns
}

func postVia(t *testing.T, tr http.RoundTripper, ctx context.Context, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return resp.StatusCode, string(b)
}

// TestBackendTransportReuse: answers with a length, chunked answers and
// empty ones leave their connection to the next request; an answer with
// Connection: close and a body closed unread do not.
func TestBackendTransportReuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     http.HandlerFunc
		read  bool
		conns int32
	}{
		{"length", func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }, true, 1},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(w, r.Body)
			w.(http.Flusher).Flush()
			w.Write([]byte(" and more"))
		}, true, 1},
		{"empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }, false, 1},
		{"close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			io.Copy(w, r.Body)
		}, true, 5},
		{"unread", func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }, false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, conns := countingServer(t, tc.h)
			tr := newBackendTransport()
			defer tr.closeIdle(0)
			for range 5 {
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader("hello"))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				if tc.read {
					b, _ := io.ReadAll(resp.Body)
					if !strings.HasPrefix(string(b), "hello") {
						t.Fatalf("answer %q", b)
					}
				}
				resp.Body.Close()
			}
			if n := conns.Load(); n != tc.conns {
				t.Errorf("%d connections for 5 requests, want %d", n, tc.conns)
			}
		})
	}
}

// TestBackendTransportIdleClosed: a connection the backend closed while
// it was idle in the pool (as Node.js does after 5 s) is noticed before
// use; the next request goes over a new one and succeeds, never written
// to the dead one.
func TestBackendTransportIdleClosed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	closed := make(chan struct{}, 10)
	var requests atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				// One answer per connection, without Connection: close,
				// then the connection ends.
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err == nil {
					requests.Add(1)
					io.Copy(io.Discard, req.Body)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
				}
				c.Close()
				closed <- struct{}{}
			}()
		}
	}()
	tr := newBackendTransport()
	defer tr.closeIdle(0)
	url := "http://" + l.Addr().String() + "/mcp"
	for i := range 3 {
		if code, body := postVia(t, tr, context.Background(), url, `{"n":1}`); code != 200 || body != "{}" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		<-closed
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("backend read %d requests, want 3", n)
	}
}

// TestBackendTransportCancel: a cancelled request ends a body the backend
// never finishes, and its connection is not reused.
func TestBackendTransportCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			<-release
			return
		}
		w.Write([]byte("ok"))
	})
	tr := newBackendTransport()
	defer tr.closeIdle(0)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/hang", strings.NewReader("x"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "partial" {
		t.Fatalf("first read: %q %v", buf[:n], err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading the body of a cancelled request: %v, want context.Canceled", err)
	}
	resp.Body.Close()
	if code, body := postVia(t, tr, context.Background(), s.URL+"/ok", "x"); code != 200 || body != "ok" {
		t.Fatalf("after cancel: %d %q", code, body)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the cancelled one is not reused)", n)
	}
	// A request cancelled before it is sent fails with the context's error.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/ok", strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v, want context.Canceled", err)
	}
}

// TestBackendTransportHeaderBound: an answer whose head exceeds
// maxResponseHeader fails the request, and a normal one after it succeeds.
func TestBackendTransportHeaderBound(t *testing.T) {
	s, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			for i := range 100 {
				w.Header().Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("x", 1000))
			}
		}
		w.Write([]byte("ok"))
	})
	tr := newBackendTransport()
	defer tr.closeIdle(0)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/big", strings.NewReader("x"))
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatalf("an answer with a %d KB head: HTTP %d, want an error", 100, resp.StatusCode)
	}
	if code, body := postVia(t, tr, context.Background(), s.URL+"/ok", "x"); code != 200 || body != "ok" {
		t.Fatalf("after the large head: %d %q", code, body)
	}
}

// TestBackendTransportRequest: the request as a backend reads it (net/http's
// server): method, target with its query, Host, Content-Length, the
// header fields given and the body; no body and no Content-Length for a
// GET or DELETE without one; and a field net/http would refuse to send
// (a CR or LF in a value, a name that is not a token) fails the request
// before anything reaches the backend.
func TestBackendTransportRequest(t *testing.T) {
	seen := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	var requests atomic.Int32
	s, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		b, _ := io.ReadAll(r.Body)
		seen <- r
		bodies <- string(b)
		w.Write([]byte("ok"))
	})
	tr := newBackendTransport()
	defer tr.closeIdle(0)
	for _, tc := range []struct {
		method, body string
	}{{http.MethodPost, `{"jsonrpc":"2.0"}`}, {http.MethodPost, ""}, {http.MethodGet, ""}, {http.MethodDelete, ""}} {
		var rd io.Reader
		if tc.body != "" {
			rd = strings.NewReader(tc.body)
		}
		req, _ := http.NewRequest(tc.method, s.URL+"/mcp/x?a=1&b=%2F", rd)
		req.Header.Set("Mcp-Session-Id", "abc")
		req.Header["Mcp-Param-Region"] = []string{" eu-west-1 "}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		r, body := <-seen, <-bodies
		wantLength := int64(len(tc.body))
		if tc.method != http.MethodPost && tc.body == "" {
			wantLength = 0
		}
		if r.Method != tc.method || r.RequestURI != "/mcp/x?a=1&b=%2F" || r.Host != strings.TrimPrefix(s.URL, "http://") ||
			r.ContentLength != wantLength || body != tc.body || r.Header.Get("Mcp-Session-Id") != "abc" ||
			r.Header.Get("Mcp-Param-Region") != "eu-west-1" || r.Header.Get("User-Agent") != "Go-http-client/1.1" {
			t.Errorf("%s: the backend read %s %s Host %s, length %d, body %q, header %v", tc.method, r.Method, r.RequestURI, r.Host, r.ContentLength, body, r.Header)
		}
		if _, ok := r.Header["Content-Length"]; ok != (tc.method == http.MethodPost) {
			t.Errorf("%s: Content-Length sent: %v", tc.method, ok)
		}
	}
	n := requests.Load()
	for _, h := range []http.Header{{"X-Token": {"a\r\nX-Injected: 1"}}, {"X-Token": {"a\nb"}}, {"Bad Name": {"x"}}, {"X-Nul": {"a\x00"}}} {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader("x"))
		req.Header = h
		if resp, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "invalid header field") {
			if resp != nil {
				resp.Body.Close()
			}
			t.Errorf("header %q: %v, want an invalid header field error", h, err)
		}
	}
	if got := requests.Load(); got != n {
		t.Errorf("the backend got %d requests with invalid header fields", got-n)
	}
}
