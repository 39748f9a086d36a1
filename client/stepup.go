package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// maxAuthorizations bounds the logins and step-ups of one command (MCP
// 2025-11-25 "Authorization", scope challenge handling: clients should
// limit retries rather than loop).
const maxAuthorizations = 3

// authAction is what call does after the server refused a request.
type authAction int

const (
	// authStop gives up: the refusal is reported and call exits 4.
	authStop authAction = iota
	// authRefresh refreshes the stored credential once, then retries.
	authRefresh
	// authLogin runs discovery and the login flow, then retries.
	authLogin
	// authStepUp logs in again with the held scopes and the challenge's,
	// then retries.
	authStepUp
)

// StopReason says why call gave up on a refused request.
type StopReason int

const (
	// StopNoLogin: authorization is needed and --login was not given.
	StopNoLogin StopReason = iota + 1
	// stopFreshRejected: a 401 for the token this command just obtained.
	stopFreshRejected
	// stopLimit: maxAuthorizations were used and the server still refuses.
	stopLimit
	// stopForbidden: a 403 that names no scope to ask for.
	stopForbidden
	// stopBearerOnly: a 401 for a DPoP-bound token from a server whose
	// challenges offer only Bearer (RFC 9449 §7.1 would offer DPoP).
	stopBearerOnly
)

// authDecision is the state machine's answer to one refusal.
type authDecision struct {
	Action authAction
	// Scopes are what a step-up asks for: the held scopes and the
	// challenge's (RFC 6749 §3.3 scope tokens).
	Scopes []string
	// Stop is set when Action is authStop.
	Stop StopReason
}

// authRetry is call's automatic authorization for one command over MCP
// Streamable HTTP: a small state machine fed with the server's refusals
// (RFC 6750 §3, RFC 9728 §5.1, MCP 2025-11-25 "Authorization"):
//
//   - 401 for a stored token not yet refreshed in this command, with a
//     refresh token: refresh once (RFC 6749 §6), retry;
//   - 401 for the token this command's own login just obtained, before the
//     server accepted it once: stop, rather than loop (once accepted, a
//     401 means something changed, such as the protected resource naming
//     another authorization server: MCP 2026-07-28 "Authorization", and
//     it is handled like any 401);
//   - 401 otherwise, with --login: discovery and login, retry;
//   - 403 insufficient_scope naming a scope, with --login: log in again
//     asking for the held scopes plus the challenge's (never a refresh,
//     which cannot widen a grant), retry;
//   - without --login, after maxAuthorizations logins and step-ups, or on
//     another 403: stop.
type authRetry struct {
	// Login allows authorizing (call --login).
	Login bool
	// Held is the credential whose access token is sent; nil sends none.
	Held *store.Credential
	// Refresh renews Held after the server rejected it
	// (credentialSource.Refresh). An *AuthError means it cannot be
	// refreshed; with Login, a login follows.
	Refresh func(ctx context.Context, stale *store.Credential) (*store.Credential, error)
	// Authorize runs discovery from the refusal and the login flow, asking
	// for scopes when not nil (else the challenge's scope, else the
	// resource's scopes_supported), and returns the stored credential.
	Authorize func(ctx context.Context, refusal *wire.HTTPAuthError, scopes []string) (*store.Credential, error)

	authorizations int
	refreshed      bool
	// fresh: Held was obtained by Authorize in this command and the
	// server has not accepted it yet.
	fresh bool
}

// RefusedError is a request the server refused for good.
type RefusedError struct {
	Reason  StopReason
	Refusal *wire.HTTPAuthError
	// Held are the scopes of the token that was refused.
	Held []string
}

func (e *RefusedError) Error() string {
	status := fmt.Sprintf("HTTP %d %s", e.Refusal.StatusCode, http.StatusText(e.Refusal.StatusCode))
	if code := e.Refusal.Challenge.Param("error"); code != "" {
		status += " " + code
	}
	switch e.Reason {
	case stopFreshRejected:
		return fmt.Sprintf("the server rejected the token just obtained by logging in (%s); not logging in again", status)
	case stopLimit:
		return fmt.Sprintf("the server still refuses after %d authorizations (%s): missing scope %q",
			maxAuthorizations, status, wire.JoinScope(e.MissingScopes()))
	case stopForbidden:
		return fmt.Sprintf("the server refused the request (%s) and names no scope to ask for", status)
	case stopBearerOnly:
		return fmt.Sprintf("this server accepts only Bearer tokens (%s), and the stored token is DPoP-bound (login --dpop): log in again without --dpop", status)
	}
	if e.Refusal.StatusCode == http.StatusForbidden {
		return fmt.Sprintf("the server needs more scope (%s): missing scope %q", status, wire.JoinScope(e.MissingScopes()))
	}
	return fmt.Sprintf("the server needs authorization (%s)", status)
}

func (e *RefusedError) Unwrap() error { return e.Refusal }

// MissingScopes are the challenge's scopes the refused token lacks, or all
// of them when it seemed to hold them.
func (e *RefusedError) MissingScopes() []string {
	want := wire.SplitScope(e.Refusal.Challenge.Param("scope"))
	var missing []string
	for _, s := range want {
		if !slices.Contains(e.Held, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return want
	}
	return missing
}

// offersDPoP says whether a WWW-Authenticate offers the DPoP scheme
// (RFC 9449 §7.1).
func offersDPoP(headers []string) bool {
	for _, c := range wire.ParseWWWAuthenticate(headers) {
		if strings.EqualFold(c.Scheme, "DPoP") {
			return true
		}
	}
	return false
}

// next decides what to do about one refusal, from the state alone.
func (a *authRetry) next(refusal *wire.HTTPAuthError) authDecision {
	stop := func(r StopReason) authDecision { return authDecision{Action: authStop, Stop: r} }
	challengeScope := wire.SplitScope(refusal.Challenge.Param("scope"))
	if refusal.StatusCode == http.StatusForbidden {
		switch {
		case refusal.Challenge.Param("error") != wire.ErrInsufficientScope || len(challengeScope) == 0:
			return stop(stopForbidden)
		case !a.Login:
			return stop(StopNoLogin)
		case a.authorizations >= maxAuthorizations:
			return stop(stopLimit)
		}
		var held []string
		if a.Held != nil {
			held = a.Held.Scopes
		}
		return authDecision{Action: authStepUp, Scopes: unionScopes(held, challengeScope)}
	}
	switch {
	case a.Held != nil && a.Held.DPoPKey != "" && !offersDPoP(refusal.Header):
		return stop(stopBearerOnly)
	case a.Held != nil && !a.fresh && !a.refreshed && a.Held.RefreshToken != "":
		return authDecision{Action: authRefresh}
	case a.Held != nil && a.fresh:
		return stop(stopFreshRejected)
	case !a.Login:
		return stop(StopNoLogin)
	case a.authorizations >= maxAuthorizations:
		return stop(stopLimit)
	}
	return authDecision{Action: authLogin}
}

// do runs send (which sends Held's token) until it is not refused with a
// 401 or 403, or the state machine stops: a *RefusedError.
func (a *authRetry) do(ctx context.Context, send func(context.Context) error) error {
	for {
		err := send(ctx)
		var refusal *wire.HTTPAuthError
		if !errors.As(err, &refusal) {
			a.fresh = false // accepted
			return err
		}
		if err := a.recover(ctx, refusal); err != nil {
			return err
		}
	}
}

// recover acts on one refusal; nil means send again.
func (a *authRetry) recover(ctx context.Context, refusal *wire.HTTPAuthError) error {
	for {
		d := a.next(refusal)
		switch d.Action {
		case authRefresh:
			a.refreshed = true
			c, err := a.Refresh(ctx, a.Held)
			var auth *AuthError
			if errors.As(err, &auth) && a.Login {
				continue // no usable refresh token: decide again, now to log in
			}
			if err != nil {
				return err
			}
			a.Held = c
			return nil
		case authLogin, authStepUp:
			a.authorizations++
			c, err := a.Authorize(ctx, refusal, d.Scopes)
			if err != nil {
				return err
			}
			a.Held, a.fresh = c, true
			return nil
		}
		var held []string
		if a.Held != nil {
			held = a.Held.Scopes
		}
		return &RefusedError{Reason: d.Stop, Refusal: refusal, Held: held}
	}
}

// unionScopes is a then b, without duplicates, in order.
func unionScopes(a, b []string) []string {
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
