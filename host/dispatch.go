package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

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
		case m.Method == methodDispatchAction:
			s.dispatchAction(m.Params)
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
	case m.Method == wire.MethodAuthBegin && published && s.isAHP1():
		result, rerr = s.authBegin(m.Params)
	case m.Method == wire.MethodSubscribe && published:
		result, rerr = s.subscribe(ctx, m.Params)
	case published && slices.Contains([]string{wire.MethodCreateSession, wire.MethodListSessions, wire.MethodDisposeSession}, m.Method):
		result, rerr = s.shippedSession(ctx, m.Method, m.Params)
	case m.Method == wire.MethodLogout && acp:
		result = s.logoutACP(ctx)
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
		rerr = wire.ErrEncodeResult
	}
	s.send(ctx, wire.NewErrorResponse(id, rerr))
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
	return wire.Respond(req.ID, result, rerr)
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
			h.tel.Refusal("policy")
			h.tel.Audit(ops.EventPolicyDenied, append(who, "method", method, "scheme", ch.SchemeID, "reason", ch.Error)...)
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
