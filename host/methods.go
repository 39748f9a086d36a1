package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// session is one connection.
type session struct {
	h    *Host
	id   uint64
	conn wire.Conn
	own  *grantTable // nil when the auth scope is host
	// ctx ends with the session, with a cause (see stop); cancel ends it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	ending sync.Once // ctx ended by stop or ServeConn
	// ioCtx is the context of reads and writes: it ends with ServeConn's
	// context or the host (cancelIO; nil for a WebSocket, whose ioCtx
	// never ends: see open); ioEnded says it did.
	ioCtx    context.Context
	cancelIO context.CancelFunc
	ioEnded  atomic.Bool
	// stopWatch stops the AfterFuncs that end the session with ServeConn's
	// context or the host.
	stopWatch func() bool
	// readAsync, when set, reads a connection whose Read ignores its
	// context (see readAsync).
	readAsync func(context.Context) ([]byte, error)
	closing   sync.Once // the connection is closed
	// overrun aborts a write that takes longer than writeTimeout (one
	// timer per connection, not per message).
	overrun *time.Timer
	// wmu serialises writes: whoever holds it writes the queued pushes
	// first, then its own answer (see send, notify).
	wmu sync.Mutex
	// qmu guards the send queue of pushes, whether a goroutine is
	// writing it (draining) and whether writes have ended.
	qmu      sync.Mutex
	queue    [][]byte
	draining bool
	ended    bool

	mu          sync.Mutex
	initialized bool
	dialect     wire.Dialect
	// ahp1: the published dialect's negotiated version is 1.x, whose
	// authenticate with an empty token signs out and which takes
	// auth/revoked (accountRevocation).
	ahp1 bool
	// rootSubscribed: the published dialect's client subscribed to the
	// root channel (initialSubscriptions or subscribe).
	rootSubscribed bool
	// sessionSubs are the session channels the published dialect's client
	// subscribed to.
	sessionSubs map[string]bool
	// upstreamWaits are the ACP upstream auth methods whose authenticate
	// waits for a sign-in (authenticateUpstream); waits counts them.
	upstreamWaits map[string]bool
	waits         sync.WaitGroup
}

func (s *session) table() *grantTable {
	if s.own != nil {
		return s.own
	}
	return s.h.shared
}

// send writes an answer from the connection's reading goroutine, after
// the pushes queued before it: while the peer does not read, the write
// waits, and the connection reads nothing more, which slows its peer down.
func (s *session) send(ctx context.Context, m *wire.Message) {
	if b := s.encode(m); b != nil {
		s.sendEncoded(ctx, b)
	}
}

// sendEncoded is send for a message already encoded.
func (s *session) sendEncoded(ctx context.Context, b []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if ctx.Err() == nil && s.flush() {
		s.write(b)
	}
}

// notify queues a push without waiting, and starts a goroutine to write
// the queue unless one runs (an idle connection has none). When the queue
// is full the peer has stopped reading: the connection is closed rather
// than let it hold back the pushes to everyone else.
func (s *session) notify(m *wire.Message) {
	b := s.encode(m)
	if b == nil {
		return
	}
	s.qmu.Lock()
	if s.ended {
		s.qmu.Unlock()
		return
	}
	if len(s.queue) >= sendQueueSize {
		s.qmu.Unlock()
		s.h.log.Warn("send queue full; closing the connection", "conn", s.id, "queued", sendQueueSize)
		s.stop(errQueueFull)
		return
	}
	s.queue = append(s.queue, b)
	start := !s.draining
	s.draining = true
	s.qmu.Unlock()
	if start {
		go func() {
			for {
				s.flushQueue()
				s.qmu.Lock()
				if s.ended || len(s.queue) == 0 {
					s.draining = false
					s.qmu.Unlock()
					return
				}
				s.qmu.Unlock()
			}
		}()
	}
}

// flushQueue writes the queued pushes.
func (s *session) flushQueue() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.flush()
}

// flush writes the queued pushes, s.wmu held; false when writes have
// ended or one failed.
func (s *session) flush() bool {
	for {
		s.qmu.Lock()
		if s.ended || len(s.queue) == 0 {
			ok := !s.ended
			s.qmu.Unlock()
			return ok
		}
		b := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.qmu.Unlock()
		if !s.write(b) {
			return false
		}
	}
}

// endWrites drops the queue, refuses further writes and waits for the
// write under way, if any.
func (s *session) endWrites() {
	s.qmu.Lock()
	s.ended, s.queue = true, nil
	s.qmu.Unlock()
	s.wmu.Lock()
	s.wmu.Unlock()
}

// write writes one message, s.wmu held, within writeTimeout; a failed
// write ends the connection.
func (s *session) write(b []byte) bool {
	s.overrun.Reset(writeTimeout)
	err := s.conn.Write(s.ioCtx, b)
	s.overrun.Stop()
	if err != nil {
		s.h.log.Debug("cannot write", "conn", s.id, "err", err)
		s.qmu.Lock()
		s.ended = true
		s.qmu.Unlock()
		s.stop(fmt.Errorf("cannot write: %w", err))
		return false
	}
	return true
}

func (s *session) encode(m *wire.Message) []byte {
	b, err := wire.Encode(m)
	if err != nil {
		s.h.log.Error("cannot encode a message", "conn", s.id, "err", err)
		return nil
	}
	return b
}

// push sends an auth state notification in the connection's dialect:
// notify/authRequired (design) or auth/required (published, which has no
// "authenticated" and sends revoked as "required").
func (s *session) push(sc *scheme, state string, ch *wire.Challenge) {
	s.mu.Lock()
	ok, d := s.initialized, s.dialect
	s.mu.Unlock()
	if !ok {
		return
	}
	var m *wire.Message
	var err error
	if d == wire.DialectPublished {
		if state == wire.StateAuthenticated {
			return
		}
		// AHP's AuthRequiredReason "expired" is "expired or revoked".
		reason := wire.StateRequired
		if state == wire.StateExpired || state == wire.StateRevoked {
			reason = wire.StateExpired
		}
		m, err = wire.NewNotification(wire.MethodAuthRequired, wire.AuthRequiredParams{Channel: wire.RootChannel, Resource: s.h.metadata(sc), Reason: reason})
	} else {
		if state == stateInvalid {
			state = wire.StateRequired
		}
		m, err = wire.NewNotification(wire.MethodNotifyAuthRequired, wire.NotifyAuthRequiredParams{SchemeID: sc.ID, Resource: sc.Resource, State: state, Challenge: ch})
	}
	if err == nil {
		s.notify(m)
	}
}

// allMethods are the methods a client may call (for the error before
// initialize).
var allMethods = append([]string{wire.MethodInitialize, wire.MethodPing, wire.MethodAuthenticate, wire.MethodGetAuthState, wire.MethodAuthStatus}, gatedMethods...)

// handle answers one incoming message. Malformed messages get the
// JSON-RPC error (JSON-RPC 2.0 §5.1) and the connection keeps serving.
func (s *session) handle(ctx context.Context, data []byte) {
	h := s.h
	m, derr := wire.Decode(data)
	if derr != nil {
		var id wire.ID
		if m != nil {
			id = m.ID
		}
		h.log.Warn("message refused", "conn", s.id, "reason", derr.Message)
		s.send(ctx, wire.NewErrorResponse(id, derr))
		return
	}
	if m.IsResponse() {
		return // the host sends no requests
	}
	s.mu.Lock()
	initialized := s.initialized
	s.mu.Unlock()
	if m.IsNotification() {
		switch {
		case m.Method == wire.MethodUnsubscribe:
			s.unsubscribe(m.Params)
		case m.Method == wire.MethodAuthRevoked:
			s.authRevoked(m.Params)
		case m.Method != wire.MethodSetAuthToken:
			h.log.Debug("notification ignored", "conn", s.id, "method", m.Method)
		case !initialized:
			h.log.Warn("setAuthToken before initialize ignored", "conn", s.id)
		default:
			s.setAuthToken(ctx, m.Params)
		}
		return
	}
	s.mu.Lock()
	published, acp := s.dialect == wire.DialectPublished, s.dialect == wire.DialectACP
	s.mu.Unlock()
	if !initialized {
		published = hasChannel(m.Params)
	}
	// The shipped AHP host answers -32601 before initialize and to a second
	// initialize; the design dialect answers -32600 (PROTOCOL.md).
	early := wire.CodeInvalidRequest
	if published {
		early = wire.CodeMethodNotFound
	}
	var result any
	var rerr *wire.Error
	switch {
	case m.Method == wire.MethodInitialize && initialized:
		rerr = wire.Errorf(early, "invalid request: the connection is already initialized")
	case m.Method == wire.MethodInitialize:
		var d wire.Dialect
		var root bool
		result, d, root, rerr = h.initialize(m.Params)
		if rerr == nil {
			s.mu.Lock()
			s.initialized, s.dialect, s.rootSubscribed = true, d, root
			if ir, ok := result.(*initializeResult); ok && d == wire.DialectPublished {
				s.ahp1 = ir.AccountRevocation != nil
			}
			s.mu.Unlock()
			if d == wire.DialectPublished {
				s.initialSessions(ctx, m.Params, result.(*initializeResult))
			}
			h.log.Info("connection initialized", "conn", s.id, "dialect", d.String())
		}
	case m.Method == wire.MethodPing && published:
		result = json.RawMessage("null") // AHP PingParams: no payload either way
	case m.Method == methodReconnect && !initialized:
		rerr = reconnect(m.Params)
	case !initialized && m.Method != wire.MethodPing && (published || slices.Contains(allMethods, m.Method)):
		rerr = wire.Errorf(early, "invalid request: call initialize before %s", m.Method)
	case m.Method == wire.MethodSubscribe && published:
		result, rerr = s.subscribe(ctx, m.Params)
	case published && slices.Contains([]string{wire.MethodCreateSession, wire.MethodListSessions, wire.MethodDisposeSession}, m.Method):
		result, rerr = s.shippedSession(ctx, m.Method, m.Params)
	case m.Method == wire.MethodLogout && acp:
		h.logoutUpstreams(ctx, h.viewGrant(s.table().view(h.now())), "")
		for _, sc := range h.r().schemes {
			h.release(s.table(), sc, s)
		}
		h.log.Info("auth decision", "conn", s.id, "outcome", "logged out")
		result = struct{}{} // ACP LogoutResponse: {}
	case m.Method == wire.MethodAuthenticate && acp && upstreamMethodID(m.Params) != "":
		s.authenticateUpstream(ctx, m.ID, upstreamMethodID(m.Params))
		return // answered now or once the sign-in ends
	case m.Method == wire.MethodAuthenticate:
		result, rerr = s.authenticate(ctx, m.Params)
	case m.Method == wire.MethodSetAuthToken:
		rerr = wire.Errorf(wire.CodeInvalidRequest, "invalid request: setAuthToken is a notification (send it without an id), and deprecated: use authenticate")
	default:
		result, rerr = h.call(ctx, m.Method, m.Params, s.table().view(h.now()), h.r().schemes, []any{"conn", s.id})
	}
	if acp && rerr != nil && rerr.Code == wire.CodeAuthRequired {
		e := *rerr // ACP's AuthRequired, same data
		e.Code = wire.CodeACPAuthRequired
		rerr = &e
	}
	if h.log.Enabled(ctx, slog.LevelDebug) { // no arguments to box otherwise
		code := 0
		if rerr != nil {
			code = rerr.Code
		}
		h.log.Debug("request answered", "conn", s.id, "method", m.Method, "error", code)
	}
	s.answer(ctx, m.ID, result, rerr)
}

// answer sends the response to request id: result, or rerr when set.
func (s *session) answer(ctx context.Context, id wire.ID, result any, rerr *wire.Error) {
	if rerr == nil {
		b, err := wire.EncodeResult(id, result)
		if err == nil {
			s.sendEncoded(ctx, b)
			return
		}
		s.h.log.Error("cannot encode a result", "conn", s.id, "err", err)
		rerr = errEncodeResult
	}
	s.send(ctx, wire.NewErrorResponse(id, rerr))
}

var errEncodeResult = wire.Errorf(wire.CodeInternalError, "internal error: cannot encode the result")

func respond(id wire.ID, result any, rerr *wire.Error) *wire.Message {
	if rerr != nil {
		return wire.NewErrorResponse(id, rerr)
	}
	m, err := wire.NewResult(id, result)
	if err != nil {
		return wire.NewErrorResponse(id, errEncodeResult)
	}
	return m
}

// Dispatch answers one request of a face that carries a token per request
// (the HTTP face, RFC 6750 §2.1): grants are what that request's token
// established (see ValidateBearer). Gated methods are checked against them
// exactly as on a connection, so a missing scope comes back as -32007 with
// an insufficient_scope challenge. authenticate and setAuthToken belong to
// connections and are refused. A notification gets no answer (nil).
func (h *Host) Dispatch(ctx context.Context, req *wire.Message, grants ...*Grant) *wire.Message {
	if !req.IsRequest() {
		return nil
	}
	var result any
	var rerr *wire.Error
	switch req.Method {
	case wire.MethodInitialize:
		result, _, _, rerr = h.initialize(req.Params)
	case wire.MethodAuthenticate, wire.MethodSetAuthToken:
		rerr = wire.Errorf(wire.CodeMethodNotFound, "%s is not available here: send the token in the Authorization header (RFC 6750 §2.1)", req.Method)
	default:
		result, rerr = h.call(ctx, req.Method, req.Params, viewOf(grants), h.r().mcp, []any{"face", "http"})
	}
	return respond(req.ID, result, rerr)
}

// call answers the methods that need no connection state beyond the auth
// view: ping, the auth-state query and the gated methods. schemes are the
// requirements of the face the call came by: every scheme on a connection,
// the schemes with the host's resource on the HTTP face. who says where
// the request came from, for the log.
func (h *Host) call(ctx context.Context, method string, params json.RawMessage, v authView, schemes []*scheme, who []any) (any, *wire.Error) {
	switch method {
	case wire.MethodPing:
		return struct{}{}, nil
	case wire.MethodGetAuthState, wire.MethodAuthStatus:
		return h.authState(v, schemes), nil
	}
	if !slices.Contains(gatedMethods, method) {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "method %q not found", method)
	}
	if rerr := h.gate(method, v, schemes); rerr != nil {
		d, _ := rerr.AuthRequired()
		for _, ch := range d.Challenges {
			h.log.Info("auth decision", append(who, "method", method, "scheme", ch.SchemeID, "subject", subjectOf(v, ch.SchemeID),
				"outcome", "denied", "reason", ch.Error+": "+ch.ErrorDescription)...)
		}
		return nil, rerr
	}
	if rerr := h.upstreamGate(ctx, method, v); rerr != nil {
		return nil, rerr
	}
	owner := h.principal(v)
	switch method {
	case wire.MethodWhoami:
		return h.whoami(v), nil
	case wire.MethodEcho:
		if params == nil {
			return json.RawMessage("null"), nil
		}
		return params, nil
	case wire.MethodCreateSession:
		s, rerr, err := h.sessions.create(ctx, owner, "", h.now())
		if err != nil {
			h.log.Error("createSession failed", append(who, "err", err)...)
			return nil, rerr
		}
		if rerr != nil {
			h.log.Warn("createSession refused", append(who, "subject", owner, "reason", "session limit")...)
			return nil, rerr
		}
		return s, nil
	case wire.MethodListSessions:
		all, err := h.sessions.list(ctx, owner)
		if err != nil {
			h.log.Error("listSessions failed", append(who, "err", err)...)
			return nil, errSessionStore
		}
		return map[string]any{"sessions": all}, nil
	default: // disposeSession
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.SessionID == "" {
			return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: disposeSession needs {"sessionId": "…"}`)
		}
		found, err := h.sessions.dispose(ctx, owner, p.SessionID)
		if err != nil {
			h.log.Error("disposeSession failed", append(who, "err", err)...)
			return nil, errSessionStore
		}
		if !found {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: no session %q", p.SessionID)
		}
		return map[string]bool{"disposed": true}, nil
	}
}

func subjectOf(v authView, id string) string {
	if g := v[id].grant; g != nil {
		return g.Subject
	}
	return ""
}

// principal is whom agent sessions belong to: the subject of the first
// live grant in config order.
func (h *Host) principal(v authView) string {
	for _, sc := range h.r().schemes {
		if g := v[sc.ID].grant; g != nil {
			return g.Subject
		}
	}
	return ""
}

func (h *Host) whoami(v authView) map[string][]wire.WhoamiScheme {
	out := []wire.WhoamiScheme{}
	for _, sc := range h.r().schemes {
		g := v[sc.ID].grant
		if g == nil {
			continue
		}
		w := wire.WhoamiScheme{SchemeID: sc.ID, Subject: g.Subject, ClientID: g.ClientID, Scopes: g.Scopes}
		if w.Scopes == nil {
			w.Scopes = []string{}
		}
		if !g.Expiry.IsZero() {
			w.ExpiresAt = g.Expiry.UTC().Format(time.RFC3339)
		}
		out = append(out, w)
	}
	return map[string][]wire.WhoamiScheme{"schemes": out}
}

// hasChannel reports whether params carry "channel", as every shipped AHP
// command's params do (AHP types/common/commands.ts, BaseParams): such a
// request before initialize is answered in the published dialect.
func hasChannel(params json.RawMessage) bool {
	var p struct {
		Channel *string `json:"channel"`
	}
	return json.Unmarshal(params, &p) == nil && p.Channel != nil
}

// rootSnapshot is the published dialect's root channel state: one agent
// whose AgentInfo (AHP types/channels-root/state.ts) lists a protected
// resource per scheme. fromSeq is the serverSeq it reflects.
func (h *Host) rootSnapshot() wire.Snapshot {
	prs := []wire.ProtectedResourceMetadata{}
	for _, sc := range h.r().schemes {
		prs = append(prs, h.metadata(sc))
	}
	agent := wire.SnapshotAgent{Provider: "agentauth", DisplayName: "agentauth", Description: "agentauth agent host for " + h.cfg.Resource,
		Models: []json.RawMessage{}, ProtectedResources: prs}
	return wire.Snapshot{Resource: wire.RootChannel, State: wire.SnapshotState{Agents: []wire.SnapshotAgent{agent}}, FromSeq: h.seq.Load()}
}

// initialize answers both dialects (PROTOCOL.md "initialize"): the design
// dialect's resourceMetadata always, and, when the client offered
// protocolVersions, the published dialect's version and a root snapshot if
// initialSubscriptions lists the root channel (reported as root).
func (h *Host) initialize(params json.RawMessage) (any, wire.Dialect, bool, *wire.Error) {
	var p wire.InitializeParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, 0, false, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
		}
	}
	d := p.Dialect()
	root := false
	fixed := h.r().initFixed(h)
	if fixed.err != nil {
		return nil, 0, false, wire.Errorf(wire.CodeInternalError, "internal error: cannot encode the resource metadata")
	}
	res := &initializeResult{ServerSeq: h.seq.Load(), Snapshots: []any{}, ResourceMetadata: fixed.resourceMetadata,
		AgentCapabilities: agentCapabilities, AuthMethods: fixed.authMethodsJSON}
	if d == wire.DialectPublished {
		v, ok := negotiate(p.ProtocolVersions)
		if !ok {
			return nil, d, false, wire.Errorf(wire.CodeUnsupportedVersion, "unsupported protocol version %s: this host speaks %s",
				strings.Join(p.ProtocolVersions, ", "), strings.Join(wire.PublishedSupportedVersions, ", ")).
				WithData(wire.UnsupportedVersionData{SupportedVersions: wire.PublishedSupportedVersions})
		}
		// Like VS Code's host (protocolServerHandler.ts,
		// _addInitialSubscription), a channel this host does not have gets
		// no snapshot rather than a refused initialize.
		res.ProtocolVersion = v
		if !strings.HasPrefix(v, "0.") {
			// AHP 1.x: this host takes auth/revoked
			// (types/authentication.test.ts) and names itself
			// (Implementation, types/common/commands.ts).
			res.AccountRevocation = json.RawMessage(`{}`)
			res.ServerInfo = map[string]string{"name": "agentauth", "version": h.version}
		}
		if root = slices.Contains(p.InitialSubscriptions, wire.RootChannel); root {
			res.Snapshots = []any{h.rootSnapshot()}
		}
	} else if d == wire.DialectACP {
		// ACP's InitializeResponse (schema 1.7.0) and nothing else: an
		// unsupported protocolVersion is answered with the latest one (the
		// client decides whether to disconnect); capabilities are objects
		// whose presence is the flag.
		acp := acpInitializeResult{ProtocolVersion: wire.DesignProtocolVersion, AgentCapabilities: acpAgentCapabilities,
			AgentInfo: map[string]string{"name": "agentauth", "version": h.version}, AuthMethods: fixed.authMethodsJSON}
		if up := h.acpUpstreamMethods(); len(up) > 0 {
			acp.AuthMethods = slices.Concat(fixed.authMethods, up)
		}
		return acp, d, false, nil
	} else {
		if p.ProtocolVersion != nil && *p.ProtocolVersion != wire.DesignProtocolVersion {
			supported := append([]string{fmt.Sprint(wire.DesignProtocolVersion)}, wire.PublishedProtocolVersions...)
			return nil, d, false, wire.Errorf(wire.CodeUnsupportedVersion, "unsupported protocol version %d", *p.ProtocolVersion).
				WithData(wire.UnsupportedVersionData{SupportedVersions: supported})
		}
		res.ProtocolVersion = wire.DesignProtocolVersion
	}
	return res, d, root, nil
}

// initializeResult is initialize's answer in every dialect; its members
// are in the order encoding/json writes a map's (sorted by name).
type initializeResult struct {
	// AccountRevocation and ServerInfo are AHP 1.x's (absent before).
	AccountRevocation json.RawMessage   `json:"accountRevocation,omitempty"`
	AgentCapabilities any               `json:"agentCapabilities"`
	AgentInfo         map[string]string `json:"agentInfo,omitempty"`
	// AuthMethods is a []wire.AuthMethod or its JSON.
	AuthMethods      any               `json:"authMethods"`
	ProtocolVersion  any               `json:"protocolVersion"`
	ResourceMetadata json.RawMessage   `json:"resourceMetadata"`
	ServerInfo       map[string]string `json:"serverInfo,omitempty"`
	ServerSeq        int64             `json:"serverSeq"`
	// Snapshots are wire.Snapshot (the root channel) and
	// wire.SessionSnapshot values.
	Snapshots []any `json:"snapshots"`
}

// acpInitializeResult is ACP's InitializeResponse (schema 1.7.0).
type acpInitializeResult struct {
	AgentCapabilities json.RawMessage   `json:"agentCapabilities"`
	AgentInfo         map[string]string `json:"agentInfo"`
	// AuthMethods is a []wire.AuthMethod or its JSON.
	AuthMethods     any `json:"authMethods"`
	ProtocolVersion int `json:"protocolVersion"`
}

// The agent capabilities initialize announces: the design and published
// dialects' flags, and ACP's: auth.logout (an object whose presence is the
// flag, schema 1.7.0), auth.status (RFD get-auth-state: auth/status) and
// getAuthState (seed 003's name of the same query).
var (
	agentCapabilities    = json.RawMessage(`{"auth":{"status":true},"getAuthState":true}`)
	acpAgentCapabilities = json.RawMessage(`{"auth":{"logout":{},"status":true},"getAuthState":true}`)
)

// initFixed is the part of initialize's answer that depends on the
// schemes only, built once per config (a reload builds new
// requirements) rather than per connection.
type initFixed struct {
	resourceMetadata json.RawMessage
	authMethods      []wire.AuthMethod
	authMethodsJSON  json.RawMessage
	err              error
}

// initFixed builds, on first use, what initialize says about r's schemes:
// the design dialect's resourceMetadata and an ACP auth method per scheme.
func (r *requirements) initFixed(h *Host) *initFixed {
	r.initOnce.Do(func() {
		rm := wire.ResourceMetadata{Resource: h.cfg.Resource, AuthSchemes: []wire.AuthScheme{}}
		methods := []wire.AuthMethod{}
		for _, sc := range r.schemes {
			as := sc.AuthorizationServers
			if as == nil {
				as = []string{}
			}
			rm.AuthSchemes = append(rm.AuthSchemes, wire.AuthScheme{Scheme: wire.SchemeBearer, ID: sc.ID, Label: sc.Label, Resource: sc.Resource,
				AuthorizationServers: as, ScopesSupported: sc.ScopesSupported, Required: sc.IsRequired()})
			desc := "bearer token"
			if len(as) > 0 {
				desc += " from " + strings.Join(as, ", ")
			}
			methods = append(methods, wire.AuthMethod{ID: sc.ID, Name: cmp.Or(sc.Label, sc.ID), Description: desc, Type: "agent",
				Meta: map[string]any{wire.ACPOAuthMetaKey: h.metadata(sc)}})
		}
		f := &initFixed{authMethods: methods}
		if f.resourceMetadata, f.err = json.Marshal(rm); f.err == nil {
			f.authMethodsJSON, f.err = json.Marshal(methods)
		}
		r.init = f
	})
	return r.init
}

// subscribe answers AHP's subscribe (types/common/commands.ts): the
// snapshot of the root channel or of a session the caller's principal
// owns.
func (s *session) subscribe(ctx context.Context, params json.RawMessage) (any, *wire.Error) {
	var p wire.SubscribeParams
	if err := json.Unmarshal(params, &p); err != nil || p.Channel == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: subscribe needs {"channel": "%s"} or a session URI`, wire.RootChannel)
	}
	if p.Channel != wire.RootChannel {
		snap, rerr := s.sessionSnapshot(ctx, p.Channel)
		if rerr != nil {
			return nil, rerr
		}
		return map[string]any{"snapshot": snap}, nil
	}
	s.mu.Lock()
	s.rootSubscribed = true
	s.mu.Unlock()
	snap := s.h.rootSnapshot()
	return wire.SubscribeResult{Snapshot: &snap}, nil
}

// sessionSnapshot subscribes the connection to the session channel ch
// and answers its snapshot: a SessionState with the session's summary,
// lifecycle ready and no turns (AHP types/channels-session/state.ts). A
// session that is not the caller principal's is SessionNotFound, as VS
// Code's host answers a channel it cannot restore (agentService.ts,
// subscribe → restoreSession).
func (s *session) sessionSnapshot(ctx context.Context, ch string) (*wire.SessionSnapshot, *wire.Error) {
	h := s.h
	owner := h.principal(s.table().view(h.now()))
	all, err := h.sessions.list(ctx, owner)
	if err != nil {
		h.log.Error("subscribe failed", "conn", s.id, "err", err)
		return nil, errSessionStore
	}
	i := slices.IndexFunc(all, func(a agentSession) bool { return a.ID == ch })
	if i < 0 {
		return nil, wire.Errorf(codeSessionNotFound, "cannot subscribe to %q: no such session of yours; create it with createSession (listSessions lists yours)", ch)
	}
	s.mu.Lock()
	if s.sessionSubs == nil {
		s.sessionSubs = map[string]bool{}
	}
	s.sessionSubs[ch] = true
	s.mu.Unlock()
	return &wire.SessionSnapshot{Resource: ch, State: wire.SessionState{Summary: summary(all[i]), Lifecycle: wire.SessionLifecycleReady,
		Turns: []json.RawMessage{}}, FromSeq: h.seq.Load()}, nil
}

// initialSessions adds to res the snapshot of every session channel that
// initialize's initialSubscriptions names and the caller may see; like
// VS Code's host (protocolServerHandler.ts, _addInitialSubscription), a
// channel it cannot have gets no snapshot rather than a refused
// initialize.
func (s *session) initialSessions(ctx context.Context, params json.RawMessage, res *initializeResult) {
	var p wire.InitializeParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	for _, ch := range p.InitialSubscriptions {
		if ch == wire.RootChannel {
			continue
		}
		if snap, rerr := s.sessionSnapshot(ctx, ch); rerr == nil {
			res.Snapshots = append(res.Snapshots, snap)
		}
	}
}

// summary is a session's SessionSummary (AHP
// types/channels-session/state.ts): idle, titled by its URI, its times ISO
// 8601 like Date.prototype.toISOString, as VS Code's host answers and its
// client parses (Date.parse).
func summary(a agentSession) wire.SessionSummary {
	t, _ := time.Parse(time.RFC3339, a.CreatedAt)
	at := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return wire.SessionSummary{Resource: a.ID, Provider: shippedProvider, Title: a.ID, Status: wire.SessionStatusIdle, CreatedAt: at, ModifiedAt: at}
}

// authRevoked is AHP 1.x's client notification auth/revoked {channel,
// resource, account} (types/authentication.test.ts): the credential this
// connection holds for resource is released when it belongs to account
// (the grant's issuer is the account's authority and its subject the
// account's id); a grant of another account stays. Before 1.x, and for a
// malformed one, nothing happens (a notification has no answer).
func (s *session) authRevoked(params json.RawMessage) {
	h := s.h
	s.mu.Lock()
	ahp1 := s.ahp1
	s.mu.Unlock()
	var p wire.AuthRevokedParams
	if !ahp1 || json.Unmarshal(params, &p) != nil || p.Resource == "" || p.Account.ID == "" {
		h.log.Debug("auth/revoked ignored", "conn", s.id)
		return
	}
	view := s.table().view(h.now())
	for _, sc := range h.r().byResource(p.Resource) {
		g := view[sc.ID].grant
		if g == nil || g.Subject != p.Account.ID || g.Issuer != p.Account.Authority {
			continue
		}
		h.release(s.table(), sc, s)
		h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "revoked by the client")
	}
}

// unsubscribe is AHP's unsubscribe notification.
func (s *session) unsubscribe(params json.RawMessage) {
	var p wire.SubscribeParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	if p.Channel == wire.RootChannel {
		s.rootSubscribed = false
	}
	delete(s.sessionSubs, p.Channel)
	s.mu.Unlock()
}

// negotiate picks the highest of the offered AHP versions that one of
// PublishedSupportedVersions admits and that is not newer than the
// version this host speaks (PublishedProtocolVersions[0]): a host that
// knows 0.9.0 cannot speak 0.9.3 (VS Code's
// common/state/protocol/version/negotiation.ts, isCompatibleProtocolVersion).
func negotiate(offered []string) (string, bool) {
	own, _ := parseSemver(wire.PublishedProtocolVersions[0])
	best, bestV := "", semver{}
	for _, o := range offered {
		v, ok := parseSemver(o)
		if !ok || own.less(v) || !slices.ContainsFunc(wire.PublishedSupportedVersions, func(r string) bool { return caretAdmits(r, v) }) {
			continue
		}
		if best == "" || bestV.less(v) {
			best, bestV = o, v
		}
	}
	return best, best != ""
}

type semver [3]int

func (a semver) less(b semver) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// parseSemver reads MAJOR.MINOR.PATCH (SemVer 2.0.0 §2; pre-release and
// build suffixes are not offered by AHP clients and are refused).
func parseSemver(s string) (semver, bool) {
	var v semver
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// caretAdmits reports whether v satisfies the caret range r ("^X.Y.Z":
// at least X.Y.Z, below the next version of its leftmost non-zero part).
func caretAdmits(r string, v semver) bool {
	base, ok := parseSemver(strings.TrimPrefix(r, "^"))
	if !ok || v.less(base) {
		return false
	}
	switch {
	case base[0] > 0:
		return v[0] == base[0]
	case base[1] > 0:
		return v[0] == 0 && v[1] == base[1]
	default:
		return v == base
	}
}

// candidates maps authenticate's params to the schemes they may name:
// schemeId (design) or resource (published: the scheme whose resource it
// is, each scheme having its own).
func (h *Host) candidates(p wire.AuthenticateParams) ([]*scheme, *wire.Error) {
	if p.Scheme != "" && !strings.EqualFold(p.Scheme, wire.SchemeBearer) {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unsupported scheme %q (only bearer)", p.Scheme)
	}
	if p.Channel != "" && p.Channel != wire.RootChannel {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown channel %q", p.Channel)
	}
	var byResource []*scheme
	if p.Resource != "" {
		if byResource = h.r().byResource(p.Resource); len(byResource) == 0 {
			var rs []string
			for _, sc := range h.r().schemes {
				rs = append(rs, sc.Resource)
			}
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown resource %q (this host's: %s)", p.Resource, strings.Join(rs, ", "))
		}
	}
	if p.SchemeID == "" {
		p.SchemeID = p.MethodID
	}
	if p.SchemeID != "" {
		sc := h.r().byID[p.SchemeID]
		if sc == nil {
			ids := make([]string, len(h.r().schemes))
			for i, s := range h.r().schemes {
				ids[i] = s.ID
			}
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown schemeId %q (declared: %s)", p.SchemeID, strings.Join(ids, ", "))
		}
		if p.Resource != "" && p.Resource != sc.Resource {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: scheme %s is for resource %s, not %s: send its own resource, or none", sc.ID, sc.Resource, p.Resource)
		}
		return []*scheme{sc}, nil
	}
	if p.Resource == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: authenticate needs methodId (ACP), schemeId or resource")
	}
	return byResource, nil
}

// unknownResource answers the published dialect's authenticate for a
// resource no scheme has (the design dialect answers -32602). VS Code's
// host answers -32007 there (protocolServerHandler.ts,
// authenticate: no agent lists the resource, so none authenticates); the
// data lists the resources this host does protect.
func (h *Host) unknownResource(resource string) *wire.Error {
	var chs []wire.Challenge
	var rs []string
	for _, sc := range h.r().schemes {
		ch := h.challenge(sc, schemeStatus{})
		ch.ErrorDescription = fmt.Sprintf("this host protects no resource %q: send a token for %s", resource, sc.Resource)
		chs = append(chs, ch)
		rs = append(rs, sc.Resource)
	}
	e := h.authRequired(chs)
	e.Message = fmt.Sprintf("cannot authenticate for %q: this host protects only %s; authenticate for one of them", resource, strings.Join(rs, ", "))
	return e
}

// authenticate validates a token eagerly (PROTOCOL.md "authenticate"). A
// rejected token is -32007 with a challenge per scheme tried; an empty
// token signs the scheme(s) out.
func (s *session) authenticate(ctx context.Context, params json.RawMessage) (any, *wire.Error) {
	h := s.h
	var p wire.AuthenticateParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
	}
	if p.ExpiresIn != nil && *p.ExpiresIn <= 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: expiresIn must be a positive number of seconds, not %d", *p.ExpiresIn)
	}
	s.mu.Lock()
	published, acp, ahp1 := s.dialect == wire.DialectPublished, s.dialect == wire.DialectACP, s.ahp1
	s.mu.Unlock()
	if published && p.Resource != "" && len(h.r().byResource(p.Resource)) == 0 {
		return nil, h.unknownResource(p.Resource)
	}
	cands, rerr := h.candidates(p)
	if rerr != nil {
		return nil, rerr
	}
	if acp {
		return s.authenticateACP(ctx, cands[0], p)
	}
	if p.Token == "" && published && ahp1 {
		// AHP 1.x: an empty token clears the resource's credential
		// (accounts-channel.md "The failure to prevent"; VS Code's host
		// hands "" to its agents, which forget the token).
		for _, sc := range cands {
			h.release(s.table(), sc, s)
			h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "signed out")
		}
		return struct{}{}, nil // AHP AuthenticateResult: {}
	}
	if p.Token == "" && published {
		// The shipped host refuses an empty token: the published dialect
		// 0.9 has no sign-out.
		var chs []wire.Challenge
		for _, sc := range cands {
			ch := h.challenge(sc, schemeStatus{})
			ch.ErrorDescription = "the token is empty: send a bearer token from the resource's authorization server"
			chs = append(chs, ch)
		}
		return nil, h.authRequired(chs)
	}
	if p.Token == "" {
		for _, sc := range cands {
			h.release(s.table(), sc, s)
			h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "signed out")
		}
		no := false
		return wire.AuthenticateResult{Authenticated: &no}, nil
	}
	g, chs, err := s.accept(ctx, cands, p.Token, p.Scopes, p.ExpiresIn)
	switch {
	case g != nil && published:
		return struct{}{}, nil // AHP AuthenticateResult: {}
	case g != nil:
		yes := true
		return wire.AuthenticateResult{Authenticated: &yes}, nil
	case len(chs) > 0:
		return nil, h.authRequired(chs)
	default:
		return nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token: %v", err)
	}
}

// authenticateACP answers ACP's authenticate {methodId} for an agent-type
// method: the agent authenticates with the token the client handed it
// under _meta (ACPTokenMetaKey), with the grant the connection already
// holds, or with the credential agentauth's own store holds for the method
// (Options.StoredToken: the agent signs itself in); otherwise -32000 says
// what is missing.
func (s *session) authenticateACP(ctx context.Context, sc *scheme, p wire.AuthenticateParams) (any, *wire.Error) {
	h := s.h
	token, _ := p.Meta[wire.ACPTokenMetaKey].(string)
	if token == "" {
		token = p.Token
	}
	if token == "" && s.table().view(h.now())[sc.ID].grant != nil {
		return struct{}{}, nil
	}
	missing := fmt.Sprintf("obtain a token for %s from %s (agentauth login) and pass it in authenticate's _meta[%q]",
		sc.Resource, strings.Join(sc.AuthorizationServers, ", "), wire.ACPTokenMetaKey)
	if token == "" && h.storedToken != nil {
		t, err := h.storedToken(ctx, sc.ID, sc.Resource, sc.AuthorizationServers)
		if err != nil {
			missing = err.Error()
		}
		token = t
	}
	if token == "" {
		ch := h.challenge(sc, schemeStatus{})
		ch.ErrorDescription = fmt.Sprintf("no credential for method %s: %s", sc.ID, missing)
		e := *h.authRequired([]wire.Challenge{ch})
		e.Code, e.Message = wire.CodeACPAuthRequired, "Authentication required: "+ch.ErrorDescription
		return nil, &e
	}
	g, chs, err := s.accept(ctx, []*scheme{sc}, token, nil, nil)
	switch {
	case g != nil:
		return struct{}{}, nil // ACP AuthenticateResponse: {}
	case len(chs) > 0:
		e := *h.authRequired(chs)
		e.Code = wire.CodeACPAuthRequired
		return nil, &e
	default:
		return nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token: %v", err)
	}
}

// accept validates token against each candidate in turn and holds the
// first grant. authenticate's scopes, when given, narrow the grant to them
// (RFC 6749 §3.3: never wider than the token; a scope the token lacks is
// refused with insufficient_scope), and a grant without an expiry takes
// expiresIn seconds from now. Otherwise it returns a challenge per
// rejecting scheme, or the error that kept the token from being checked.
func (s *session) accept(ctx context.Context, cands []*scheme, token string, scopes []string, expiresIn *int64) (*Grant, []wire.Challenge, error) {
	h := s.h
	var chs []wire.Challenge
	var failure error
	for _, sc := range cands {
		g, err := h.validate(ctx, sc, token, false)
		if err == nil && g.JKT != "" {
			// A DPoP-bound token (RFC 9449 §6) is only good with a proof of
			// its key per request, which a connection's authenticate
			// cannot carry: whoever holds it without the key must not
			// get in this way.
			ch := h.challenge(sc, schemeStatus{})
			ch.Error = wire.ErrInvalidToken
			ch.ErrorDescription = "the token is bound to a DPoP key (RFC 9449); send it to the HTTP face with a DPoP proof per request"
			h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "rejected", "reason", "DPoP-bound token on a connection")
			chs = append(chs, ch)
			continue
		}
		if err == nil && len(scopes) > 0 {
			var missing []string
			for _, want := range scopes {
				if !slices.Contains(g.Scopes, want) {
					missing = append(missing, want)
				}
			}
			if len(missing) > 0 {
				ch := h.challenge(sc, schemeStatus{})
				ch.Error, ch.Scope = wire.ErrInsufficientScope, wire.JoinScope(scopes)
				ch.ErrorDescription = "the token does not carry the scopes authenticate asked for: " + wire.JoinScope(missing)
				h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "rejected", "reason", ch.ErrorDescription)
				chs = append(chs, ch)
				continue
			}
			cp := *g
			cp.Scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
			g = &cp
		}
		if err == nil {
			if g.Expiry.IsZero() && expiresIn != nil && *expiresIn > 0 {
				cp := *g
				cp.Expiry = h.now().Add(time.Duration(*expiresIn) * time.Second)
				g = &cp
			}
			h.hold(s.table(), sc, token, g, s)
			h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "subject", g.Subject, "outcome", "accepted")
			return g, nil, nil
		}
		var te *TokenError
		if !errors.As(err, &te) {
			failure = err
			h.log.Warn("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "error", "reason", err.Error())
			continue
		}
		h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "rejected", "reason", te.Description)
		chs = append(chs, h.challenge(sc, statusOf(te)))
	}
	return nil, chs, failure
}

// setAuthToken is the deprecated token push: it authenticates the single
// required scheme (or the only scheme), and otherwise pushes "required".
func (s *session) setAuthToken(ctx context.Context, params json.RawMessage) {
	h := s.h
	h.log.Warn("setAuthToken is deprecated: use the authenticate request instead", "conn", s.id)
	var cands []*scheme
	for _, sc := range h.r().schemes {
		if sc.IsRequired() {
			cands = append(cands, sc)
		}
	}
	if len(cands) == 0 {
		cands = h.r().schemes
	}
	token, err := wire.ParseSetAuthToken(params)
	var chs []wire.Challenge
	switch {
	case len(cands) != 1:
		for _, sc := range cands {
			ch := h.challenge(sc, schemeStatus{})
			ch.ErrorDescription = fmt.Sprintf("setAuthToken cannot choose among %d schemes; use authenticate", len(cands))
			chs = append(chs, ch)
		}
	case err != nil || token == "":
		chs = []wire.Challenge{h.challenge(cands[0], schemeStatus{})}
	default:
		var g *Grant
		g, chs, err = s.accept(ctx, cands, token, nil, nil)
		if g != nil {
			return
		}
		if len(chs) == 0 {
			h.log.Warn("setAuthToken: cannot validate the token", "conn", s.id, "err", err)
			return
		}
	}
	for i, ch := range chs {
		s.push(h.r().byID[ch.SchemeID], wire.StateRequired, &chs[i])
	}
}

// maxSessionsPerOwner bounds the live agent sessions of one owner.
const maxSessionsPerOwner = 100

// codeSessionLimit answers createSession over maxSessionsPerOwner: a
// server error of the implementation-defined range (JSON-RPC 2.0 §5.1).
const codeSessionLimit = -32000

// The records of agent sessions in the host's state.Store.
const (
	// kindAgentSessions holds, by owner, that owner's sessions in
	// creation order (at most maxSessionsPerOwner, so one record each).
	kindAgentSessions state.Kind = "agent_sessions"
	// kindAgentSessionSeq holds under agentSessionSeqKey the last session
	// number handed out, so that ids stay unique across restarts and
	// replicas.
	kindAgentSessionSeq state.Kind = "agent_session_seq"
	agentSessionSeqKey             = "last"
)

// agentSessions are the minimal agent host's sessions, each visible to its
// owner only, kept in the host's Store: they survive a restart of serve
// (with --data-dir or --database) and every replica sees them.
type agentSessions struct {
	store state.Store
}

type agentSession struct {
	ID        string `json:"sessionId"`
	Owner     string `json:"owner"`
	CreatedAt string `json:"createdAt"`
}

// errSessionStore answers a session method when the store fails.
var errSessionStore = wire.Errorf(wire.CodeInternalError, "internal error: the host cannot reach its state store; try again, and see the host's log")

func listTx(tx state.Tx, owner string) ([]agentSession, error) {
	b, err := tx.Get(kindAgentSessions, owner)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var all []agentSession
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("cannot decode the sessions of %q: %w", owner, err)
	}
	return all, nil
}

func putTx(tx state.Tx, owner string, all []agentSession) error {
	if len(all) == 0 {
		return tx.Delete(kindAgentSessions, owner)
	}
	b, err := json.Marshal(all)
	if err != nil {
		return err
	}
	return tx.Put(kindAgentSessions, owner, b, time.Time{})
}

// create adds a session for owner, named id (or a new sN when id is
// empty), or fails once owner holds maxSessionsPerOwner or already holds
// id.
func (a *agentSessions) create(ctx context.Context, owner, id string, now time.Time) (agentSession, *wire.Error, error) {
	var s agentSession
	full, exists := false, false
	err := a.store.Update(ctx, func(tx state.Tx) error {
		all, err := listTx(tx, owner)
		if err != nil {
			return err
		}
		if full = len(all) >= maxSessionsPerOwner; full {
			return nil
		}
		if exists = slices.ContainsFunc(all, func(s agentSession) bool { return s.ID == id }); exists {
			return nil
		}
		n := 0
		if b, err := tx.Get(kindAgentSessionSeq, agentSessionSeqKey); err == nil {
			n, _ = strconv.Atoi(string(b))
		} else if !errors.Is(err, state.ErrNotFound) {
			return err
		}
		n++
		if err := tx.Put(kindAgentSessionSeq, agentSessionSeqKey, []byte(strconv.Itoa(n)), time.Time{}); err != nil {
			return err
		}
		s = agentSession{ID: cmp.Or(id, fmt.Sprintf("s%d", n)), Owner: owner, CreatedAt: now.UTC().Format(time.RFC3339)}
		return putTx(tx, owner, append(all, s))
	})
	switch {
	case err != nil:
		return agentSession{}, errSessionStore, err
	case full:
		return agentSession{}, wire.Errorf(codeSessionLimit, "cannot create a session: %q already has %d live sessions, the most one user may hold; dispose of one first with disposeSession (listSessions lists them)",
			owner, maxSessionsPerOwner), nil
	case exists:
		return agentSession{}, wire.Errorf(codeSessionAlreadyExists, "cannot create session %s: it already exists; choose a new URI (ahp-session:/<uuid>)", id), nil
	}
	return s, nil, nil
}

// methodReconnect is AHP's reconnect {clientId, lastSeenServerSeq,
// subscriptions}: a client resuming on a new connection.
const methodReconnect = "reconnect"

// codeNotFound is AHP's NotFound (types/common/errors.ts).
const codeNotFound = -32008

// reconnect answers AHP's reconnect. This host keeps no client past its
// connection, so it answers as VS Code's host answers a client it does not
// know (node/protocolServerHandler.ts @
// 01230893d55a5b69ca4eb2a597924c7b45da13e8, _handleReconnect: NotFound),
// and the client starts again with initialize.
func reconnect(params json.RawMessage) *wire.Error {
	var p struct {
		ClientID string `json:"clientId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ClientID == "" {
		return wire.Errorf(wire.CodeInvalidParams, `invalid params: reconnect needs {"clientId": "…", "lastSeenServerSeq": N, "subscriptions": […]}`)
	}
	return wire.Errorf(codeNotFound, "cannot reconnect client %q: this host keeps no client past its connection; send initialize", p.ClientID)
}

// AHP's session error codes (types/common/errors.ts).
const (
	codeSessionNotFound      = -32001
	codeProviderNotFound     = -32002
	codeSessionAlreadyExists = -32003
)

// shippedProvider is the provider of the published dialect's one agent.
const shippedProvider = "agentauth"

// shippedSession answers the published dialect's session commands with
// the shipped shapes (AHP types/channels-session/commands.ts,
// channels-root): createSession {channel, provider?} → null,
// listSessions → {items: SessionSummary[]}, disposeSession {channel} →
// null. They are gated like the design dialect's.
func (s *session) shippedSession(ctx context.Context, method string, params json.RawMessage) (any, *wire.Error) {
	h := s.h
	v := s.table().view(h.now())
	if rerr := h.gate(method, v, h.r().schemes); rerr != nil {
		return nil, rerr
	}
	if rerr := h.upstreamGate(ctx, method, v); rerr != nil {
		return nil, rerr
	}
	owner := h.principal(v)
	var p struct {
		Channel  string `json:"channel"`
		Provider string `json:"provider"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
		}
	}
	null := json.RawMessage("null")
	switch method {
	case wire.MethodCreateSession:
		if p.Channel == "" || p.Channel == wire.RootChannel {
			return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: createSession needs {"channel": "ahp-session:/<uuid>"}, a URI of the client's choosing`)
		}
		if p.Provider != "" && p.Provider != shippedProvider {
			return nil, wire.Errorf(codeProviderNotFound, "no agent for provider %q: this host's agent is %s", p.Provider, shippedProvider)
		}
		_, rerr, err := h.sessions.create(ctx, owner, p.Channel, h.now())
		if err != nil {
			h.log.Error("createSession failed", "conn", s.id, "err", err)
		}
		if rerr != nil {
			return nil, rerr
		}
		return null, nil
	case wire.MethodListSessions:
		all, err := h.sessions.list(ctx, owner)
		if err != nil {
			h.log.Error("listSessions failed", "conn", s.id, "err", err)
			return nil, errSessionStore
		}
		items := []wire.SessionSummary{}
		for _, a := range all {
			items = append(items, summary(a))
		}
		return map[string]any{"items": items}, nil
	default: // disposeSession
		if p.Channel == "" {
			return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: disposeSession needs {"channel": "<session URI>"}`)
		}
		// Disposing a session that is gone is not an error, as in VS
		// Code's host (agentService.ts, disposeSession).
		found, err := h.sessions.dispose(ctx, owner, p.Channel)
		if err != nil {
			h.log.Error("disposeSession failed", "conn", s.id, "err", err)
			return nil, errSessionStore
		}
		if found {
			h.sessionRemoved(owner, p.Channel)
		}
		return null, nil
	}
}

// methodSessionRemoved is AHP's root/sessionRemoved notification
// {channel, session} (types/channels-root/notifications.ts).
const methodSessionRemoved = "root/sessionRemoved"

// sessionRemoved tells owner's connections subscribed to session ch that
// it is gone, and ends their subscriptions. Connections subscribed to the
// root channel only are not told, as this host pushes no
// root/sessionAdded either (they learn of sessions with listSessions);
// nor are other principals': sessions are visible to their owner only.
func (h *Host) sessionRemoved(owner, ch string) {
	m, err := wire.NewNotification(methodSessionRemoved, map[string]string{"channel": wire.RootChannel, "session": ch})
	if err != nil {
		h.log.Error("cannot encode root/sessionRemoved", "err", err)
		return
	}
	conns := h.connections()
	for _, s := range conns {
		s.mu.Lock()
		tell := s.sessionSubs[ch]
		s.mu.Unlock()
		if !tell || h.principal(s.table().view(h.now())) != owner {
			continue
		}
		s.mu.Lock()
		delete(s.sessionSubs, ch)
		s.mu.Unlock()
		s.notify(m)
	}
}

func (a *agentSessions) list(ctx context.Context, owner string) ([]agentSession, error) {
	var all []agentSession
	err := a.store.View(ctx, func(tx state.Tx) error {
		var err error
		all, err = listTx(tx, owner)
		return err
	})
	if all == nil {
		all = []agentSession{}
	}
	return all, err
}

// dispose removes owner's session id and reports whether it existed.
func (a *agentSessions) dispose(ctx context.Context, owner, id string) (bool, error) {
	found := false
	err := a.store.Update(ctx, func(tx state.Tx) error {
		all, err := listTx(tx, owner)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(all, func(s agentSession) bool { return s.ID == id })
		if found = i >= 0; !found {
			return nil
		}
		return putTx(tx, owner, slices.Delete(all, i, i+1))
	})
	return found, err
}
