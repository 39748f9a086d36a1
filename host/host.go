package host

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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
	// decision, except that the HTTP face's acceptances are logged at
	// Debug and summed up at Info once a minute (when any). Default:
	// discard.
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

	// accepted and refused count the HTTP face's auth decisions since the
	// last summary line (see logSummary).
	accepted, refused atomic.Int64

	mu       sync.Mutex
	conns    map[*session]struct{}
	nextConn uint64
	// revoked holds the revoked ids and the held grants by id.
	revoked *revocations
	closed  bool           // set by Close: no new connection is served
	serving sync.WaitGroup // ServeConn calls under way
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

	initOnce sync.Once
	init     *initFixed // see initFixed
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
		sessions: &agentSessions{store: opts.Store}, conns: map[*session]struct{}{}}
	h.revoked = newRevocations()
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
	go h.summarize(authSummaryInterval)
	return h, nil
}

// authSummaryInterval is how often the HTTP face's auth decisions are
// summed up in one log line (accepted ones are logged only at Debug).
const authSummaryInterval = time.Minute

// summarize logs the decision counts every interval until the host closes.
func (h *Host) summarize(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
			h.logSummary(interval)
		}
	}
}

// logSummary logs, at Info, how many requests of the HTTP face were
// accepted and refused since the last summary, when any were.
func (h *Host) logSummary(interval time.Duration) {
	a, r := h.accepted.Swap(0), h.refused.Swap(0)
	if a == 0 && r == 0 {
		return
	}
	h.log.Info("auth summary", "face", "http", "accepted", a, "refused", r, "interval", interval)
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
		id := s.ID
		sc.checker = &checker{scheme: s.ID, v: v, cache: newGrantCache(h.now, ttl),
			validated: func() { h.log.Debug("token validated", "scheme", id, "validation", s.Validation.Type) }}
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
		h.revoked.unholdTable(h.shared)
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
		c, err := websocket.Accept(smallBuffers{w}, r, &websocket.AcceptOptions{InsecureSkipVerify: guarded})
		if err != nil {
			h.log.Warn("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
			return
		}
		// The session runs on a goroutine of its own and the handler
		// returns: net/http's goroutine for the connection ends, with its
		// grown stack and the buffers it keeps after the hijack (half the
		// memory of an idle connection).
		go h.ServeConn(h.ctx, &wsConn{WSConn: wire.NewWSConn(c, h.maxMsg), ws: c})
	})
}

// wsBufferSize is the size of a WebSocket connection's read and write
// buffers: JSON-RPC messages are small, and an idle connection keeps both.
const wsBufferSize = 1 << 10

// smallBuffers hands coder/websocket, which keeps the buffers of the
// hijacked HTTP connection for the WebSocket's life, buffers of
// wsBufferSize instead of net/http's 4 KiB ones; bytes the client sent
// after the upgrade request and net/http already read stay first.
type smallBuffers struct{ http.ResponseWriter }

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	n := brw.Reader.Buffered()
	if n > wsBufferSize {
		return c, brw, nil
	}
	buffered, _ := brw.Reader.Peek(n)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(buffered)), c), wsBufferSize)
	if _, err := br.Peek(n); err != nil { // into br's buffer, without reading c
		return nil, nil, err
	}
	return c, bufio.NewReadWriter(br, bufio.NewWriterSize(c, wsBufferSize)), nil
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

// abort ends a session's connection at once, without a closing handshake:
// a write that overran writeTimeout, or the host shutting down.
func (s *session) abort() {
	if wc, ok := s.conn.(*wsConn); ok {
		wc.ws.CloseNow()
		return
	}
	s.conn.Close()
}

// Why a connection ends, besides its peer closing it.
var (
	errShuttingDown = errors.New("host shutting down")
	errQueueFull    = fmt.Errorf("the client does not read its messages: %d are waiting (send queue full)", sendQueueSize)
)

// ServeConn runs one session on c until the peer closes it, ctx ends or
// the host is closed. It closes c before returning.
//
// Answers are written by the goroutine that reads the connection, after
// any queued pushes (the connection stops reading while the peer does not
// read); pushes never wait: they go through the connection's send queue,
// written by a goroutine that runs only while the queue is not empty, and
// a push that finds the queue full closes the connection (WebSocket
// status 1008 with the reason), so that a peer that does not read stalls
// no one else. An idle connection has one goroutine, its reader.
func (h *Host) ServeConn(ctx context.Context, c wire.Conn) {
	s := h.open(ctx, c)
	if s == nil {
		c.Close()
		return
	}
	reason := s.serve()
	if s.ctx.Err() == nil { // the peer closed: flush what is queued
		s.flushQueue()
	}
	s.ending.Do(func() { s.cancel(nil) }) // closed below, not by stop
	s.waits.Wait()                        // authenticates waiting for a sign-in end with s.ctx
	s.endWrites()
	h.closeSession(s)
	s.closeConn()
	h.log.Info("connection closed", "conn", s.id, "reason", reason)
	s.stopWatch()
	if s.cancelIO != nil {
		s.cancelIO()
	}
	h.serving.Done()
}

// serve reads and answers messages until the connection or the session
// ends, and says why.
func (s *session) serve() string {
	for {
		var data []byte
		var err error
		if s.readAsync != nil {
			data, err = s.readAsync(s.ioCtx)
		} else {
			data, err = s.conn.Read(s.ioCtx)
		}
		switch {
		case s.ctx.Err() != nil:
			if cause := context.Cause(s.ctx); !errors.Is(cause, context.Canceled) {
				return cause.Error()
			}
			return errShuttingDown.Error()
		case errors.Is(err, wire.ErrSkippedMessage):
			s.h.log.Warn("message refused", "conn", s.id, "reason", err.Error())
			s.send(s.ctx, wire.NewErrorResponse(wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: %v", err)))
		case err != nil:
			switch {
			case s.ioEnded.Load(): // the read ended with the host
				return errShuttingDown.Error()
			case !errors.Is(err, io.EOF) && websocket.CloseStatus(err) != websocket.StatusNormalClosure:
				return err.Error()
			}
			return "closed by peer"
		default:
			s.handle(s.ctx, data)
		}
	}
}

// stop ends the session with a cause, once: it writes nothing more and
// closes its connection once the write under way is done, which ends the
// read. That happens on a goroutine of its own, since a write that fails
// calls stop.
func (s *session) stop(cause error) {
	s.ending.Do(func() {
		s.cancel(cause)
		go func() {
			s.endWrites()
			s.closeConn()
		}()
	})
}

// shutdown ends the session when its ServeConn context or the host ends:
// reads and writes end at once, without waiting for a write under way.
func (s *session) shutdown(cause error) {
	s.stop(cause)
	s.ioEnded.Store(true)
	if s.cancelIO != nil {
		s.cancelIO()
	}
	if _, ok := s.conn.(*wsConn); ok {
		s.abort()
	}
}

// closeConn closes the connection once; a session stopped because its
// send queue was full closes a WebSocket with status 1008 and the reason.
func (s *session) closeConn() {
	s.closing.Do(func() {
		if wc, ok := s.conn.(*wsConn); ok && errors.Is(context.Cause(s.ctx), errQueueFull) {
			wc.closeWith(websocket.StatusPolicyViolation, "send queue full: the client does not read its messages")
		} else {
			s.conn.Close()
		}
	})
}

// readAsync reads c from a goroutine of its own, for connections whose
// Read ignores its context: the returned read returns ctx's error once ctx
// ends, while the goroutine may stay blocked until c delivers.
func readAsync(ctx context.Context, c wire.Conn) func(context.Context) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	reads := make(chan read)
	var once sync.Once
	return func(ioCtx context.Context) ([]byte, error) {
		once.Do(func() {
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
		})
		select {
		case r := <-reads:
			return r.data, r.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// open registers a connection, or returns nil once the host is closed.
//
// The session's context ends with the session (see stop). It is no child
// of ctx: the end of ctx, or of the host, ends the session through one
// AfterFunc each (one in all when ctx is the host's, as for WebSocket
// connections), so that an idle connection holds no more contexts than
// that. Reads and writes end with ctx or the host, not with the session
// (coder/websocket closes a connection at once when either's context
// ends): a write under way when the queue overflows may still complete,
// and the close frame with the reason then follows it. A WebSocket is
// read and written with a context that never ends (coder/websocket arms a
// timer per message for one that can), and aborted when ctx or the host
// ends instead (see shutdown).
func (h *Host) open(ctx context.Context, c wire.Conn) *session {
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
	s := &session{h: h, id: h.nextConn, conn: c, ioCtx: context.WithoutCancel(ctx)}
	s.ctx, s.cancel = context.WithCancelCause(s.ioCtx)
	if _, ok := c.(*wsConn); !ok {
		s.ioCtx, s.cancelIO = context.WithCancel(s.ioCtx)
		// Only a WebSocket read ends when the connection closes; any
		// other (stdio) is read by a goroutine the session need not wait for.
		s.readAsync = readAsync(s.ctx, c)
	}
	s.overrun = time.AfterFunc(writeTimeout, s.abort)
	s.overrun.Stop()
	if h.shared == nil {
		s.own = &grantTable{owner: s, held: map[string]*held{}}
	}
	h.conns[s] = struct{}{}
	h.mu.Unlock()
	if ctx == h.ctx {
		s.stopWatch = context.AfterFunc(ctx, func() { s.shutdown(errShuttingDown) })
	} else {
		stopCtx := context.AfterFunc(ctx, func() { s.shutdown(context.Cause(ctx)) })
		stopHost := context.AfterFunc(h.ctx, func() { s.shutdown(errShuttingDown) })
		s.stopWatch = func() bool { return stopCtx() && stopHost() }
	}
	h.log.Info("connection opened", "conn", s.id, "transport", transport)
	return s
}

func (h *Host) closeSession(s *session) {
	h.mu.Lock()
	delete(h.conns, s)
	h.mu.Unlock()
	if s.own != nil {
		h.revoked.unholdTable(s.own)
		s.own.clear()
	}
}

// defaultRevokedRetention is how long a revoked id stays refused when
// NotifyRevoked is not told when the tokens expire.
const defaultRevokedRetention = 24 * time.Hour

// NotifyRevoked is called by the authorization server in the same process
// when it revokes tokens (RFC 7009): ids are access tokens' jtis or token
// families' ids (the sid claim of each of the family's access tokens).
// Tokens carrying one are refused from now on, and every connection
// holding one is pushed "revoked". until is when the tokens expire at the
// latest: the ids stay refused until then, or until the expiry of a held
// grant carrying one, whichever is later (zero until: 24 hours from now).
// Its cost is that of the ids and of the grants holding them.
func (h *Host) NotifyRevoked(until time.Time, ids ...string) {
	set := map[string]bool{}
	for _, j := range ids {
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
	hit := h.revoked.add(now, until, set)
	var later time.Time
	for e := range hit {
		if e.grant.Expiry.After(until) && e.grant.Expiry.After(later) {
			later = e.grant.Expiry
		}
	}
	if !later.IsZero() {
		h.revoked.add(now, later, set)
	}
	for e, t := range hit {
		h.lapse(t, e, errRevoked)
	}
}

func (h *Host) isRevoked(g *Grant) bool { return h.revoked.revoked(g) }

// validate checks token against one scheme, refusing revoked JTIs.
func (h *Host) validate(ctx context.Context, sc *scheme, token string, fresh bool) (*Grant, error) {
	g, err := sc.checker.check(ctx, token, fresh)
	if err != nil {
		return nil, err
	}
	if h.isRevoked(g) {
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
			h.accepted.Add(1)
			if h.log.Enabled(ctx, slog.LevelDebug) { // no arguments to box otherwise
				h.log.Debug("auth decision", "face", "http", "scheme", sc.ID, "subject", g.Subject, "outcome", "accepted")
			}
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
	h.refused.Add(1)
	h.log.Info("auth decision", "face", "http", "scheme", rejected.SchemeID, "outcome", "rejected", "reason", rejected.ErrorDescription)
	return nil, rejected, nil
}
