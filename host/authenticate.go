package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

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
	if p.Binding != nil {
		if !published || !ahp1 {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: binding is AHP 1.x's client-brokered delivery, which this connection did not negotiate")
		}
		return s.authenticateBound(p, func(admit func(*scheme, *Grant) *wire.Error) (*Grant, []wire.Challenge, error) {
			return s.acceptIf(ctx, cands, p.Token, p.Scopes, p.ExpiresIn, admit)
		})
	}
	for _, sc := range cands {
		if id := s.bookedResource(sc.Resource); id != "" {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %s's credential belongs to host account %q: deliver with binding {\"kind\": \"account\", \"accountId\": %q}", sc.Resource, id, id)
		}
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

// accept validates token against each candidate in turn and holds the
// first grant. authenticate's scopes, when given, narrow the grant to them
// (RFC 6749 §3.3: never wider than the token; a scope the token lacks is
// refused with insufficient_scope), and a grant without an expiry takes
// expiresIn seconds from now. Otherwise it returns a challenge per
// rejecting scheme, or the error that kept the token from being checked.
func (s *session) accept(ctx context.Context, cands []*scheme, token string, scopes []string, expiresIn *int64) (*Grant, []wire.Challenge, error) {
	return s.acceptIf(ctx, cands, token, scopes, expiresIn, nil)
}

// acceptIf is accept with admit, when not nil, asked before a validated
// grant is held: its error (a *wire.Error) refuses the token and is
// returned as accept's error, with nothing held.
func (s *session) acceptIf(ctx context.Context, cands []*scheme, token string, scopes []string, expiresIn *int64, admit func(*scheme, *Grant) *wire.Error) (*Grant, []wire.Challenge, error) {
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
			if admit != nil {
				if rerr := admit(sc, g); rerr != nil {
					h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "rejected", "reason", rerr.Message)
					return nil, nil, rerr
				}
			}
			h.hold(s.table(), sc, token, g, s)
			h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "subject", g.Subject, "outcome", "accepted")
			h.tel.Validation("accepted")
			return g, nil, nil
		}
		var te *TokenError
		if !errors.As(err, &te) {
			failure = err
			h.log.Warn("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "error", "reason", err.Error())
			h.tel.Validation("error")
			continue
		}
		h.log.Info("auth decision", withHint([]any{"conn", s.id, "scheme", sc.ID, "outcome", "rejected", "reason", te.Description}, te.Hint)...)
		h.tel.Validation("rejected")
		h.tel.Refusal("invalid_token")
		chs = append(chs, h.challenge(sc, statusOf(te)))
	}
	return nil, chs, failure
}
