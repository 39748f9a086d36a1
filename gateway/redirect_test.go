package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// TestRedirectNotFollowed: a backend's redirect is its answer, not a
// place serve sends the call (and the headers it adds) to; the client gets
// an error naming the backend.
func TestRedirectNotFollowed(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`))
	}))
	defer elsewhere.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	srv, _ := front(t, Backend{Name: "moved", URL: redirecting.URL}, Policy{})
	_, _, body := post(t, srv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var m wire.Message
	if json.Unmarshal([]byte(body), &m) != nil || m.Error == nil || !strings.Contains(m.Error.Message, "backend moved answered HTTP 307") {
		t.Errorf("redirecting backend: %s; want a JSON-RPC error naming it", body)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests; want none", n)
	}
}
