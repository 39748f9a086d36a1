package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An answer that starts before the proxy's Transport has finished sending
// the request body upstream reaches the client whole. Here the client
// sends its body only once it has the first event, so the answer always
// starts first. Without full duplex, net/http's server closes the body
// when the answer starts, the Transport reads the closed body and drops
// the upstream connection with the answer on it ("ReverseProxy read error
// during body copy: use of closed network connection", as in the suites
// when serve answered while the Transport was finishing the body;
// golang/go#40747), and the client gets nothing.
func TestAnswerBeforeBodyIsSent(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer tok" {
			http.Error(w, "authorization "+got, http.StatusUnauthorized)
			return
		}
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		rc.Flush()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "data: got %s\n\n", body)
	}))
	defer upstream.Close()
	dir := t.TempDir()
	target, token := filepath.Join(dir, "target"), filepath.Join(dir, "token")
	os.WriteFile(target, []byte(strings.TrimPrefix(upstream.URL, "http://")+"\n"), 0o600)
	os.WriteFile(token, []byte("tok\n"), 0o600)
	proxy := httptest.NewServer(newProxy(target, token))
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const msg = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	pr, pw := io.Pipe()
	defer pw.Close()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, proxy.URL+"/mcp", pr)
	req.ContentLength = int64(len(msg))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer through the proxy: %v", err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	var events []string
	for lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			events = append(events, data)
			if data == "first" {
				pw.Write([]byte(msg))
				pw.Close()
			}
		}
	}
	if want := []string{"first", "got " + msg}; strings.Join(events, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q (%v), want %q", events, lines.Err(), want)
	}
}
