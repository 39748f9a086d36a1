package agentauthtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/server"
	"github.com/agentauth/agentauth/wire"
)

// DefaultScope is the scope the resource advertises and a token gets when
// a request names none (unless WithScopes says otherwise).
const DefaultScope = "agent:use"

// DefaultSubject is the user auto-approved grants sign in as when a
// request names none (unless WithSubject says otherwise).
const DefaultSubject = "alice"

// Server is a running authorization server and protected MCP endpoint.
// Its fields are set by NewServer and must not be changed; its methods
// are safe for concurrent use.
type Server struct {
	// URL is the protected MCP endpoint (Streamable HTTP), and the
	// resource identifier (RFC 8707) its tokens are for:
	// http://127.0.0.1:PORT/mcp.
	URL string
	// Issuer is the authorization server's identifier (RFC 8414):
	// http://127.0.0.1:PORT. Its metadata is at
	// Issuer/.well-known/oauth-authorization-server.
	Issuer string
	// ResourceMetadata is the URL of the RFC 9728 protected resource
	// metadata document, which the 401 challenge names.
	ResourceMetadata string
	// Subject is the user grants sign in as when TokenRequest.Subject is
	// empty.
	Subject string
	// Scopes are the scopes the resource advertises (scopes_supported);
	// a grant that names none gets them.
	Scopes []string

	opts options
	hc   *http.Client
	// cimd is the client ID metadata document's URL (WithCIMD).
	cimd string
	// backend is the handler's URL (WithHandler), the audience of the
	// gateway's identity assertions.
	backend string
	mu      sync.Mutex // guards meta, closers, stopped
	meta    *wire.AuthServerMetadata
	closers []func()
	cancel  context.CancelFunc
	stopped chan error // Run's result
}

// Option configures NewServer.
type Option func(*options)

type options struct {
	handler        http.Handler
	subject        string
	scopes         []string
	toolScopes     map[string][]string
	tokenTTL       time.Duration
	refreshTTL     time.Duration
	deviceInterval time.Duration
	dpop, dcr      bool
	cimd           bool
	logOutput      io.Writer
}

// WithHandler puts serve's gateway in front of h, your MCP server
// (Streamable HTTP), instead of serve's own MCP server: h is served on a
// loopback listener of its own and reached through Server.URL only with a
// token the gateway accepted. The gateway hands h the caller as an
// identity assertion: Authorization: Bearer with a short-lived JWT of
// Server.Issuer whose audience is h's URL and whose sub is the caller's
// (Server.Caller checks it).
func WithHandler(h http.Handler) Option { return func(o *options) { o.handler = h } }

// WithSubject sets the user auto-approved grants sign in as when a
// request names none (default DefaultSubject).
func WithSubject(name string) Option { return func(o *options) { o.subject = name } }

// WithScopes sets the scopes the resource advertises and grants by
// default (default DefaultScope).
func WithScopes(scopes ...string) Option {
	return func(o *options) { o.scopes = slices.Clone(scopes) }
}

// WithToolScope makes tools/call of tool need scope besides a valid
// token: without it the endpoint answers 403 with WWW-Authenticate:
// Bearer error="insufficient_scope", scope="SCOPE" (RFC 6750 §3.1), the
// MCP step-up challenge. Repeatable. Serve's own endpoint gates its tools
// whoami and echo only; with WithHandler, any tool of your server.
func WithToolScope(tool, scope string) Option {
	return func(o *options) {
		if o.toolScopes == nil {
			o.toolScopes = map[string][]string{}
		}
		o.toolScopes[tool] = append(o.toolScopes[tool], scope)
	}
}

// WithTokenTTL sets the access token lifetime (default one hour); a
// short one lets a test see a client refresh.
func WithTokenTTL(d time.Duration) Option { return func(o *options) { o.tokenTTL = d } }

// WithRefreshTTL sets the refresh token lifetime (default 30 days).
func WithRefreshTTL(d time.Duration) Option { return func(o *options) { o.refreshTTL = d } }

// WithDPoP binds the helpers' tokens to a fresh DPoP key (RFC 9449):
// Token.TokenType is "DPoP", and Token.HTTPClient sends a proof with each
// request. The server accepts DPoP with or without this option; it
// decides what the helpers do.
func WithDPoP() Option { return func(o *options) { o.dpop = true } }

// WithDCR makes the helpers register a client for each grant (RFC 7591
// dynamic client registration) instead of using the pre-registered
// public client agentauth-cli.
func WithDCR() Option { return func(o *options) { o.dcr = true } }

// WithCIMD makes the helpers' client_id the URL of a client ID metadata
// document (MCP 2025-11-25 "Authorization"), served on a loopback
// listener for the test and fetched by the authorization server.
func WithCIMD() Option { return func(o *options) { o.cimd = true } }

// WithLogOutput sends the server's logs (text, one record a line, never
// a token) to w instead of t.Log.
func WithLogOutput(w io.Writer) Option { return func(o *options) { o.logOutput = w } }

// NewServer starts the server (Start); t.Cleanup stops it. A server
// that cannot start fails the test (t.Fatal). Its logs go to t.Log unless
// WithLogOutput says otherwise.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	tl := &testLog{t: t}
	s, err := Start(context.Background(), append([]Option{WithLogOutput(tl)}, opts...)...)
	if err != nil {
		t.Fatalf("agentauthtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("agentauthtest: %v", err)
		}
		tl.stop()
	})
	return s
}

// Start starts the server outside a test (an Example, TestMain, a
// program); Close stops it. Its logs are dropped unless WithLogOutput
// says otherwise. It stops too when ctx ends.
func Start(ctx context.Context, opts ...Option) (_ *Server, err error) {
	o := options{subject: DefaultSubject, scopes: []string{DefaultScope}, deviceInterval: time.Second, logOutput: io.Discard}
	for _, opt := range opts {
		opt(&o)
	}
	if o.dcr && o.cimd {
		return nil, errors.New("WithDCR and WithCIMD exclude each other: the client is either registered or described by its document")
	}
	s := &Server{Subject: o.subject, Scopes: slices.Clone(o.scopes), opts: o,
		hc: &http.Client{Timeout: 30 * time.Second}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	srv, err := server.New(ctx, server.Options{
		LogOutput: o.logOutput, LogFormat: "text", LogLevel: slog.LevelInfo,
		HTTPClient: s.hc, Version: "agentauthtest",
		Listen: "127.0.0.1:0", ConfigPath: cfg,
		AutoApprove: true, DevUser: o.subject,
		TokenTTL: o.tokenTTL, RefreshTTL: o.refreshTTL, DeviceInterval: o.deviceInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot start the server: %w", err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Run(ctx) }()
	s.stopped = stopped
	s.Issuer = srv.Origin()
	s.URL = srv.Resource()
	s.ResourceMetadata = s.Issuer + "/.well-known/oauth-protected-resource" + strings.TrimPrefix(s.URL, s.Issuer)
	return s, nil
}

// Close stops the server, waits until it has stopped and releases what
// Start made. It reports an error the server stopped with.
func (s *Server) Close() error {
	s.mu.Lock()
	cancel, stopped, closers := s.cancel, s.stopped, s.closers
	s.cancel, s.stopped, s.closers = nil, nil, nil
	s.mu.Unlock()
	var err error
	if cancel != nil {
		cancel()
	}
	if stopped != nil {
		if rerr := <-stopped; rerr != nil {
			err = fmt.Errorf("the server stopped with an error: %w", rerr)
		}
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	return err
}

func (s *Server) onClose(f func()) {
	s.mu.Lock()
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

// config writes serve's config file: one scheme bound to the embedded
// issuer with the scopes, the tool scopes, and the backend when there is
// a handler.
func (s *Server) config() (string, error) {
	o := &s.opts
	doc := map[string]any{"schemes": []any{map[string]any{
		"id": "test", "label": "agentauthtest", "authorizationServers": []string{"embedded"},
		"scopesSupported": o.scopes, "validation": map[string]string{"type": "jwt"},
	}}}
	if o.handler != nil {
		backend := httptest.NewServer(o.handler)
		s.onClose(backend.Close)
		s.backend = backend.URL + "/mcp"
		doc["backends"] = []any{map[string]any{"name": "app", "url": s.backend, "identity": "assertion"}}
		if o.toolScopes != nil {
			doc["toolScopes"] = o.toolScopes
		}
	} else if o.toolScopes != nil {
		for tool := range o.toolScopes {
			if tool != "whoami" && tool != "echo" {
				return "", fmt.Errorf("WithToolScope(%q): serve's own endpoint gates only whoami and echo; give your server with WithHandler", tool)
			}
		}
		doc["methodScopes"] = o.toolScopes
	}
	if o.cimd {
		id, srv := clientDocument()
		s.onClose(srv.Close)
		s.cimd = id
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "agentauthtest")
	if err != nil {
		return "", err
	}
	s.onClose(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "agentauth.json")
	return path, os.WriteFile(path, b, 0o600)
}

// clientDocument serves a client ID metadata document on loopback and
// returns its URL, the client_id (the document names itself).
func clientDocument() (string, *httptest.Server) {
	var self string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id": self, "client_name": "agentauthtest client",
			"redirect_uris": flows.LoopbackRedirectURIs, "token_endpoint_auth_method": flows.AuthMethodNone,
			"grant_types":    []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken, wire.GrantDeviceCode},
			"response_types": []string{"code"},
		})
	}))
	self = srv.URL + "/client.json"
	return self, srv
}

// testLog writes the server's log lines to t.Log until the test ends.
type testLog struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

// metadata is the authorization server's RFC 8414 document, read once.
func (s *Server) metadata(ctx context.Context) (*wire.AuthServerMetadata, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta != nil {
		return s.meta, nil
	}
	md, err := flows.FetchAuthServerMetadata(ctx, s.hc, s.Issuer)
	if err != nil {
		return nil, err
	}
	s.meta = md
	return md, nil
}

var errNoServer = errors.New("agentauthtest: the Server was not made by NewServer")
