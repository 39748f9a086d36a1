package host

import (
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// TestReload: the same config pushes nothing; another resource is refused
// and the running config stays; a removed scheme no longer gates calls.
func TestReload(t *testing.T) {
	h := newTestHost(t, twoSchemes, Options{})
	c := initialized(t, h, wire.DialectDesign)
	load := func(config, origin string) *Config {
		cfg, err := ParseConfig([]byte(config))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Resolve(origin)
		return cfg
	}
	if err := h.Reload(load(twoSchemes, "http://127.0.0.1:7777")); err != nil {
		t.Fatal(err)
	}
	noPush(t, c)
	if err := h.Reload(load(twoSchemes, "http://127.0.0.1:8888")); err == nil || !strings.Contains(err.Error(), "restart serve") {
		t.Errorf("another resource: %v", err)
	}
	if len(h.r().schemes) != 2 {
		t.Fatalf("the running config changed: %d schemes", len(h.r().schemes))
	}
	if err := authenticate(t, c, "a", "ta"); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(t.Context(), wire.MethodWhoami, nil, nil); err == nil {
		t.Fatal("whoami passed with b missing")
	}
	if err := h.Reload(load(oneScheme, "http://127.0.0.1:7777")); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(t.Context(), wire.MethodWhoami, nil, nil); err != nil {
		t.Errorf("whoami after b was removed: %v", err)
	}
}

const oneScheme = `{"schemes": [{"id": "a", "validation": {"type": "static", "tokens": [{"token": "ta", "subject": "alice"}]}}]}`

const twoSchemes = `{"schemes": [{"id": "a", "validation": {"type": "static", "tokens": [{"token": "ta", "subject": "alice"}]}},
  {"id": "b", "validation": {"type": "static", "tokens": [{"token": "tb", "subject": "alice"}]}}]}`
