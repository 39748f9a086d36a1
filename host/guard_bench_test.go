package host

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkGuard is the guard's cost on a request of a command-line
// client (no Origin) to a loopback listener.
func BenchmarkGuard(b *testing.B) {
	g, err := NewGuard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), GuardOptions{Addr: "127.0.0.1:7777", OriginPaths: []string{"/mcp"}})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:7777/mcp", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		g.ServeHTTP(w, r)
	}
}
