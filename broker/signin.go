package broker

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// Ask is a sign-in handed to a client: what it shows the user (the "ask"
// of every protocol face).
type Ask struct {
	ElicitationID string
	// URL is serve's /auth/start URL for the user's browser: it names the
	// sign-in and carries no secret.
	URL      string
	Upstream *Upstream
	// AuthStatus is the /auth-status URL the client may poll.
	AuthStatus string
	Message    string
	Expires    time.Time
}

// pendingRecord is a sign-in handed out: kindPending, by elicitation id.
type pendingRecord struct {
	Session  string    `json:"session"`
	Upstream string    `json:"upstream"`
	Expires  time.Time `json:"expires"`
	// Who the session is: its link is bound to this user when
	// Options.Browser can vouch for Issuer (see bound).
	Issuer   string `json:"iss,omitempty"`
	Subject  string `json:"sub,omitempty"`
	ClientID string `json:"client_id,omitempty"`
}

// Principal is who a broker session is: the subject and client id of a
// token of serve, and the issuer that issued it ("" for static tokens).
type Principal struct {
	Issuer, Subject, ClientID string
}

// stateRecord is a sign-in started at /auth/start: kindState, by the
// SHA-256 of its state (RFC 6749 §10.12).
type stateRecord struct {
	Session       string    `json:"session"`
	Upstream      string    `json:"upstream"`
	ElicitationID string    `json:"elicitation_id"`
	Verifier      []byte    `json:"verifier,omitempty"` // sealed when the broker has a key
	Cookie        string    `json:"cookie"`             // SHA-256 of the browser's cookie
	Expires       time.Time `json:"expires"`
	Account       string    `json:"account,omitempty"`
}

// Ask hands out a sign-in of who's session to upstream: a pending one of
// the same session and upstream not yet opened is handed out again.
// It refuses past MaxPendingPerSession (sign-ins not yet opened) and
// MaxPending (every sign-in not yet completed, opened or not).
func (b *Broker) Ask(ctx context.Context, who Principal, upstream string) (*Ask, error) {
	sid := b.Session(who.Subject, who.ClientID)
	u := b.upstreams[upstream]
	if u == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownUpstream, upstream)
	}
	if err := b.checkClient(ctx, u); err != nil {
		return nil, err
	}
	b.clearFailure(sid, upstream)
	now := b.now()
	var id string
	var expires time.Time
	err := b.opts.Store.Update(ctx, func(tx state.Tx) error {
		for _, k := range []state.Kind{kindPending, kindState} {
			if _, err := tx.DeleteExpired(k, now, maxSweep); err != nil {
				return err
			}
		}
		started, err := tx.Count(kindState, MaxPending)
		if err != nil {
			return err
		}
		recs, err := tx.List(kindPending)
		if err != nil {
			return err
		}
		mine := 0
		for _, r := range recs {
			var p pendingRecord
			if json.Unmarshal(r.Value, &p) != nil || !now.Before(p.Expires) || p.Session != sid {
				continue
			}
			if p.Upstream == upstream {
				id, expires = r.Key, p.Expires
				return nil
			}
			mine++
		}
		if mine >= MaxPendingPerSession || len(recs)+started >= MaxPending {
			return ErrTooManyPending
		}
		id, expires = rand.Text(), now.Add(b.lifetime)
		return putJSON(tx, kindPending, id, pendingRecord{Session: sid, Upstream: upstream, Expires: expires,
			Issuer: who.Issuer, Subject: who.Subject, ClientID: who.ClientID}, expires)
	})
	if err != nil {
		if errors.Is(err, ErrTooManyPending) {
			b.log.Warn("broker: sign-in refused", "upstream", upstream, "reason", err.Error())
			return nil, err
		}
		return nil, fmt.Errorf("cannot start a sign-in to %s: %w", u.Label, err)
	}
	return &Ask{
		ElicitationID: id,
		URL:           b.opts.Origin + "/auth/start?" + url.Values{"id": {id}}.Encode(),
		Upstream:      u,
		AuthStatus:    b.AuthStatusURL(sid, upstream),
		Message:       "Sign in to " + u.Label + " to continue",
		Expires:       expires,
	}, nil
}

// LogID names a sign-in in logs: a hash prefix, since the id itself lets
// whoever opens its link first bind their browser to the sign-in.
func LogID(elicitationID string) string { return hashOf(elicitationID)[:12] }

// Started is what /auth/start does: redirect the browser, with a cookie.
type Started struct {
	// Redirect is the upstream's authorization request URL.
	Redirect string
	// CookieName and CookieValue bind the browser to the state.
	CookieName, CookieValue string
	Expires                 time.Time
}

// cookieName is the name of the cookie of a state: one per sign-in, so
// that two sign-ins in one browser do not clobber each other.
func cookieName(state string) string { return "agentauth_signin_" + hashOf(state)[:16] }

// Start opens the pending sign-in id, once: it becomes a state bound to
// the browser's new cookie, and the browser goes to the upstream's
// authorization endpoint (RFC 6749 §4.1.1) with the PKCE challenge
// (RFC 7636 §4.3) and, when configured, the resource (RFC 8707).
// A bound sign-in (see bound) opens only for a browser signed in as the
// session's own user (signedIn, "" when not signed in): for any other it
// is ErrNotYours, and the link stays usable by its user.
func (b *Broker) Start(ctx context.Context, id, signedIn string) (*Started, error) {
	now := b.now()
	st, cookie, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	var p *pendingRecord
	notYours := false
	err := b.opts.Store.Update(ctx, func(tx state.Tx) error {
		var err error
		if p, err = getJSON[pendingRecord](tx, kindPending, id); err != nil || p == nil {
			return err
		}
		if notYours = now.Before(p.Expires) && b.bound(p) && (signedIn == "" || signedIn != p.Subject); notYours {
			return nil
		}
		if err := tx.Delete(kindPending, id); err != nil {
			return err
		}
		if !now.Before(p.Expires) {
			return nil
		}
		var sealed []byte
		if u := b.upstreams[p.Upstream]; u != nil && u.PKCE {
			if sealed, err = b.seal([]byte(verifier), "verifier"); err != nil {
				return err
			}
		}
		return putJSON(tx, kindState, hashOf(st), stateRecord{Session: p.Session, Upstream: p.Upstream, ElicitationID: id,
			Verifier: sealed, Cookie: hashOf(cookie), Expires: p.Expires, Account: p.Subject}, p.Expires)
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot start the sign-in: %w", err)
	case p == nil:
		return nil, ErrUnknownSignIn
	case !now.Before(p.Expires):
		b.log.Info("broker: sign-in refused", "upstream", p.Upstream, "reason", "expired before it was opened")
		return nil, ErrExpired
	case notYours:
		b.log.Warn("broker: sign-in refused", "upstream", p.Upstream, "elicitation", LogID(id), "reason", "the browser is not signed in as the session's user")
		return nil, ErrNotYours
	}
	u := b.upstreams[p.Upstream]
	if u == nil {
		return nil, fmt.Errorf("%w %q (the config changed)", ErrUnknownUpstream, p.Upstream)
	}
	q := url.Values{"response_type": {"code"}, "client_id": {u.Client.ID}, "redirect_uri": {b.RedirectURI()}, "state": {st}}
	if len(u.Scopes) > 0 {
		q.Set("scope", wire.JoinScope(u.Scopes))
	}
	if u.PKCE {
		q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(verifier))
		q.Set("code_challenge_method", "S256")
	}
	if u.Resource != "" {
		q.Set("resource", u.Resource)
	}
	redirect, err := url.Parse(u.AuthorizationEndpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot start the sign-in: %w", err)
	}
	if redirect.RawQuery != "" {
		redirect.RawQuery += "&" + q.Encode()
	} else {
		redirect.RawQuery = q.Encode()
	}
	b.log.Info("broker: sign-in started", "upstream", u.ID, "elicitation", LogID(id))
	return &Started{Redirect: redirect.String(), CookieName: cookieName(st), CookieValue: cookie, Expires: p.Expires}, nil
}

// CallbackError is a refused callback: Message is for the user's page,
// Next (when set) the step it suggests.
type CallbackError struct{ Message, Next string }

func (e *CallbackError) Error() string { return e.Message }

func refused(format string, args ...any) error {
	return &CallbackError{Message: fmt.Sprintf(format, args...)}
}

// Completed is a sign-in that completed.
type Completed struct {
	Session       string
	Upstream      *Upstream
	ElicitationID string
	// Account is serve's user the session belongs to ("" when the
	// sign-in was asked without one).
	Account string
}

// Callback completes a sign-in from the redirect's query and the browser's
// cookies (cookie returns the value of a named cookie, "" for none). A
// browser without the state's cookie is refused and leaves the state as it
// was; any other use spends it: unknown, expired or reused state, an iss that is not the upstream's (RFC 9207
// §2.4) and an error answer (RFC 6749 §4.1.2.1) are refused; else the code
// is exchanged (with the PKCE verifier) and the tokens stored for the
// session, whose waiters are told.
func (b *Broker) Callback(ctx context.Context, q url.Values, cookie func(name string) string) (*Completed, error) {
	st := q.Get("state")
	if st == "" {
		return nil, refused("The sign-in answer has no state. Start again from the link the agent gave you.")
	}
	now := b.now()
	// The browser binding is checked before the state is spent: a
	// request without the state's cookie (anyone who saw the link) must
	// not cancel the user's sign-in.
	var rec *stateRecord
	otherBrowser := false
	err := b.opts.Store.Update(ctx, func(tx state.Tx) error {
		var err error
		if rec, err = getJSON[stateRecord](tx, kindState, hashOf(st)); err != nil || rec == nil {
			return err
		}
		got := hashOf(cookie(cookieName(st)))
		if otherBrowser = subtle.ConstantTimeCompare([]byte(got), []byte(rec.Cookie)) != 1; otherBrowser && now.Before(rec.Expires) {
			return nil
		}
		return tx.Delete(kindState, hashOf(st))
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot complete the sign-in: %w", err)
	case rec == nil:
		b.log.Warn("broker: callback refused", "reason", "unknown or reused state")
		return nil, refused("This sign-in is unknown or was already completed. Ask the agent for a new link.")
	case !now.Before(rec.Expires):
		b.log.Warn("broker: callback refused", "upstream", rec.Upstream, "reason", "expired state")
		return nil, refused("This sign-in expired. Ask the agent for a new link.")
	case otherBrowser:
		b.log.Warn("broker: callback refused", "upstream", rec.Upstream, "reason", "the state was started in another browser")
		return nil, refused("This sign-in was started in another browser. Open the link the agent gave you in this browser, or ask for a new one.")
	}
	u := b.upstreams[rec.Upstream]
	if u == nil {
		return nil, refused("The upstream of this sign-in is no longer configured.")
	}
	// Without a known issuer (explicit endpoints only) there is nothing
	// to compare an iss with.
	if iss, ok := q["iss"]; (ok || u.IssRequired) && u.Issuer != "" {
		if !ok || len(iss) != 1 || iss[0] != u.Issuer {
			b.log.Warn("broker: callback refused", "upstream", u.ID, "reason", "iss is not the upstream's issuer (RFC 9207)")
			return nil, refused("The sign-in answer came from another authorization server than %s's (RFC 9207). Nothing was stored.", u.Label)
		}
	}
	if e := q.Get("error"); e != "" {
		b.log.Info("broker: sign-in refused by the upstream", "upstream", u.ID, "error", wire.QuoteValue(e))
		b.opts.Telemetry.BrokerSignIn("refused")
		err := upstreamRefused(u, e)
		b.recordFailure(rec.Session, u.ID, err.Error())
		return nil, err
	}
	code := q.Get("code")
	if code == "" {
		return nil, refused("The sign-in answer has no authorization code.")
	}
	verifier, err := b.unseal(rec.Verifier, "verifier")
	if err != nil {
		return nil, fmt.Errorf("cannot complete the sign-in: %w", err)
	}
	tok, err := flows.ExchangeCode(ctx, b.opts.HTTPClient, flows.CodeExchange{TokenEndpoint: u.TokenEndpoint, Client: u.Client,
		Code: code, RedirectURI: b.RedirectURI(), Verifier: string(verifier), Resource: u.Resource, Scopes: u.Scopes})
	if err != nil {
		b.log.Warn("broker: code exchange failed", "upstream", u.ID, "err", err)
		b.recordFailure(rec.Session, u.ID, u.Label+" did not issue a token.")
		return nil, refused("%s did not issue a token: the sign-in did not complete.", u.Label)
	}
	if err := b.putToken(ctx, rec.Session, u.ID, tok); err != nil {
		return nil, err
	}
	b.clearFailure(rec.Session, u.ID)
	b.log.Info("broker: signed in", "upstream", u.ID, "elicitation", LogID(rec.ElicitationID))
	b.opts.Telemetry.BrokerSignIn("signed_in")
	b.opts.Telemetry.Audit(ops.EventUpstreamSignIn, "upstream", u.ID)
	b.notify(rec.Session, u.ID)
	return &Completed{Session: rec.Session, Upstream: u, ElicitationID: rec.ElicitationID, Account: rec.Account}, nil
}

// upstreamRefused is the page of an error answer (RFC 6749 §4.1.2.1): in
// words, with what to do next; the error code only when it is not one a
// user causes (access_denied: the user, or the upstream, said no).
func upstreamRefused(u *Upstream, code string) error {
	next := "To try again, run the agent's command again and open the new link it gives you."
	if code == "access_denied" {
		return &CallbackError{Message: "You, or " + u.Label + ", declined the sign-in: the agent gets no access to " + u.Label + ".",
			Next: next + " If " + u.Label + " signed you in with the wrong account, sign out there first."}
	}
	return &CallbackError{Message: u.Label + " could not sign you in (it answered " + wire.QuoteValue(code) + ").",
		Next: next + " If it fails again, tell the operator of this server: " + u.Label + "'s client settings may be wrong."}
}

// OnSignedIn registers fn, called after each completed sign-in.
func (b *Broker) OnSignedIn(fn func(sid, upstream string)) {
	b.mu.Lock()
	b.watchers = append(b.watchers, fn)
	b.mu.Unlock()
}

func (b *Broker) notify(sid, upstream string) {
	b.mu.Lock()
	watchers := append([]func(string, string){}, b.watchers...)
	k := tokenKey(sid, upstream)
	for _, c := range b.waiting[k] {
		close(c)
	}
	delete(b.waiting, k)
	b.mu.Unlock()
	for _, fn := range watchers {
		fn(sid, upstream)
	}
}

// Pending says until when the session has a sign-in to the upstream
// under way (handed out or opened, not expired); zero for none.
func (b *Broker) Pending(ctx context.Context, sid, upstream string) (time.Time, error) {
	now := b.now()
	var until time.Time
	err := b.opts.Store.View(ctx, func(tx state.Tx) error {
		for _, k := range []state.Kind{kindPending, kindState} {
			recs, err := tx.List(k)
			if err != nil {
				return err
			}
			for _, r := range recs {
				var p pendingRecord // stateRecord shares its fields
				if json.Unmarshal(r.Value, &p) == nil && p.Session == sid && p.Upstream == upstream && now.Before(p.Expires) && p.Expires.After(until) {
					until = p.Expires
				}
			}
		}
		return nil
	})
	return until, err
}

// Wait returns when the session is signed in to the upstream, or with an
// error when ctx ends first or at until.
func (b *Broker) Wait(ctx context.Context, sid, upstream string, until time.Time) error {
	k := tokenKey(sid, upstream)
	c := make(chan struct{})
	b.mu.Lock()
	b.waiting[k] = append(b.waiting[k], c)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, w := range b.waiting[k] {
			if w == c {
				b.waiting[k] = append(b.waiting[k][:i], b.waiting[k][i+1:]...)
				break
			}
		}
		if len(b.waiting[k]) == 0 {
			delete(b.waiting, k)
		}
	}()
	if ok, _, err := b.Status(ctx, sid, upstream); err == nil && ok {
		return nil
	}
	t := time.NewTimer(until.Sub(b.now()))
	defer t.Stop()
	select {
	case <-c:
		return nil
	case <-t.C:
		return ErrExpired
	case <-ctx.Done():
		return ctx.Err()
	}
}
