package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

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
	// Limits bound the calls in flight and their bytes, per caller and
	// in all (limits.go; zero fields take the defaults).
	Limits Limits
}

// New checks the options and prepares one Mount per backend. Nothing is
// started until a caller's first request.
func New(opts Options) (*Gateway, error) {
	g := &Gateway{done: make(chan struct{}), assert: opts.Assert, policy: opts.Policy, broker: opts.Broker, log: cmp.Or(opts.Log, slog.New(slog.DiscardHandler)), transport: opts.Transport, tel: opts.Telemetry, check: opts.CheckRequest}
	g.callLog = cmp.Or(opts.CallLog, g.log)
	g.limits = newLimiter(opts.Limits)
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
