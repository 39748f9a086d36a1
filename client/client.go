package client

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
)

// Client holds what the client core depends on, so that tests and other
// programs can swap any of it. It is not safe for concurrent use.
type Client struct {
	// HTTPClient is used for every outgoing HTTP request.
	HTTPClient *http.Client
	// Now is the clock.
	Now func() time.Time
	// Logger receives diagnostics; never a secret.
	Logger *slog.Logger
	// Store opens the credential store (the caller caches it).
	Store func() (store.Store, error)
	// Fallback opens the file store: where a credential goes when the
	// keyring refuses it after a successful flow (nil: no fallback).
	Fallback func() (store.Store, error)
	// ProbeKeyring checks that the OS keyring works (store.ProbeKeyring).
	ProbeKeyring func(context.Context) error
	// Browser opens a URL; nil when no browser can be opened (the URL is
	// then only shown).
	Browser func(url string) error
	// UI shows prompts and progress to the person.
	UI UI
	// Stderr receives a stdio agent host's stderr.
	Stderr io.Writer
	// Version is agentauth's version, sent with MCP initialize.
	Version string

	// keyringChecked is set once ProbeKeyring succeeded.
	keyringChecked bool
}

// UI is how the core talks to the person running it: the CLI renders it on
// stderr. Strings may quote peers: the UI makes them safe to show.
type UI interface {
	// Warn shows a warning.
	Warn(msg string)
	// Say shows a line of progress.
	Say(msg string)
	// AuthURL shows the authorization URL of a login, after any attempt to
	// open it: opened says a browser opened it, noBrowser that none will
	// (the user asked for none, or the opener failed and Warn said why).
	AuthURL(url string, opened, noBrowser bool, timeout time.Duration)
	// DeviceCode shows what the user must enter where (RFC 8628 §3.3).
	DeviceCode(p flows.DeviceCodePrompt)
	// Wait shows that the core waits for the user until until (zero:
	// unknown); the returned function ends the display.
	Wait(label string, until time.Time) (stop func())
	// LoggedIn reports a credential just stored.
	LoggedIn(c *store.Credential)
	// StoredInFile reports that the keyring refused a credential (err)
	// and it went to the file store at location instead.
	StoredInFile(err error, location string)
}

// logger is Logger, or one that discards.
func (cl *Client) logger() *slog.Logger {
	if cl.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cl.Logger
}

// Credentials returns the credential source over the store.
func (cl *Client) Credentials() (*Credentials, error) {
	st, err := cl.Store()
	if err != nil {
		return nil, err
	}
	cs := &Credentials{Store: st, HTTPClient: cl.HTTPClient, Now: cl.Now, Logger: cl.logger(), UI: cl.UI}
	if st.Kind() == store.KindKeyring {
		cs.Fallback = cl.Fallback
	}
	return cs, nil
}

// UsableStore returns the store after checking that a login's token could
// be kept: once, that the OS keyring works when it is the backend
// (store.ProbeKeyring); every time, that the stored credentials can be
// read (a corrupt credentials file or keyring index would refuse the write
// only after the user approved).
func (cl *Client) UsableStore(ctx context.Context) (store.Store, error) {
	st, err := cl.Store()
	if err != nil {
		return nil, err
	}
	if st.Kind() == store.KindKeyring && !cl.keyringChecked {
		if err := cl.ProbeKeyring(ctx); err != nil {
			return nil, fmt.Errorf("cannot log in: %w", err)
		}
		cl.keyringChecked = true
	}
	if _, err := st.List(ctx); err != nil {
		return nil, fmt.Errorf("cannot log in: %w", err)
	}
	return st, nil
}
