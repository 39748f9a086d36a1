package host

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

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
// Its cost is that of the ids and of the grants holding them, whatever the
// number of revocations before.
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
		h.lapse(t, e, resource.ErrRevoked)
	}
}

func (h *Host) isRevoked(g *Grant) bool { return h.revoked.revoked(g) }

// validate checks token against one scheme, refusing revoked JTIs.
func (h *Host) validate(ctx context.Context, sc *scheme, token string, fresh bool) (*Grant, error) {
	g, err := sc.checker.Check(ctx, token, fresh)
	if err != nil {
		return nil, err
	}
	if h.isRevoked(g) {
		sc.checker.Drop(token)
		return nil, resource.ErrRevoked
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
	return h.validateAmong(ctx, h.r().mcp, token) // never empty: see Config.checkResolved
}

// schemesAt are the schemes whose resource is res.
func (h *Host) schemesAt(res string) []*scheme {
	var out []*scheme
	for _, sc := range h.r().schemes {
		if sc.Resource == res {
			out = append(out, sc)
		}
	}
	return out
}

// validateAmong is ValidateBearer over the given schemes (not empty).
func (h *Host) validateAmong(ctx context.Context, schemes []*scheme, token string) (*Grant, *wire.Challenge, error) {
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
	var hint string // the first rejection's TokenError.Hint, for the log only
	var failure error
	for _, sc := range schemes {
		g, err := h.validate(ctx, sc, token, false)
		if err == nil {
			h.accepted.Add(1)
			h.tel.Validation("accepted")
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
			rejected, hint = &ch, te.Hint
		}
	}
	if rejected == nil {
		h.log.Warn("auth decision", "face", "http", "outcome", "error", "reason", failure.Error())
		h.tel.Validation("error")
		return nil, nil, failure
	}
	h.refused.Add(1)
	h.log.Info("auth decision", withHint([]any{"face", "http", "scheme", rejected.SchemeID, "outcome", "rejected", "reason", rejected.ErrorDescription}, hint)...)
	h.tel.Validation("rejected")
	h.tel.Refusal("invalid_token")
	return nil, rejected, nil
}

// withHint adds a rejection's operator hint (TokenError.Hint: the option
// that would accept the token) to a log record's attributes.
func withHint(attrs []any, hint string) []any {
	if hint == "" {
		return attrs
	}
	return append(attrs, "hint", hint)
}
