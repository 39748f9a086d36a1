package host

import (
	"context"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// A connection keeps the token it authenticated with only when it will
// validate it again (introspection with a cache TTL): otherwise the
// grant is all it holds, which keeps an idle connection small and no
// secret in memory longer than needed.
func TestHeldTokenKeptOnlyToRecheck(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	c := initialized(t, h, wire.DialectDesign)
	if err := authenticate(t, c, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.conns {
		v := s.own.view(h.now())
		if v["dev"].grant == nil {
			t.Fatal("no grant held after authenticate")
		}
		s.own.mu.Lock()
		if e := s.own.held["dev"]; e.token != "" {
			t.Errorf("a static scheme's grant keeps its token %q; want none (nothing re-checks it)", e.token)
		}
		s.own.mu.Unlock()
	}
}

// initialize's scheme metadata, built once per config, follows a reload:
// a connection opened after it sees the new schemes.
func TestInitializeAfterReload(t *testing.T) {
	h := newTestHost(t, twoSchemes, Options{})
	schemes := func() []string {
		c := dial(t, h)
		res, err := wire.Initialize(context.Background(), c, wire.DialectDesign, "test")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range res.ResourceMetadata.AuthSchemes {
			ids = append(ids, s.ID)
		}
		return ids
	}
	if got := schemes(); len(got) != 2 {
		t.Fatalf("before the reload: schemes %v, want a and b", got)
	}
	cfg, err := ParseConfig([]byte(oneScheme))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resolve("http://127.0.0.1:7777")
	if err := h.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if got := schemes(); len(got) != 1 || got[0] != "a" {
		t.Errorf("after the reload: schemes %v, want [a]", got)
	}
}
