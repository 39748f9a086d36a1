package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// TestProxyUsesAnotherProcesssLogin: a login another agentauth process
// stores after this proxy read the store (it holds no credential) and
// before the server refuses its request is used, not made again. The
// proxy once compared the stored credential's time with the refusal's, and
// such a login, older than the refusal, was made twice (proxy_auth.txtar's
// one-login check, under load). Forced here: the other process's login is
// stored by the send the server then refuses. The target's server is never
// reached: a login of this proxy's own would start with its metadata.
func TestProxyUsesAnotherProcesssLogin(t *testing.T) {
	cl, st, ui := newTestClient(t)
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the proxy logged in itself: %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	target := srv.URL + "/mcp"
	a := cl.NewSharedAuth(ctx, target, Choices{})
	if a.storeErr != nil || a.Current() != nil {
		t.Fatalf("a new proxy over an empty store: %v, holding %v", a.storeErr, a.Current())
	}
	other := &store.Credential{Key: store.Key{Resource: target, Issuer: srv.URL}, Target: target,
		AccessToken: "from-another-process", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour), Scopes: []string{"agent:use"}}
	var sent []string
	err := a.Do(ctx, "tools/list", func(ctx context.Context) error {
		token, err := a.Token(ctx)
		if err != nil {
			return err
		}
		sent = append(sent, token)
		if len(sent) > 1 {
			return nil
		}
		if err := st.Put(ctx, other); err != nil {
			t.Fatal(err)
		}
		return &wire.HTTPAuthError{StatusCode: http.StatusUnauthorized}
	})
	if err != nil {
		t.Fatalf("do: %v (sent %q)", err, sent)
	}
	if !slices.Equal(sent, []string{"", "from-another-process"}) {
		t.Errorf("sent tokens %q, want none and then the other process's", sent)
	}
	ui.mu.Lock()
	lines := slices.Clone(ui.lines)
	ui.mu.Unlock()
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "Using the login another agentauth process just completed")
	}) {
		t.Errorf("the proxy did not say whose login it used: %q", lines)
	}
}
