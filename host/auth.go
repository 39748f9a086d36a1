package host

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// stateInvalid marks a token rejected for a reason other than expiry or
// revocation; it is pushed as "required".
const stateInvalid = "invalid"

// schemeStatus is what one request knows about one scheme: a live grant,
// or why there is none (state "" means no token was ever given).
type schemeStatus struct {
	grant *Grant
	state string
	desc  string
}

func statusOf(te *TokenError) schemeStatus {
	switch te.Kind {
	case resource.TokenExpired:
		return schemeStatus{state: wire.StateExpired, desc: te.Description}
	case resource.TokenRevoked:
		return schemeStatus{state: wire.StateRevoked, desc: te.Description}
	default:
		return schemeStatus{state: stateInvalid, desc: te.Description}
	}
}

// authView is the auth a request carries, by scheme id.
type authView map[string]schemeStatus

// viewOf builds the view of requests that carry their grants (the HTTP face).
func viewOf(grants []*Grant) authView {
	v := authView{}
	for _, g := range grants {
		if g != nil {
			v[g.Scheme] = schemeStatus{grant: g}
		}
	}
	return v
}

// grantTable holds the tokens given with authenticate: one table per
// connection (auth scope connection) or one for the whole host.
type grantTable struct {
	owner *session // nil: the host-wide table

	mu   sync.Mutex
	held heldGrants
	// views caches the table's view for lock-free reads (see view); each
	// change of held clears it.
	views atomic.Pointer[authView]
	// accounts are the AHP 1.x host accounts of the table's credentials
	// (accounts.go), nil until a client-brokered admission.
	accounts *accountBook
}

// held is one scheme's token in a table. token is kept in memory only to
// re-introspect it (schemes with a recheck; empty for the others), and
// dropped when the grant lapses.
type held struct {
	sc      *scheme
	token   string
	grant   *Grant
	lapsed  *TokenError // nil while the grant is live
	expiry  *time.Timer
	recheck *time.Timer
}

// heldGrants are a table's grants, at most one per scheme: a slice
// searched by scheme id, for the few schemes a host has (a map's first
// entry cost every idle connection about 250 bytes; docs/performance.md).
type heldGrants []*held

// get is the grant of scheme id, or nil.
func (g heldGrants) get(id string) *held {
	for _, e := range g {
		if e.sc.ID == id {
			return e
		}
	}
	return nil
}

// set makes e its scheme's grant, in place of any other.
func (g *heldGrants) set(e *held) {
	for i, old := range *g {
		if old.sc.ID == e.sc.ID {
			(*g)[i] = e
			return
		}
	}
	*g = append(*g, e)
}

// remove drops the grant of scheme id.
func (g *heldGrants) remove(id string) {
	*g = slices.DeleteFunc(*g, func(e *held) bool { return e.sc.ID == id })
}

func (e *held) stop() {
	if e.expiry != nil {
		e.expiry.Stop()
	}
	if e.recheck != nil {
		e.recheck.Stop()
	}
}

// view is the table's auth at now. The view is shared: callers must not
// change it. It is built again after a change of the table or once one of
// its grants has expired, else read without a lock or an allocation.
func (t *grantTable) view(now time.Time) authView {
	if p := t.views.Load(); p != nil && !anyExpired(*p, now) {
		return *p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v := authView{}
	for _, e := range t.held {
		id := e.sc.ID
		switch {
		case e.lapsed != nil:
			v[id] = statusOf(e.lapsed)
		case e.grant.ExpiredAt(now):
			v[id] = statusOf(resource.ErrExpired)
		default:
			v[id] = schemeStatus{grant: e.grant}
		}
	}
	t.views.Store(&v)
	return v
}

func anyExpired(v authView, now time.Time) bool {
	for _, st := range v {
		if st.grant != nil && st.grant.ExpiredAt(now) {
			return true
		}
	}
	return false
}

func (t *grantTable) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.held {
		e.stop()
	}
	t.held = nil
	t.views.Store(nil)
}

// hold makes g the table's grant for sc, replacing any earlier one (last
// writer wins), and arms the expiry and re-check timers. In the host-wide
// table every other connection is told "authenticated".
func (h *Host) hold(t *grantTable, sc *scheme, token string, g *Grant, from *session) {
	e := &held{sc: sc, grant: g}
	if sc.recheck > 0 {
		e.token = token
	}
	t.mu.Lock()
	old := t.held.get(sc.ID)
	if old != nil {
		old.stop()
	}
	t.held.set(e)
	t.views.Store(nil)
	if !g.Expiry.IsZero() {
		e.expiry = time.AfterFunc(g.Expiry.Sub(h.now()), func() { h.lapse(t, e, resource.ErrExpired) })
	}
	if sc.recheck > 0 {
		e.recheck = time.AfterFunc(sc.recheck, func() { h.recheckHeld(t, e) })
	}
	t.mu.Unlock()
	if old != nil {
		h.revoked.unhold(old)
	}
	if h.revoked.hold(t, e) {
		h.lapse(t, e, resource.ErrRevoked)
		return
	}
	if t.owner == nil {
		for _, s := range h.audience(t, from) {
			s.push(sc, wire.StateAuthenticated, nil)
		}
	}
}

// release signs a scheme out of a table (authenticate with an empty token).
func (h *Host) release(t *grantTable, sc *scheme, from *session) {
	t.mu.Lock()
	e := t.held.get(sc.ID)
	if e != nil {
		e.stop()
		t.held.remove(sc.ID)
		t.views.Store(nil)
	}
	t.mu.Unlock()
	if e != nil {
		h.revoked.unhold(e)
	}
	if e != nil && t.owner == nil {
		ch := h.challenge(sc, schemeStatus{})
		for _, s := range h.audience(t, from) {
			s.push(sc, wire.StateRequired, &ch)
		}
	}
}

// lapse ends a live grant (expired, revoked, no longer valid) and pushes
// the new state to every connection the table serves, at once.
func (h *Host) lapse(t *grantTable, e *held, why *TokenError) {
	t.mu.Lock()
	if t.held.get(e.sc.ID) != e || e.lapsed != nil {
		t.mu.Unlock()
		return
	}
	e.lapsed = why
	e.token = ""
	e.stop()
	t.views.Store(nil)
	t.mu.Unlock()
	h.revoked.unhold(e)
	st := statusOf(why)
	attrs := []any{"scheme", e.sc.ID, "subject", e.grant.Subject, "state", st.state, "reason", why.Description}
	if t.owner != nil {
		attrs = append([]any{"conn", t.owner.id}, attrs...)
	}
	h.log.Info("auth state changed", attrs...)
	ch := h.challenge(e.sc, st)
	for _, s := range h.audience(t, nil) {
		s.push(e.sc, st.state, &ch)
	}
}

// recheckHeld validates a held token again (introspection), so that a
// token the authorization server no longer reports active is pushed as
// revoked within one cacheTTL.
func (h *Host) recheckHeld(t *grantTable, e *held) {
	t.mu.Lock()
	if t.held.get(e.sc.ID) != e || e.lapsed != nil {
		t.mu.Unlock()
		return
	}
	token := e.token
	t.mu.Unlock()
	_, err := h.validate(h.ctx, e.sc, token, true)
	var te *TokenError
	switch {
	case errors.As(err, &te):
		h.lapse(t, e, te)
		return
	case err != nil:
		h.log.Warn("cannot re-check a held token; keeping it", "scheme", e.sc.ID, "subject", e.grant.Subject, "err", err)
	}
	t.mu.Lock()
	if t.held.get(e.sc.ID) == e && e.lapsed == nil {
		e.recheck = time.AfterFunc(e.sc.recheck, func() { h.recheckHeld(t, e) })
	}
	t.mu.Unlock()
}

// connections lists the connections being served now.
func (h *Host) connections() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*session, 0, len(h.conns))
	for s := range h.conns {
		out = append(out, s)
	}
	return out
}

// audience lists the connections a table serves, except one.
func (h *Host) audience(t *grantTable, except *session) []*session {
	if t.owner != nil {
		return []*session{t.owner}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*session, 0, len(h.conns))
	for s := range h.conns {
		if s != except {
			out = append(out, s)
		}
	}
	return out
}

// challenge is the RFC 6750 §3.1 challenge for a scheme in a state.
func (h *Host) challenge(sc *scheme, st schemeStatus) wire.Challenge {
	ch := wire.Challenge{SchemeID: sc.ID, Resource: sc.Resource, Scope: wire.JoinScope(sc.ScopesSupported)}
	if st.state == "" {
		ch.Error = wire.ErrInvalidRequest
		ch.ErrorDescription = "No access token was provided"
	} else {
		ch.Error = wire.ErrInvalidToken
		ch.ErrorDescription = st.desc
	}
	return ch
}

// metadata is a scheme as an RFC 9728 document (the published dialect's
// protected resource), about the scheme's own resource.
func (h *Host) metadata(sc *scheme) wire.ProtectedResourceMetadata {
	req := sc.IsRequired()
	return wire.ProtectedResourceMetadata{Resource: sc.Resource, AuthorizationServers: sc.AuthorizationServers,
		ScopesSupported: sc.ScopesSupported, BearerMethodsSupported: []string{"header"}, ResourceName: sc.Label,
		DPoPSigningAlgValuesSupported: dpopAlgs(), SchemeID: sc.ID, Required: &req}
}

// dpopAlgs are the DPoP proof algorithms the HTTP face checks (RFC 9449;
// advertised per RFC 9728 §2).
func dpopAlgs() []string {
	var out []string
	for _, a := range wire.DPoPAlgs {
		out = append(out, string(a))
	}
	return out
}

// authRequired is the -32007 error for challenges.
func (h *Host) authRequired(chs []wire.Challenge) *wire.Error {
	data := wire.AuthRequiredData{Challenges: chs}
	seen := map[string]bool{}
	for _, ch := range chs {
		if !seen[ch.SchemeID] {
			seen[ch.SchemeID] = true
			data.Resources = append(data.Resources, h.metadata(h.r().byID[ch.SchemeID]))
		}
	}
	return wire.NewAuthRequiredError(data)
}

// gate decides whether a gated method may run: every required scheme of
// schemes (those of the face the call came by, see call) needs a
// live grant, and one live grant must hold the method's extra scopes
// (methodScopes). It returns the -32007 error otherwise.
func (h *Host) gate(method string, v authView, schemes []*scheme) *wire.Error {
	var chs []wire.Challenge
	for _, sc := range schemes {
		if st := v[sc.ID]; sc.IsRequired() && st.grant == nil {
			chs = append(chs, h.challenge(sc, st))
		}
	}
	if len(chs) > 0 {
		return h.authRequired(chs)
	}
	need := h.r().cfg.MethodScopes[method]
	if len(need) == 0 {
		return nil
	}
	for _, st := range v {
		if st.grant != nil && st.grant.HasScopes(need) {
			return nil
		}
	}
	// Challenge the schemes that can grant the scopes, or else all.
	var cands []*scheme
	for _, sc := range schemes {
		if (&Grant{Scopes: sc.ScopesSupported}).HasScopes(need) {
			cands = append(cands, sc)
		}
	}
	if len(cands) == 0 {
		cands = schemes
	}
	scope := wire.JoinScope(need)
	for _, sc := range cands {
		st := v[sc.ID]
		ch := h.challenge(sc, st)
		if st.grant != nil {
			ch.Error = wire.ErrInsufficientScope
			ch.ErrorDescription = fmt.Sprintf("%s needs scope %s", method, scope)
		}
		ch.Scope = scope
		chs = append(chs, ch)
	}
	return h.authRequired(chs)
}

// authState answers getAuthState / auth/status (seed 003) for schemes: a
// pure query.
func (h *Host) authState(v authView, schemes []*scheme) wire.AuthStateResult {
	res := wire.AuthStateResult{Authenticated: true, AuthMethods: []wire.AuthMethodState{}}
	missing := 0
	for _, sc := range schemes {
		st := v[sc.ID]
		m := wire.AuthMethodState{AuthMethodID: sc.ID, Authenticated: st.grant != nil}
		switch {
		case st.grant != nil && st.grant.Expiry.IsZero():
			m.Message = "authenticated as " + st.grant.Subject
		case st.grant != nil:
			m.Message = fmt.Sprintf("authenticated as %s until %s", st.grant.Subject, st.grant.Expiry.UTC().Format(time.RFC3339))
		case st.state == "":
			m.Message = "no token for " + sc.Resource
		default:
			m.Message = strings.ToLower(st.desc[:1]) + st.desc[1:]
		}
		if sc.IsRequired() && st.grant == nil {
			missing++
			res.Authenticated = false
		}
		res.AuthMethods = append(res.AuthMethods, m)
	}
	switch missing {
	case 0:
		res.Message = "every required scheme is authenticated"
	case 1:
		res.Message = "1 required scheme is not authenticated"
	default:
		res.Message = fmt.Sprintf("%d required schemes are not authenticated", missing)
	}
	return res
}
