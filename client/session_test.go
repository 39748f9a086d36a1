package client

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/store"
)

// sessionHostConfig declares "dev" (required, static token at-1 for alice)
// and "docs" (optional, nothing stored for it).
const sessionHostConfig = `{"resource": "https://agent.example/mcp",
 "schemes": [
  {"id": "dev", "authorizationServers": ["https://as.example"], "scopesSupported": ["agent:use"],
   "validation": {"type": "static", "tokens": [{"token": "at-1", "subject": "alice", "scopes": ["agent:use"]}]}},
  {"id": "docs", "authorizationServers": ["https://docs.example"], "required": false,
   "validation": {"type": "static", "tokens": [{"token": "docs-1", "subject": "bob"}]}}]}`

// newSessionHost is a real agent host (package host) on a WebSocket
// httptest server; it returns its ws:// target.
func newSessionHost(t *testing.T) string {
	t.Helper()
	cfg, err := host.ParseConfig([]byte(sessionHostConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resolve("http://127.0.0.1")
	h, err := host.New(host.Options{Config: cfg, AuthScope: host.AuthScopeConnection})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.WebSocketHandler(""))
	t.Cleanup(func() { srv.Close(); h.Close() })
	return "ws://" + strings.TrimPrefix(srv.URL, "http://")
}

// TestHostSession authenticates each declared scheme from the store,
// without the CLI: a stored token the host accepts; nothing stored; a
// credential for a resource on another origin than the host, which is not
// sent unless the user allowed that host (login --allow-resource).
func TestHostSession(t *testing.T) {
	target := newSessionHost(t)
	origin := "http://" + strings.TrimPrefix(target, "ws://")
	for _, tt := range []struct {
		name                  string
		allowed               []string
		wantAccepted          bool
		wantError, wantDocErr string
	}{
		{"allowed: accepted", []string{origin}, true, "", ResultNoCredential},
		{"not allowed: refused before sending", nil, false, ResultCrossOrigin, ResultNoCredential},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cl, st, _ := newTestClient(t)
			ctx := context.Background()
			c := &store.Credential{Key: store.Key{Resource: "https://agent.example/mcp", Issuer: "https://as.example", SchemeID: "dev"},
				Target: target, AllowedTargets: tt.allowed, AccessToken: "at-1", TokenType: "Bearer", Scopes: []string{"agent:use"}}
			if err := st.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
			sess, err := cl.OpenHost(ctx, target, false)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if len(sess.Reqs) != 2 {
				t.Fatalf("requirements %+v", sess.Reqs)
			}
			var results []SchemeResult
			for _, r := range sess.Reqs {
				res, err := sess.AuthenticateScheme(ctx, r, "")
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, res)
			}
			dev, docs := results[0], results[1]
			if dev.Accepted != tt.wantAccepted || dev.Error != tt.wantError || docs.Accepted || docs.Error != tt.wantDocErr {
				t.Errorf("dev %+v, docs %+v", dev, docs)
			}
			if tt.wantAccepted && (dev.Subject != "" || dev.Credential() == nil || dev.Credential().AccessToken != "at-1") {
				t.Errorf("accepted dev %+v (a static token has no JWT subject)", dev)
			}
			state, err := sess.AuthState(ctx)
			if err != nil || state == nil {
				t.Fatalf("AuthState = %v, %v", state, err)
			}
			if held := MethodState(state, "dev"); held == nil || held.Authenticated != tt.wantAccepted {
				t.Errorf("the host holds %+v for dev, want authenticated %v", held, tt.wantAccepted)
			}
			failure := AuthFailure(target, sess.Reqs, results)
			if (failure == nil) != tt.wantAccepted {
				t.Errorf("AuthFailure = %v", failure)
			}
			if failure != nil && !strings.Contains(failure.Hint, "--allow-resource https://agent.example/mcp") {
				t.Errorf("hint %q, want the --allow-resource login", failure.Hint)
			}
		})
	}
}
