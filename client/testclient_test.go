package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
)

// newTestClient is a Client over a memory store with the fetching browser
// and a recording UI; the keyring is never probed.
func newTestClient(t *testing.T) (*Client, store.Store, *recordUI) {
	t.Helper()
	st, ui := store.NewMemory(), &recordUI{}
	cl := &Client{
		HTTPClient:   &http.Client{Timeout: 10 * time.Second},
		Now:          time.Now,
		Store:        func() (store.Store, error) { return st, nil },
		ProbeKeyring: func(context.Context) error { t.Error("the keyring was probed"); return nil },
		Browser:      oauthfake.FetchBrowser,
		UI:           ui,
		Version:      "test",
	}
	return cl, st, ui
}
