package host

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// Auth scopes: who a token authenticates (PROTOCOL.md "authenticate").
const (
	// AuthScopeConnection: only the connection that sent the token.
	AuthScopeConnection = "connection"
	// AuthScopeHost: every connection; the last token per scheme wins.
	AuthScopeHost = "host"
)

// writeTimeout bounds one message write to a peer.
const writeTimeout = 10 * time.Second

// sendQueueSize bounds the messages waiting to be written to one
// connection (see ServeConn).
const sendQueueSize = 64

// Options configure a Host.
type Options struct {
	// Config must be resolved (see Config.Resolve).
	Config *Config
	// AuthScope is AuthScopeConnection (default) or AuthScopeHost.
	AuthScope string
	// Logger receives one line per connection open/close and per auth
	// decision. Default: discard.
	Logger *slog.Logger
	// HTTPClient fetches metadata and keys and calls introspection.
	HTTPClient *http.Client
	// MaxMessageSize bounds one WebSocket message (default 1 MiB).
	MaxMessageSize int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Version is the server version MCP clients see in serverInfo
	// (default "dev").
	Version string
	// Store keeps the agent sessions (createSession); default a new
	// state.Memory, which dies with the host.
	Store state.Store
	// StoredToken, when set, gives an ACP agent-type method the access
	// token agentauth's own credential store holds for the scheme (the
	// agent signs itself in: ACP authenticate {methodId} without a
	// token); its error says what is missing (the login to run).
	StoredToken func(ctx context.Context, schemeID, resource string, authorizationServers []string) (string, error)
	// Broker, when set, signs sessions in to the config's upstreams (see
	// broker.go).
	Broker *broker.Broker
}

// Host serves the protocol on any number of connections.
type Host struct {
	cfg      *Config
	log      *slog.Logger
	now      func() time.Time
	maxMsg   int64
	version  string
	client   *http.Client
	reqs     atomic.Pointer[requirements] // swapped by Reload
	seq      atomic.Int64                 // the published dialect's serverSeq
	shared   *grantTable                  // the host-wide table when AuthScope is host
	sessions *agentSessions
	// storedToken is Options.StoredToken.
	storedToken func(ctx context.Context, schemeID, resource string, authorizationServers []string) (string, error)
	broker      *broker.Broker

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	conns    map[*session]struct{}
	nextConn uint64
	revoked  map[string]time.Time // jti → until when it must stay refused
	closed   bool                 // set by Close: no new connection is served
	serving  sync.WaitGroup       // ServeConn calls under way
}

// requirements are the configured schemes in force. The resource never
// changes while the host runs.
type requirements struct {
	cfg     *Config
	schemes []*scheme
	byID    map[string]*scheme
	// mcp are the schemes whose resource is the host's: the ones the HTTP
	// face (/mcp) accepts, since an MCP server's tokens must name it as
	// their audience (MCP "Authorization", Token Audience Binding).
	mcp []*scheme
}

// r returns the requirements in force.
func (h *Host) r() *requirements { return h.reqs.Load() }

// scheme is a configured requirement with its validator.
type scheme struct {
	Scheme
	checker *checker
	// recheck is how often a held token is validated again (introspection
	// only; zero: never).
	recheck time.Duration
}

// New builds a Host from a resolved config.
func New(opts Options) (*Host, error) {
	if opts.Config == nil {
		return nil, errors.New("cannot start the host: no config")
	}
	opts.Config.schemeResources()
	if err := opts.Config.checkResolved(); err != nil {
		return nil, fmt.Errorf("cannot start the host: %w", err)
	}
	h := &Host{storedToken: opts.StoredToken, cfg: opts.Config, log: opts.Logger, now: opts.Now, maxMsg: opts.MaxMessageSize, version: cmp.Or(opts.Version, "dev"),
		sessions: &agentSessions{store: opts.Store}, conns: map[*session]struct{}{}, revoked: map[string]time.Time{}}
	switch opts.AuthScope {
	case "", AuthScopeConnection:
	case AuthScopeHost:
		h.shared = &grantTable{held: map[string]*held{}}
	default:
		return nil, fmt.Errorf("cannot start the host: unknown auth scope %q (connection or host)", opts.AuthScope)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.sessions.store == nil {
		h.sessions.store = state.NewMemory()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.client = opts.HTTPClient
	if h.client == nil {
		h.client = &http.Client{Timeout: fetchTimeout}
	}
	h.reqs.Store(h.build(opts.Config, nil))
	h.useBroker(opts.Broker)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// build makes the schemes of cfg, keeping those of old whose
// configuration is unchanged (and with them their caches).
func (h *Host) build(cfg *Config, old *requirements) *requirements {
	r := &requirements{cfg: cfg, byID: map[string]*scheme{}}
	for _, s := range cfg.Schemes {
		if old != nil {
			if o := old.byID[s.ID]; o != nil && reflect.DeepEqual(o.Scheme, s) {
				r.add(o)
				continue
			}
		}
		sc := &scheme{Scheme: s}
		var v validator
		var ttl time.Duration
		switch s.Validation.Type {
		case ValidationStatic:
			v = newStaticValidator(s, h.now)
		case ValidationJWT:
			v = newJWTValidator(s, s.Resource, h.client, h.now)
		case ValidationIntrospection:
			v = newIntrospectionValidator(s, s.Resource, h.client, h.now)
			ttl = time.Duration(s.Validation.CacheTTL)
			if ttl == 0 {
				ttl = DefaultCacheTTL
			}
			sc.recheck = ttl
		}
		sc.checker = &checker{scheme: s.ID, v: v, cache: newGrantCache(h.now, ttl)}
		r.add(sc)
	}
	return r
}

func (r *requirements) add(sc *scheme) {
	r.schemes = append(r.schemes, sc)
	r.byID[sc.ID] = sc
	if sc.Resource == r.cfg.Resource {
		r.mcp = append(r.mcp, sc)
	}
}

// byResource lists the schemes whose resource is resource.
func (r *requirements) byResource(resource string) []*scheme {
	var out []*scheme
	for _, sc := range r.schemes {
		if sc.Resource == resource {
			out = append(out, sc)
		}
	}
	return out
}

// Resource is the host's resource identifier: the HTTP face's (/mcp), and
// the resource of the schemes without one of their own (Config.Resolve).
func (h *Host) Resource() string { return h.cfg.Resource }

// ProtectedResourceMetadata is the host's RFC 9728 §2 document, the HTTP
// face's: the host's resource, and the union of the authorization servers
// and scopes of the schemes with that resource.
func (h *Host) ProtectedResourceMetadata() wire.ProtectedResourceMetadata {
	md := wire.ProtectedResourceMetadata{Resource: h.cfg.Resource, BearerMethodsSupported: []string{"header"}}
	seen := map[string]bool{}
	for _, sc := range h.r().mcp {
		for _, as := range sc.AuthorizationServers {
			if !seen["as "+as] {
				seen["as "+as] = true
				md.AuthorizationServers = append(md.AuthorizationServers, as)
			}
		}
		for _, s := range sc.ScopesSupported {
			if !seen["scope "+s] {
				seen["scope "+s] = true
				md.ScopesSupported = append(md.ScopesSupported, s)
			}
		}
	}
	return md
}

// Close ends every connection and stops every timer. It returns once every
// ServeConn has closed its connection and logged it, so that a graceful
// shutdown loses neither close frames nor log lines.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.serving.Wait()
	if h.shared != nil {
		h.shared.clear()
	}
}

// WebSocketHandler upgrades requests to WebSocket connections served by
// the host (mount it on "/" and "/ws"). When connectionToken is not empty
// the request must carry ?tkn= equal to it, compared in constant time, or
// it gets HTTP 403 before any upgrade. Behind a guard (NewGuard), which
// has vetted the Origin, the upgrade skips coder/websocket's own check
// (Origin host equal to Host); without one, that check applies.
func (h *Host) WebSocketHandler(connectionToken string) http.Handler {
	want := sha256.Sum256([]byte(connectionToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if connectionToken != "" {
			got := sha256.Sum256([]byte(r.URL.Query().Get("tkn")))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				h.log.Warn("websocket upgrade refused", "remote", r.RemoteAddr, "reason", "wrong or missing connection token")
				http.Error(w, "forbidden: wrong or missing connection token (?tkn=)", http.StatusForbidden)
				return
			}
		}
		_, guarded := guardedOrigin(r.Context())
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: guarded})
		if err != nil {
			h.log.Warn("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
			return
		}
		h.ServeConn(h.ctx, &wsConn{WSConn: wire.NewWSConn(c, h.maxMsg), ws: c})
	})
}

// wsConn is a WebSocket connection the host accepted: it can close with a
// status code and a reason.
type wsConn struct {
	*wire.WSConn
	ws *websocket.Conn
}

// closeWith closes the connection with an RFC 6455 §7.4 status code and a
// reason (at most 123 bytes).
func (c *wsConn) closeWith(code websocket.StatusCode, reason string) error {
	return c.ws.Close(code, reason)
}

// Why a connection ends, besides its peer closing it.
var (
	errShuttingDown = errors.New("host shutting down")
	errQueueFull    = fmt.Errorf("the client does not read its messages: %d are waiting (send queue full)", sendQueueSize)
)

// ServeConn runs one session on c until the peer closes it, ctx ends or
// the host is closed. It closes c before returning.
//
// Every message to the peer goes through the connection's send queue,
// written by a goroutine of its own: answers wait for room in the queue
// (the connection stops reading meanwhile), pushes never wait, and a push
// that finds the queue full closes the connection (WebSocket status 1008
// with the reason), so that a peer that does not read stalls no one else.
func (h *Host) ServeConn(ctx context.Context, c wire.Conn) {
	// Reads and writes end with ctx or the host, not with the session
	// (coder/websocket closes a connection at once when either's context
	// ends): a write under way when the queue overflows may still complete,
	// and the close frame with the reason then follows it.
	ioCtx, cancelIO := context.WithCancel(ctx)
	defer cancelIO()
	stopIO := context.AfterFunc(h.ctx, cancelIO)
	defer stopIO()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := h.open(c, cancel)
	if s == nil {
		c.Close()
		return
	}
	defer h.serving.Done()
	stop := context.AfterFunc(h.ctx, func() { cancel(errShuttingDown) })
	defer stop()

	reason := "closed by peer"
	written := make(chan struct{})
	go s.writeLoop(ctx, ioCtx, written)
	defer func() {
		cause := context.Cause(ctx)
		if cause == nil { // the peer closed: flush what is queued
			close(s.drain)
			<-written
		}
		cancel(nil)
		<-written
		s.waits.Wait() // authenticates waiting for a sign-in end with ctx
		h.closeSession(s)
		if wc, ok := c.(*wsConn); ok && errors.Is(cause, errQueueFull) {
			wc.closeWith(websocket.StatusPolicyViolation, "send queue full: the client does not read its messages")
		} else {
			c.Close()
		}
		h.log.Info("connection closed", "conn", s.id, "reason", reason)
	}()

	type read struct {
		data []byte
		err  error
	}
	reads := make(chan read)
	go func() {
		for {
			data, err := c.Read(ioCtx)
			select {
			case reads <- read{data, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, wire.ErrSkippedMessage) {
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			reason = errShuttingDown.Error()
			if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
				reason = cause.Error()
			}
			return
		case r := <-reads:
			switch {
			case errors.Is(r.err, wire.ErrSkippedMessage):
				h.log.Warn("message refused", "conn", s.id, "reason", r.err.Error())
				s.send(ctx, wire.NewErrorResponse(wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: %v", r.err)))
			case r.err != nil:
				switch {
				case ioCtx.Err() != nil: // the read ended with the host
					reason = errShuttingDown.Error()
				case !errors.Is(r.err, io.EOF) && websocket.CloseStatus(r.err) != websocket.StatusNormalClosure:
					reason = r.err.Error()
				}
				return
			default:
				s.handle(ctx, r.data)
			}
		}
	}
}

// open registers a connection, or returns nil once the host is closed.
func (h *Host) open(c wire.Conn, stop context.CancelCauseFunc) *session {
	transport := "custom"
	switch c.(type) {
	case *wsConn, *wire.WSConn:
		transport = "websocket"
	case *wire.StdioConn:
		transport = "stdio"
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.serving.Add(1)
	h.nextConn++
	s := &session{h: h, id: h.nextConn, conn: c, stop: stop, out: make(chan []byte, sendQueueSize), drain: make(chan struct{})}
	if h.shared == nil {
		s.own = &grantTable{owner: s, held: map[string]*held{}}
	}
	h.conns[s] = struct{}{}
	h.mu.Unlock()
	h.log.Info("connection opened", "conn", s.id, "transport", transport)
	return s
}

func (h *Host) closeSession(s *session) {
	h.mu.Lock()
	delete(h.conns, s)
	h.mu.Unlock()
	if s.own != nil {
		s.own.clear()
	}
}

// defaultRevokedRetention is how long a revoked JTI stays refused when
// NotifyRevoked is not told when the tokens expire.
const defaultRevokedRetention = 24 * time.Hour

// NotifyRevoked is called by the authorization server in the same process
// when it revokes tokens (RFC 7009): grants with those JTIs are dropped from
// the cache at once, refused from now on, and every connection holding one
// is pushed "revoked". until is when the tokens expire at the latest: the
// JTIs stay refused until then, or until the expiry of any of them the
// host has seen, whichever is later (zero until: 24 hours from now).
func (h *Host) NotifyRevoked(until time.Time, jtis ...string) {
	set := map[string]bool{}
	for _, j := range jtis {
		if j != "" {
			set[j] = true
		}
	}
	if len(set) == 0 {
		return
	}
	now := h.now()
	if until.IsZero() {
		until = now.Add(defaultRevokedRetention)
	}
	for _, sc := range h.r().schemes {
		if t := sc.checker.cache.dropJTIs(set); t.After(until) {
			until = t
		}
	}
	h.mu.Lock()
	for j, u := range h.revoked {
		if now.After(u) {
			delete(h.revoked, j)
		}
	}
	for j := range set {
		h.revoked[j] = until
	}
	tables := h.tables()
	h.mu.Unlock()
	for _, t := range tables {
		for _, e := range t.matching(func(g *Grant) bool { return set[g.JTI] }) {
			h.lapse(t, e, errRevoked)
		}
	}
}

// tables lists every grant table; h.mu must be held.
func (h *Host) tables() []*grantTable {
	if h.shared != nil {
		return []*grantTable{h.shared}
	}
	out := make([]*grantTable, 0, len(h.conns))
	for s := range h.conns {
		out = append(out, s.own)
	}
	return out
}

func (h *Host) isRevoked(jti string) bool {
	if jti == "" {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.revoked[jti]
	return ok
}

// validate checks token against one scheme, refusing revoked JTIs.
func (h *Host) validate(ctx context.Context, sc *scheme, token string, fresh bool) (*Grant, error) {
	g, err := sc.checker.check(ctx, token, fresh)
	if err != nil {
		return nil, err
	}
	if h.isRevoked(g.JTI) {
		sc.checker.cache.drop(token)
		return nil, errRevoked
	}
	return g, nil
}

// ValidateBearer validates a token presented on a request of the HTTP face
// (RFC 6750 §2.1) against each scheme with the host's resource (the token
// audience an MCP server accepts) in config order. It returns the grant
// of the first scheme that accepts it; or, when none does, the challenge to
// send (invalid_request without a token, invalid_token otherwise); or an
// error when the token could not be checked at all.
func (h *Host) ValidateBearer(ctx context.Context, token string) (*Grant, *wire.Challenge, error) {
	schemes := h.r().mcp // never empty: see Config.checkResolved
	first := schemes[0]
	for _, sc := range schemes {
		if sc.IsRequired() {
			first = sc
			break
		}
	}
	if token == "" {
		ch := h.challenge(first, schemeStatus{})
		return nil, &ch, nil
	}
	var rejected *wire.Challenge
	var failure error
	for _, sc := range schemes {
		g, err := h.validate(ctx, sc, token, false)
		if err == nil {
			h.log.Info("auth decision", "face", "http", "scheme", sc.ID, "subject", g.Subject, "outcome", "accepted")
			return g, nil, nil
		}
		var te *TokenError
		if !errors.As(err, &te) {
			failure = err
			continue
		}
		if rejected == nil {
			ch := h.challenge(sc, statusOf(te))
			rejected = &ch
		}
	}
	if rejected == nil {
		h.log.Warn("auth decision", "face", "http", "outcome", "error", "reason", failure.Error())
		return nil, nil, failure
	}
	h.log.Info("auth decision", "face", "http", "scheme", rejected.SchemeID, "outcome", "rejected", "reason", rejected.ErrorDescription)
	return nil, rejected, nil
}
