package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

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

// initializePublished fills in the published dialect's initialize
// answer: the negotiated AHP version and, when initialSubscriptions lists
// the root channel (reported as root), its snapshot.
func (h *Host) initializePublished(p wire.InitializeParams, res *initializeResult) (root bool, rerr *wire.Error) {
	v, ok := negotiate(p.ProtocolVersions)
	if !ok {
		return false, wire.Errorf(wire.CodeUnsupportedVersion, "unsupported protocol version %s: this host speaks %s",
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
	return root, nil
}

// authRequiredPush is the published dialect's auth state push,
// auth/required, which has no "authenticated" (nil) and sends revoked as
// expired (AHP's AuthRequiredReason "expired" is "expired or revoked").
func (h *Host) authRequiredPush(sc *scheme, state string) *wire.Message {
	if state == wire.StateAuthenticated {
		return nil
	}
	reason := wire.StateRequired
	if state == wire.StateExpired || state == wire.StateRevoked {
		reason = wire.StateExpired
	}
	m, err := wire.NewNotification(wire.MethodAuthRequired, wire.AuthRequiredParams{Channel: wire.RootChannel, Resource: h.metadata(sc), Reason: reason})
	if err != nil {
		return nil
	}
	return m
}
