package host

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// AHP 1.x accounts channel (microsoft/agent-host-protocol
// docs/specification/accounts-channel.md and types/channels-accounts/ @
// c0e5745a07bc39476050dbf0f706aaae134cae92), served for client-brokered
// credentials: the client obtains the token, authBegin reserves a
// single-use admission attempt, and authenticate with
// binding {kind: "attempt"} admits the token's verified identity (the
// grant's issuer and subject) to a host account, whose id it answers;
// later deliveries renew it with binding {kind: "account"}.
//
// Accounts live where credentials live: in the grant table (per
// connection, or the host's with auth scope host). A scheme holds one
// grant, so an account is live while a grant of its identity is held for
// one of its resources; one that holds none (released by auth/revoked or
// an empty token, or replaced by another account's admission) is retired
// for good: renewing it is Conflict, and its id is never reused.

// Error codes of types/common/errors.ts.
const (
	codePermissionDenied = -32009
	codeConflict         = -32011
)

// Bounds on what a peer can make the host keep: pending attempts per
// connection (the oldest is failed to make room) and attempts per table.
const (
	maxPendingAttempts = 4
	maxAttempts        = 32
)

// Attempt statuses (AuthAttemptStatus).
const (
	attemptPending   = "pending"
	attemptCompleted = "completed"
	attemptFailed    = "failed"
)

// accountBook is a grant table's accounts and admission attempts.
type accountBook struct {
	mu sync.Mutex
	// account-N and attempt-N ids: never reused
	nextAccount, nextAttempt int
	seq                      int // host order of attempts and retirements
	accounts                 []*hostAccount
	attempts                 []*authAttempt
	// retired is the order at which each identity's last account was
	// retired, for as long as an attempt begun before it is kept.
	retired map[string]int
	// selections counts the changes of each resource's consumer
	// selection: an attempt begun before the latest is stale.
	selections map[string]int
}

// hostAccount is one live HostAccount.
type hostAccount struct {
	id        string
	identity  string // issuer NUL subject
	label     string
	resources []string // its consumers' resources (agent consumers)
}

// authAttempt is one AuthAttemptState.
type authAttempt struct {
	id        string
	owner     *session
	seq       int
	selection int // selections[resource] at authBegin
	resource  string
	accountID string // explicit reauthorization (authBegin accountId)
	status    string
	result    string // completed: the account
	failure   string // failed: the ErrorInfo message
}

// book is the accounts of s's grant table, made on first use.
func (s *session) book() *accountBook {
	t := s.table()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.accounts == nil {
		t.accounts = &accountBook{retired: map[string]int{}, selections: map[string]int{}}
	}
	return t.accounts
}

// consumer is the AccountConsumer of this host's agent for resource.
func consumer(resource string) wire.AccountConsumer {
	return wire.AccountConsumer{Kind: "agent", Provider: shippedProvider, Resource: resource}
}

// identityOf is a grant's verified identity, "" when it names no subject.
func identityOf(g *Grant) string {
	if g == nil || g.Subject == "" {
		return ""
	}
	return g.Issuer + "\x00" + g.Subject
}

func (b *accountBook) account(id string) *hostAccount {
	i := slices.IndexFunc(b.accounts, func(a *hostAccount) bool { return a.id == id })
	if i < 0 {
		return nil
	}
	return b.accounts[i]
}

func (b *accountBook) attempt(id string) *authAttempt {
	i := slices.IndexFunc(b.attempts, func(a *authAttempt) bool { return a.id == id })
	if i < 0 {
		return nil
	}
	return b.attempts[i]
}

// sweep retires the accounts that hold no grant of their identity any
// more, with b.mu held, and returns the actions that say so. A grant that
// expired or was revoked upstream is still held (the account is renewed
// with binding {kind: "account"}); a released one is not.
func (s *session) sweep(b *accountBook) []map[string]any {
	t := s.table()
	held := map[string]string{} // identity by scheme
	t.mu.Lock()
	for _, e := range t.held {
		held[e.sc.ID] = identityOf(e.grant)
	}
	t.mu.Unlock()
	var acts []map[string]any
	b.accounts = slices.DeleteFunc(b.accounts, func(a *hostAccount) bool {
		for _, r := range a.resources {
			for _, sc := range s.h.r().byResource(r) {
				if held[sc.ID] == a.identity {
					return false
				}
			}
		}
		b.seq++
		b.retired[a.identity] = b.seq
		for _, r := range a.resources {
			b.selections[r]++
		}
		acts = append(acts, map[string]any{"type": "accounts/removed", "id": a.id})
		return true
	})
	return acts
}

// bookedResource reports the live account of s's table that resource's
// credential is held under, "" when none: such a credential is renewed
// only by a bound delivery (accounts-channel.md, "Capability and
// compatibility rules": unbound delivery and empty-token revocation into
// an account-managed context are refused, from legacy connections too).
func (s *session) bookedResource(resource string) string {
	t := s.table()
	t.mu.Lock()
	b := t.accounts
	t.mu.Unlock()
	if b == nil {
		return ""
	}
	b.mu.Lock()
	acts := s.sweep(b)
	id := ""
	for _, a := range b.accounts {
		if slices.Contains(a.resources, resource) {
			id = a.id
		}
	}
	b.mu.Unlock()
	s.publish(acts)
	return id
}

// authBegin answers authBegin (types/channels-accounts/commands.ts): it
// validates the channel, the offered flows (they must include
// clientBrokered), the consumer (this host's agent and one of its
// protected resources) and an explicit accountId (a live account), then
// records a pending attempt, publishes it, and answers {flow, attemptId}.
func (s *session) authBegin(params json.RawMessage) (any, *wire.Error) {
	var p struct {
		wire.AuthBeginParams
		AccountID string `json:"accountId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
	}
	if p.Channel != wire.AccountsChannel {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: authBegin is a request on %s, not %q", wire.AccountsChannel, p.Channel)
	}
	if !slices.ContainsFunc(p.Flows, func(f wire.AuthFlow) bool { return f.Kind == wire.AuthFlowClientBrokered }) {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: flows must offer {\"kind\": %q}, the only flow this host admits", wire.AuthFlowClientBrokered)
	}
	c := p.Target.Consumer
	if c.Kind != "agent" || c.Provider != shippedProvider || len(s.h.r().byResource(c.Resource)) == 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown consumer %s/%s/%s: this host's is {kind: agent, provider: %s} with a resource its root state advertises",
			c.Kind, c.Provider, c.Resource, shippedProvider)
	}
	b := s.book()
	b.mu.Lock()
	acts := s.sweep(b)
	if p.AccountID != "" && b.account(p.AccountID) == nil {
		b.mu.Unlock()
		s.publish(acts)
		return nil, wire.Errorf(codeConflict, "The account authorization lifetime is no longer live: %q", p.AccountID)
	}
	pending := 0
	for _, a := range b.attempts {
		if a.owner == s && a.status == attemptPending {
			pending++
		}
	}
	for _, a := range b.attempts { // the oldest of this connection's pending make room
		if pending < maxPendingAttempts {
			break
		}
		if a.owner == s && a.status == attemptPending {
			a.status, a.failure = attemptFailed, "superseded by a newer authBegin of this connection"
			acts = append(acts, attemptSet(a))
			pending--
		}
	}
	if !b.trim() {
		b.mu.Unlock()
		s.publish(acts)
		return nil, wire.Errorf(codePermissionDenied, "cannot begin an admission: %d attempts are pending on this host; complete or abandon one", maxAttempts)
	}
	b.nextAttempt++
	b.seq++
	a := &authAttempt{id: "attempt-" + strconv.Itoa(b.nextAttempt), owner: s, seq: b.seq, selection: b.selections[c.Resource], resource: c.Resource, accountID: p.AccountID, status: attemptPending}
	b.attempts = append(b.attempts, a)
	acts = append(acts, attemptSet(a))
	b.mu.Unlock()
	s.publish(acts)
	return wire.AuthBeginResult{Flow: wire.AuthFlowClientBrokered, AttemptID: a.id}, nil
}

// trim makes room for one attempt, with b.mu held: failed attempts go
// first, then completed ones whose account is retired, then completed ones
// older than their account's newest; it reports whether there is room.
func (b *accountBook) trim() bool {
	for _, drop := range []func(*authAttempt) bool{
		func(a *authAttempt) bool { return a.status == attemptFailed },
		func(a *authAttempt) bool { return a.status == attemptCompleted && b.account(a.result) == nil },
		func(a *authAttempt) bool {
			return a.status == attemptCompleted && slices.ContainsFunc(b.attempts, func(n *authAttempt) bool { return n.result == a.result && n.seq > a.seq })
		},
	} {
		if len(b.attempts) < maxAttempts {
			break
		}
		if i := slices.IndexFunc(b.attempts, drop); i >= 0 {
			b.attempts = slices.Delete(b.attempts, i, i+1)
		}
	}
	oldest := b.seq
	for _, a := range b.attempts {
		oldest = min(oldest, a.seq)
	}
	for id, at := range b.retired {
		if at < oldest {
			delete(b.retired, id)
		}
	}
	return len(b.attempts) < maxAttempts
}

// authenticateBound answers a bound authenticate (accounts-channel.md,
// "Admission is distinct from renewal" and "Rejection and failure are
// observable"): a malformed binding or an empty token is InvalidParams;
// an attempt that is not this connection's live one, or an account that
// is not live, is Conflict; a token of another identity than the
// account's is PermissionDenied and replaces nothing; an invalid token is
// AuthRequired. It answers {accountId}.
func (s *session) authenticateBound(p wire.AuthenticateParams, accept func(admit func(*scheme, *Grant) *wire.Error) (*Grant, []wire.Challenge, error)) (any, *wire.Error) {
	bd := p.Binding
	switch {
	case p.Token == "":
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: a bound delivery needs a nonempty token")
	case p.Resource == "":
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: a bound delivery needs resource")
	case bd.Kind == "attempt" && bd.AttemptID == "", bd.Kind == "account" && bd.AccountID == "":
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: binding %q needs its id", bd.Kind)
	case bd.Kind != "attempt" && bd.Kind != "account":
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown binding kind %q (attempt or account)", bd.Kind)
	}
	b := s.book()
	// check is the binding's precondition, checked before the token is
	// validated and again, with the identity, before it is held.
	check := func(identity string) (*authAttempt, *hostAccount, *wire.Error) {
		if bd.Kind == "account" {
			a := b.account(bd.AccountID)
			switch {
			case a == nil:
				return nil, nil, wire.Errorf(codeConflict, "The account authorization lifetime is no longer live: %q", bd.AccountID)
			case !slices.Contains(a.resources, p.Resource):
				return nil, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: account %q was not admitted for %s: admit it with authBegin", a.id, p.Resource)
			case identity != "" && identity != a.identity:
				return nil, nil, wire.Errorf(codePermissionDenied, "the token belongs to another identity than account %q: it replaces nothing", a.id)
			}
			return nil, a, nil
		}
		at := b.attempt(bd.AttemptID)
		switch {
		case at == nil || at.status != attemptPending:
			return nil, nil, wire.Errorf(codeConflict, "attempt %q is not pending: consumed, failed or unknown; begin a new one with authBegin", bd.AttemptID)
		case at.owner != s:
			return nil, nil, wire.Errorf(codePermissionDenied, "attempt %q was begun by another connection", bd.AttemptID)
		case at.resource != p.Resource:
			return nil, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: attempt %q is for %s, not %s", at.id, at.resource, p.Resource)
		case at.selection != b.selections[at.resource]:
			return at, nil, wire.Errorf(codeConflict, "attempt %q is stale: %s's account selection changed since authBegin; begin a new one", at.id, at.resource)
		case at.accountID != "" && b.account(at.accountID) == nil:
			return at, nil, wire.Errorf(codeConflict, "The account authorization lifetime is no longer live: %q", at.accountID)
		case identity == "":
			return at, nil, nil
		case b.retired[identity] > at.seq:
			return at, nil, wire.Errorf(codeConflict, "attempt %q was begun before this identity's account was removed: begin a new one", at.id)
		case at.accountID != "" && b.account(at.accountID).identity != identity:
			return at, nil, wire.Errorf(codePermissionDenied, "the token belongs to another identity than account %q: it replaces nothing", at.accountID)
		}
		return at, nil, nil
	}
	b.mu.Lock()
	acts := s.sweep(b)
	_, _, rerr := check("")
	b.mu.Unlock()
	s.publish(acts)
	if rerr != nil {
		return nil, rerr
	}
	acts = nil
	var accountID string
	g, chs, err := accept(func(sc *scheme, g *Grant) *wire.Error {
		identity := identityOf(g)
		if identity == "" {
			ch := s.h.challenge(sc, schemeStatus{})
			ch.Error, ch.ErrorDescription = wire.ErrInvalidToken, "the token names no subject: its identity cannot be verified, so it cannot be admitted to a host account"
			return s.h.authRequired([]wire.Challenge{ch})
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		at, acct, rerr := check(identity)
		if rerr != nil {
			if at != nil && rerr.Code != wire.CodeInvalidParams {
				at.status, at.failure = attemptFailed, rerr.Message
				acts = append(acts, attemptSet(at))
			}
			return rerr
		}
		if at != nil { // admission: the identity's live account, or a new one
			if i := slices.IndexFunc(b.accounts, func(a *hostAccount) bool { return a.identity == identity }); i >= 0 {
				acct = b.accounts[i]
			} else {
				b.nextAccount++
				acct = &hostAccount{id: "account-" + strconv.Itoa(b.nextAccount), identity: identity, label: g.Subject}
				b.accounts = append(b.accounts, acct)
			}
			if !slices.Contains(acct.resources, p.Resource) {
				b.selections[p.Resource]++ // competing pending attempts are stale now
			}
			for _, o := range b.accounts { // a consumer selects one account
				if o != acct && slices.Contains(o.resources, p.Resource) {
					o.resources = slices.DeleteFunc(o.resources, func(r string) bool { return r == p.Resource })
					acts = append(acts, accountSet(o))
				}
			}
			if !slices.Contains(acct.resources, p.Resource) {
				acct.resources = append(acct.resources, p.Resource)
			}
			at.status, at.result = attemptCompleted, acct.id
			acts = append(acts, accountSet(acct), attemptSet(at))
		}
		accountID = acct.id
		return nil
	})
	if rerr, ok := err.(*wire.Error); ok {
		s.publish(acts)
		return nil, rerr
	}
	b.mu.Lock()
	acts = append(acts, s.sweep(b)...)
	b.mu.Unlock()
	s.publish(acts)
	switch {
	case g != nil:
		s.h.log.Info("host account", "conn", s.id, "binding", bd.Kind, "account", accountID)
		return wire.AuthenticateResult{AccountID: accountID}, nil
	case len(chs) > 0:
		return nil, s.h.authRequired(chs)
	default:
		return nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token: %v", err)
	}
}

// accountsSnapshot is the Snapshot of ahp-accounts:// (AccountsState).
func (s *session) accountsSnapshot() map[string]any {
	b := s.book()
	b.mu.Lock()
	acts := s.sweep(b)
	accounts, attempts := []any{}, []any{}
	for _, a := range b.accounts {
		accounts = append(accounts, accountSet(a)["account"])
	}
	for _, a := range b.attempts {
		attempts = append(attempts, attemptSet(a)["attempt"])
	}
	b.mu.Unlock()
	s.publish(acts)
	return map[string]any{"resource": wire.AccountsChannel, "state": map[string]any{"accounts": accounts, "attempts": attempts}, "fromSeq": s.h.seq.Load()}
}

// accountSet is the action accounts/set of a: removable by the client's
// accounts/removed (accounts_actions.go).
func accountSet(a *hostAccount) map[string]any {
	cs := []wire.AccountConsumer{}
	for _, r := range a.resources {
		cs = append(cs, consumer(r))
	}
	return map[string]any{"type": "accounts/set", "account": map[string]any{"id": a.id, "label": a.label, "removable": true, "consumers": cs}}
}

// attemptSet is the action accounts/authAttemptSet of a.
func attemptSet(a *authAttempt) map[string]any {
	st := map[string]any{"id": a.id, "consumer": consumer(a.resource), "resource": a.resource, "status": a.status}
	switch a.status {
	case attemptCompleted:
		st["accountId"] = a.result
	case attemptFailed:
		st["error"] = map[string]any{"errorType": "admissionFailed", "message": a.failure}
	}
	return map[string]any{"type": "accounts/authAttemptSet", "attempt": st}
}

// publish sends acts, in order, as action envelopes on ahp-accounts:// to
// the connections of s's table subscribed to it.
func (s *session) publish(acts []map[string]any) {
	if len(acts) == 0 {
		return
	}
	to := s.subscribers()
	for _, act := range acts {
		m, err := wire.NewNotification(MethodAction, map[string]any{"channel": wire.AccountsChannel, "serverSeq": s.h.seq.Add(1), "action": act})
		if err != nil {
			s.h.log.Error("cannot encode an accounts action", "err", fmt.Sprint(err))
			return
		}
		for _, c := range to {
			c.notify(m)
		}
	}
}

// subscribers are the connections of s's table subscribed to
// ahp-accounts://.
func (s *session) subscribers() []*session {
	t := s.table()
	var to []*session
	for _, c := range s.h.audience(t, nil) {
		c.mu.Lock()
		if c.accountsSubscribed && c.table() == t {
			to = append(to, c)
		}
		c.mu.Unlock()
	}
	return to
}

// isAHP1 reports whether the connection negotiated AHP 1.x.
func (s *session) isAHP1() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ahp1
}
