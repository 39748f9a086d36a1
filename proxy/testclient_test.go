package proxy

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
)

// newTestClient is a Client over a memory store with the fetching browser
// and a UI that shows nothing; the keyring is never probed.
func newTestClient(t *testing.T) *client.Client {
	t.Helper()
	st := store.NewMemory()
	cl := &client.Client{
		HTTPClient:   &http.Client{Timeout: 10 * time.Second},
		Now:          time.Now,
		Store:        func() (store.Store, error) { return st, nil },
		ProbeKeyring: func(context.Context) error { t.Error("the keyring was probed"); return nil },
		Browser:      oauthfake.FetchBrowser,
		UI:           quietUI{},
		Version:      "test",
	}
	return cl
}

// quietUI is a UI that shows nothing.
type quietUI struct{}

func (quietUI) Warn(string)                               {}
func (quietUI) Say(string)                                {}
func (quietUI) AuthURL(string, bool, bool, time.Duration) {}
func (quietUI) DeviceCode(flows.DeviceCodePrompt)         {}
func (quietUI) Wait(string, time.Time) (stop func())      { return func() {} }
func (quietUI) LoggedIn(*store.Credential)                {}
func (quietUI) StoredInFile(error, string)                {}
