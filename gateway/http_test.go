package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMessageBounds: over HTTP, a backend's answer longer than its
// maxMessage fails the call with an error naming the backend, whether its
// Content-Length says so (refused unread) or it comes chunked; one of the
// bound's size passes; a caller's message over the bound gets 413, with
// or without a Content-Length.
func TestMessageBounds(t *testing.T) {
	const max = 1024
	answer := func(n int) string {
		head := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`
		tail := `"}]}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(string(b), `"exact"`):
			io.WriteString(w, answer(max))
		case strings.Contains(string(b), `"chunked"`):
			for range 3 {
				io.WriteString(w, answer(max)[:max/2])
				w.(http.Flusher).Flush()
			}
		default:
			io.WriteString(w, answer(max+1))
		}
	}))
	defer be.Close()
	srv, _ := front(t, Backend{Name: "big", URL: be.URL, MaxMessage: max}, Policy{})
	for _, tool := range []string{"exact", "length", "chunked"} {
		_, _, body := post(t, srv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+tool+`"}}`)
		over := strings.Contains(body, "backend big sent a message over 1024 bytes")
		if over != (tool != "exact") {
			t.Errorf("%s: %.200s", tool, body)
		}
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", max) + `"}}`
	for _, chunked := range []bool{false, true} {
		var rd io.Reader = strings.NewReader(big)
		if chunked {
			rd = io.MultiReader(rd) // no length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL, rd)
		req.Header.Set("Authorization", "Bearer tok-writer-0123456789")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a %d-byte message (chunked %v): HTTP %d, want 413", len(big), chunked, resp.StatusCode)
		}
	}
}
