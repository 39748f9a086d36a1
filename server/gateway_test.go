package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestGatewayRoutes: a gateway mount's exact path reaches the mount
// without the mux, with the pattern the mux would have set (the latency
// histogram's route label); another spelling of the path and CONNECT go
// to the mux, which redirects or routes them as it always did.
func TestGatewayRoutes(t *testing.T) {
	var reached string
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = name + " " + r.Pattern })
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler("mux"))
	mux.Handle("/", handler("mux"))
	routes := gatewayRoutes{exact: map[string]http.Handler{"/mcp": handler("mount")}, mux: mux}
	for _, c := range []struct {
		method, target, reached string
		status                  int
	}{
		{http.MethodPost, "/mcp", "mount /mcp", http.StatusOK},
		{http.MethodGet, "/mcp", "mount /mcp", http.StatusOK},
		{http.MethodPost, "/mcp/", "mux /", http.StatusOK},
		{http.MethodPost, "/a/../mcp", "", http.StatusTemporaryRedirect},
		{http.MethodConnect, "/mcp", "mux /mcp", http.StatusOK},
	} {
		reached = ""
		w := httptest.NewRecorder()
		routes.ServeHTTP(w, httptest.NewRequest(c.method, c.target, nil))
		if reached != c.reached || w.Code != c.status {
			t.Errorf("%s %s: reached %q (HTTP %d), want %q (HTTP %d)", c.method, c.target, reached, w.Code, c.reached, c.status)
		}
	}
}
