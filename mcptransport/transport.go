package mcptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// MaxTargets bounds the MCP servers one Transport keeps a credential for.
const MaxTargets = 64

// MaxBody bounds a request body, which the transport keeps to send it
// again after a login: an MCP message of agentauth's own maximum size.
const MaxBody = wire.DefaultMaxMessageSize

// Options configure a Transport. The zero value is usable.
type Options struct {
	// Base carries the requests (default http.DefaultTransport).
	Base http.RoundTripper
	// Store holds the credentials (default: agentauth's, see the package
	// documentation).
	Store store.Store
	// Browser opens a login's authorization URL (nil: none is opened;
	// the URL goes to Output).
	Browser func(url string) error
	// Output receives what a person must see during a login (the URL to
	// open, the device code, progress and warnings), one line each;
	// default os.Stderr (io.Discard drops them).
	Output io.Writer
	// Logger receives diagnostics, never a secret (default: none).
	Logger *slog.Logger
	// Scopes are asked for on top of what a server's challenge names.
	Scopes []string
	// Device logs in with the device authorization grant (RFC 8628)
	// instead of the authorization code grant.
	Device bool
	// DPoP asks logins for DPoP-bound tokens (RFC 9449).
	DPoP bool
	// ClientID names a pre-registered client; ClientMetadataURL a client
	// ID metadata document URL used as client_id where the server
	// supports it. Without either a client is registered (RFC 7591).
	ClientID          string
	ClientMetadataURL string
	// Timeout bounds the wait for the person at a login (default 5
	// minutes).
	Timeout time.Duration
	// NoLogin never starts a login or a step-up, for a program without a
	// person (a service, a CI job): the stored credential is used and
	// refreshed, and a request it cannot authorize returns the server's
	// 401 or 403 at once, for the program to report (agentauth login
	// TARGET fixes it).
	NoLogin bool
}

// Transport is the http.RoundTripper; build it with New.
type Transport struct {
	cl   *client.Client
	send http.RoundTripper // Base under agentauth's DPoP transport
	ch   client.Choices

	mu      sync.Mutex
	targets map[string]*client.SharedAuth
}

// New builds a Transport. It opens the default store now (not the
// keyring, which is reached on first use).
func New(opts Options) (*Transport, error) {
	st := opts.Store
	fallback := func() (store.Store, error) { return nil, errors.New("no fallback store") }
	if st == nil {
		var err error
		if st, err = userStore(); err != nil {
			return nil, fmt.Errorf("cannot open agentauth's credential store: %w", err)
		}
		fallback = store.OpenFallback
	}
	base := opts.Base
	if base == nil {
		base = http.DefaultTransport
	}
	hc := client.WithDPoP(&http.Client{Transport: base})
	out := opts.Output
	if out == nil {
		out = os.Stderr
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cl := &client.Client{
		HTTPClient: hc, Now: time.Now, Logger: logger,
		Store: func() (store.Store, error) { return st, nil }, Fallback: fallback,
		ProbeKeyring: func(context.Context) error { return nil },
		Browser:      opts.Browser, UI: &lineUI{w: out}, Stderr: out, Version: "mcptransport",
	}
	if opts.Store == nil {
		cl.ProbeKeyring = store.ProbeKeyring
	}
	return &Transport{cl: cl, send: hc.Transport, targets: map[string]*client.SharedAuth{}, ch: client.Choices{
		Scopes: opts.Scopes, Device: opts.Device, DPoP: opts.DPoP, ClientID: opts.ClientID,
		ClientMetadataURL: opts.ClientMetadataURL, NoBrowser: opts.Browser == nil, Timeout: opts.Timeout,
		NoLogin: opts.NoLogin,
	}}, nil
}

// userStore opens the store agentauth's commands use: $AGENTAUTH_STORE,
// else the choice remembered in the config directory, else the keyring,
// with the file store for the credentials the keyring refused.
func userStore() (store.Store, error) {
	dir, err := store.ConfigDir()
	if err != nil {
		return nil, err
	}
	kind, err := store.Resolve("", dir)
	if err != nil {
		return nil, err
	}
	return store.OpenWithFallback(kind, dir)
}

// RoundTrip implements http.RoundTripper (see the package documentation).
// A request body is read once (at most MaxBody bytes; a longer one fails
// the request) so that it can be sent again after a login.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return t.send.RoundTrip(req)
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	auth, err := t.authFor(req.Context(), target(req.URL))
	if err != nil {
		return nil, err
	}
	var last *http.Response
	err = auth.Do(req.Context(), method(req, body), func(ctx context.Context) error {
		if last != nil {
			last.Body.Close()
			last = nil
		}
		token, err := auth.Token(ctx)
		if err != nil {
			return err
		}
		out := req.Clone(req.Context())
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		if token != "" {
			out.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := t.send.RoundTrip(out)
		if err != nil {
			return err
		}
		last = resp
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			header := resp.Header.Values("WWW-Authenticate")
			challenge, _ := wire.BearerChallenge(header)
			return &wire.HTTPAuthError{StatusCode: resp.StatusCode, Challenge: challenge, Header: header}
		}
		return nil
	})
	var refused *wire.HTTPAuthError
	if err == nil || errors.As(err, &refused) && last != nil {
		// Accepted, or refused for good: the server's answer.
		return last, nil
	}
	if last != nil {
		last.Body.Close()
	}
	return nil, err
}

// authFor is the shared credential of target, read from the store on
// first use.
func (t *Transport) authFor(ctx context.Context, target string) (*client.SharedAuth, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.targets[target]; ok {
		return a, nil
	}
	if len(t.targets) >= MaxTargets {
		return nil, fmt.Errorf("cannot authorize a request to %s: this transport already serves %d MCP servers", wire.RedactTarget(target), MaxTargets)
	}
	a := t.cl.NewSharedAuth(ctx, target, t.ch)
	t.targets[target] = a
	return a, nil
}

// target is the MCP server a request is for: its URL without query and
// fragment.
func target(u *url.URL) string {
	t := *u
	t.RawQuery, t.Fragment, t.RawFragment, t.User = "", "", "", nil
	return t.String()
}

// readBody reads req's body whole, bounded, so it can be sent again.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("cannot send a request body over %d bytes", MaxBody)
	}
	return b, nil
}

// method names the request in what a person sees about a login: the
// JSON-RPC method of an MCP message, else the HTTP method.
func method(req *http.Request, body []byte) string {
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) == nil && m.Method != "" && len(m.Method) <= 64 && !strings.ContainsFunc(m.Method, isControl) {
		return m.Method
	}
	return req.Method
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// lineUI writes what a person must see as plain lines, control
// characters removed (strings may quote peers).
type lineUI struct {
	mu sync.Mutex
	w  io.Writer
}

func (u *lineUI) line(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintln(u.w, strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s))
}

func (u *lineUI) Warn(msg string) { u.line("warning: " + msg) }
func (u *lineUI) Say(msg string)  { u.line(msg) }
func (u *lineUI) AuthURL(url string, opened, noBrowser bool, timeout time.Duration) {
	if opened {
		u.line("Opened " + url + " in the browser; waiting up to " + client.RoughDuration(timeout) + ".")
		return
	}
	u.line("To log in, open " + url + " (waiting up to " + client.RoughDuration(timeout) + ").")
}
func (u *lineUI) DeviceCode(p flows.DeviceCodePrompt) {
	u.line("To log in, open " + p.VerificationURI + " and enter the code " + p.UserCode)
	if p.VerificationURIComplete != "" {
		u.line("or open " + p.VerificationURIComplete)
	}
}
func (u *lineUI) Wait(string, time.Time) func() { return func() {} }
func (u *lineUI) LoggedIn(c *store.Credential) {
	u.line("Logged in to " + c.Resource + " (" + strings.Join(c.Scopes, " ") + ").")
}
func (u *lineUI) StoredInFile(err error, location string) {
	u.line("warning: the keyring refused the credential (" + err.Error() + "); it is stored in " + location)
}
