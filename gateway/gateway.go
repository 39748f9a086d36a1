package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"time"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

// Caller is what serve established about the request's token: the
// gateway's only view of the caller's grant. It never holds the token.
type Caller interface {
	Subject() string
	ClientID() string
	Scopes() []string
	// Issuer is the token's issuer: a sign-in link of the embedded
	// issuer's callers is bound to them (broker.Principal).
	Issuer() string
}

// Broker is what the gateway needs of serve's broker (package broker):
// the caller's upstream tokens and, when one is missing, a sign-in to ask
// for.
type Broker interface {
	Session(subject, clientID string) string
	Token(ctx context.Context, sid, upstream string) (string, error)
	Ask(ctx context.Context, who broker.Principal, upstream string) (*broker.Ask, error)
}

// Options configure a Gateway.
type Options struct {
	Backends []Backend
	Policy   Policy
	// Broker is nil when serve has no upstreams.
	Broker Broker
	// Log gets operational messages and, unless CallLog is set, the
	// audit records (message "gateway call"); never a token, an argument
	// or a result.
	Log *slog.Logger
	// CallLog, when set, gets the audit records: one per call, serve's
	// busiest record, which serve writes together, up to 10 ms late
	// (ops.LogWriter.Held).
	CallLog *slog.Logger
	// Assert mints an identity assertion for a backend with identity
	// "assertion" (issuer.Issuer.Assertion); nil when serve has no
	// embedded issuer.
	Assert func(ctx context.Context, subject, clientID, audience string, scopes []string) (string, error)
	// Transport reaches HTTP backends (default: backendTransport, keeping
	// up to 256 idle connections per backend, no overall timeout since
	// answers stream). Requests go to it directly, not through an
	// http.Client: a backend's redirect is its answer, never followed with
	// the headers serve adds (an upstream token, an assertion), and no
	// per-call header copy is made for redirects.
	Transport http.RoundTripper
	// Telemetry, when set, counts the refused calls and receives a
	// policy_denied audit event for each (nil: none).
	Telemetry *ops.Recorder
	// CheckRequest, when set, checks a sessionless message to a stdio
	// backend (which serve answers or bridges itself) as serve's own MCP
	// face does: MCP-Protocol-Version and, for MCP 2026-07-28, the standard
	// headers, _meta and the Mcp-Param-* headers of the tool's arguments
	// named by headerParams (mcpserver.CheckRequest); the HTTP status and
	// error of a refusal, or nil.
	CheckRequest func(r *http.Request, m *wire.Message, headerParams map[string]string) (int, *wire.Error)
}

// Gateway holds the mounted backends.
type Gateway struct {
	mounts    []*Mount
	done      chan struct{}
	closeOnce sync.Once
	policy    Policy
	broker    Broker
	log       *slog.Logger
	callLog   *slog.Logger
	transport http.RoundTripper
	// pool is transport when it is the default, whose idle connections
	// the sweep and Close end.
	pool     *backendTransport
	tel      *ops.Recorder
	check    func(r *http.Request, m *wire.Message, headerParams map[string]string) (int, *wire.Error)
	assert   func(ctx context.Context, subject, clientID, audience string, scopes []string) (string, error)
	scrubber *scrubber
}

// New checks the options and prepares one Mount per backend. Nothing is
// started until a caller's first request.
func New(opts Options) (*Gateway, error) {
	g := &Gateway{done: make(chan struct{}), assert: opts.Assert, policy: opts.Policy, broker: opts.Broker, log: cmp.Or(opts.Log, slog.New(slog.DiscardHandler)), transport: opts.Transport, tel: opts.Telemetry, check: opts.CheckRequest}
	g.callLog = cmp.Or(opts.CallLog, g.log)
	if g.transport == nil {
		g.pool = newBackendTransport()
		g.transport = g.pool
	}
	sc, err := newScrubber(opts.Policy.Redact)
	if err != nil {
		return nil, err
	}
	g.scrubber = sc
	paths := map[string]bool{}
	for i, b := range opts.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		if err := b.Check(p); err != nil {
			return nil, err
		}
		if b.Path == "" {
			b.Path = "/mcp"
			if i > 0 {
				b.Path = "/mcp/" + b.Name
			}
		}
		if paths[b.Path] {
			return nil, fmt.Errorf("%s.path: %s is taken by another backend", p, b.Path)
		}
		paths[b.Path] = true
		if b.Identity == IdentityAssertion && g.assert == nil {
			return nil, fmt.Errorf("%s.identity: assertions are minted by serve's embedded issuer, and no scheme uses it", p)
		}
		var x *exchanger
		if b.Identity == IdentityExchange {
			if x, err = newExchanger(b, p); err != nil {
				return nil, err
			}
		}
		if b.Upstream != "" && g.broker == nil {
			return nil, fmt.Errorf("%s.upstream: serve has no upstreams configured", p)
		}
		m := &Mount{g: g, b: b, timeout: time.Duration(cmp.Or(b.Timeout, Duration(DefaultTimeout))),
			maxMsg: cmp.Or(b.MaxMessage, DefaultMaxMessage), sessions: map[string]*session{}, tools: newToolCache(), x: x}
		if u, err := url.Parse(b.URL); b.URL != "" && err == nil && u.Scheme == "http" {
			m.target, _ = newTarget(u) // nil: RoundTrip says why
		}
		g.mounts = append(g.mounts, m)
	}
	for _, key := range []map[string][]string{opts.Policy.ToolScopes, opts.Policy.ToolUpstreams} {
		for tool := range key {
			if err := checkToolKey("toolScopes/toolUpstreams", tool, opts.Backends); err != nil {
				return nil, err
			}
		}
	}
	go g.sweep()
	return g, nil
}

// sweep ends, once a minute, the sessions unused for sessionIdle (their
// stdio processes stop).
func (g *Gateway) sweep() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
		}
		if g.pool != nil {
			g.pool.closeIdle(g.pool.idleFor)
		}
		for _, m := range g.mounts {
			var idle []*session
			m.mu.Lock()
			for id, s := range m.sessions {
				s.mu.Lock()
				old := time.Since(s.last) > sessionIdle
				s.mu.Unlock()
				if old {
					delete(m.sessions, id)
					idle = append(idle, s)
				}
			}
			m.mu.Unlock()
			for _, s := range idle {
				s.conn.end(context.Background())
			}
		}
	}
}

// Mounts are the backends in config order.
func (g *Gateway) Mounts() []*Mount { return g.mounts }

// Close ends every session: stdio processes (their process groups) are
// killed and HTTP backends get a DELETE of their session. A nil Gateway
// has nothing to close.
func (g *Gateway) Close() {
	if g == nil {
		return
	}
	g.closeOnce.Do(func() { close(g.done) })
	var wg sync.WaitGroup
	for _, m := range g.mounts {
		m.mu.Lock()
		all := m.sessions
		m.sessions = map[string]*session{}
		m.mu.Unlock()
		for _, s := range all {
			wg.Go(func() { s.conn.end(context.Background()) })
		}
		m.mu.Lock()
		sb := m.shared
		m.mu.Unlock()
		if sb != nil {
			wg.Go(sb.close)
		}
	}
	wg.Wait()
	if g.pool != nil {
		g.pool.closeIdle(0)
	}
}

// Mount is one backend at its path.
type Mount struct {
	g       *Gateway
	b       Backend
	timeout time.Duration
	maxMsg  int64
	tools   *toolCache
	// metadataURL is the RFC 9728 document that challenges name.
	metadataURL string
	// x exchanges callers' tokens for the backend's (identity "exchange").
	x *exchanger
	// target is a plain-http backend's URL for backendTransport.send.
	target *target

	mu       sync.Mutex
	sessions map[string]*session
	// shared is a stdio backend's one process for every caller (process
	// "shared", and MCP 2026-07-28 requests), made on first use.
	shared *sharedBackend
	// stateless is the HTTP backend connection of requests without a
	// session (MCP 2026-07-28, or a backend that keeps none).
	stateless conn
}

// Name is the backend's name; Path where it is mounted.
func (m *Mount) Name() string { return m.b.Name }
func (m *Mount) Path() string { return m.b.Path }

// session is one MCP session of a caller with the backend.
type session struct {
	id    string
	owner string // subject and client id of the caller that initialized it
	conn  conn
	mu    sync.Mutex
	last  time.Time
}

// ownerOf keys a caller for session binding.
func ownerOf(c Caller) string { return c.Subject() + "\x00" + c.ClientID() }

// sessionIdle is how long an unused session is kept; evictIdle how long
// one must have been unused to make room for a new one at the bound.
const (
	sessionIdle = 30 * time.Minute
	evictIdle   = time.Minute
)

// newSession registers a session for the caller. At the bound (MaxSessions,
// or MaxProcesses for a stdio backend) the least recently used session
// idle for at least evictIdle makes room (a client that never ends its
// sessions, as a command-line client run per call, would fill the table);
// with none, the new session is refused.
func (m *Mount) newSession(c Caller, cn conn) (*session, error) {
	b := make([]byte, 24)
	rand.Read(b)
	s := &session{id: base64.RawURLEncoding.EncodeToString(b), owner: ownerOf(c), conn: cn, last: time.Now()}
	limit := MaxSessions
	if m.b.Command != "" && m.b.Process != ProcessShared {
		limit = MaxProcesses
	}
	m.mu.Lock()
	var evicted *session
	var evictedLast time.Time
	if len(m.sessions) >= limit {
		for _, o := range m.sessions {
			o.mu.Lock()
			last := o.last
			o.mu.Unlock()
			if time.Since(last) >= evictIdle && (evicted == nil || last.Before(evictedLast)) {
				evicted, evictedLast = o, last
			}
		}
		if evicted != nil {
			delete(m.sessions, evicted.id)
		}
	}
	full := len(m.sessions) >= limit
	if !full {
		m.sessions[s.id] = s
	}
	m.mu.Unlock()
	if evicted != nil {
		go evicted.conn.end(context.Background())
	}
	if full {
		return nil, fmt.Errorf("backend %s has %d sessions in use, the most serve keeps; try again later", m.b.Name, limit)
	}
	return s, nil
}

// session finds the caller's session id; another caller's is not found.
func (m *Mount) session(id string, c Caller) *session {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s == nil || s.owner != ownerOf(c) {
		return nil
	}
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
	return s
}

func (m *Mount) dropSession(s *session) {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
}

// dial makes a backend connection for a new session of caller c.
func (m *Mount) dial(c Caller) conn {
	if m.b.Command != "" && m.b.Process == ProcessShared {
		return m.sharedProcess().conn(c, false)
	}
	if m.b.Command != "" {
		return newStdioConn(m, c)
	}
	return &httpConn{m: m}
}

// statelessConn is the HTTP connection of sessionless requests.
func (m *Mount) statelessConn() conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stateless == nil {
		m.stateless = &httpConn{m: m, stateless: true}
	}
	return m.stateless
}

// Ready reports whether the backend can be reached, for serve's /readyz:
// an HTTP backend answers a GET of its URL with any HTTP status (MCP
// servers answer a bare GET with 405 or 400; only a failed connection or
// no answer within ctx counts as down); a stdio backend's command is an
// executable that can be started.
func (m *Mount) Ready(ctx context.Context) error {
	if m.b.Command != "" {
		if _, err := exec.LookPath(m.b.Command); err != nil {
			return fmt.Errorf("backend %s: cannot start %s: %w", m.b.Name, m.b.Command, err)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.b.URL, nil)
	if err != nil {
		return fmt.Errorf("backend %s: %w", m.b.Name, err)
	}
	resp, err := m.g.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("backend %s: not reachable: %w", m.b.Name, err)
	}
	resp.Body.Close()
	return nil
}
