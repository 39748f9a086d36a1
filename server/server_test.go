package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/agentauth/agentauth/issuer"
)

// The listener's HTTP exchanges are bounded in time and header size.
func TestServeHTTPServerIsBounded(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("unbounded server: %+v", srv)
	}
}

// TestKeyringStateKey: the state key in the OS keyring is created on first
// use, the same on the next, one per state location; a keyring that fails
// is reported with the flag that avoids it.
func TestKeyringStateKey(t *testing.T) {
	keyring.MockInit()
	t.Cleanup(keyring.MockInit)
	first, err := keyringStateKey("sqlite /a/state.db", time.Second)
	if err != nil || len(first) != issuer.StateKeySize {
		t.Fatalf("first use: %x, %v", first, err)
	}
	again, err := keyringStateKey("sqlite /a/state.db", time.Second)
	if err != nil || string(again) != string(first) {
		t.Errorf("second use: %x, %v; want the first key", again, err)
	}
	other, err := keyringStateKey("sqlite /b/state.db", time.Second)
	if err != nil || string(other) == string(first) {
		t.Errorf("another location: %x, %v; want another key", other, err)
	}
	keyring.MockInitWithError(errors.New("no secret service"))
	if _, err := keyringStateKey("sqlite /c/state.db", time.Second); err == nil || !strings.Contains(err.Error(), "no secret service") ||
		!strings.Contains(err.Error(), "--state-key-file") {
		t.Errorf("failing keyring: %v", err)
	}
}
