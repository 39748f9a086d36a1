package resource

import (
	"errors"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/wire"
)

// DPoP on a protected resource (RFC 9449 §7): a token bound to a key (cnf.jkt)
// is accepted only with the DPoP scheme and a valid proof of that key.
const (
	// DPoPWindow bounds |now - iat| of a proof.
	DPoPWindow = 60 * time.Second
)

// DPoPProofLimits bound the replay cache of proof ids (RFC 9449 §11.1),
// kept in this process's memory: an id is kept until iat + DPoPWindow,
// when the proof could no longer be accepted anyway; at a bound a new
// proof is refused (429 for the key, 503 for all, with Retry-After) and a
// kept id is never evicted, since an evicted id is a replay accepted.
// Replicas do not share it (see SECURITY.md).
var DPoPProofLimits = bounded.Limits{PerOwner: 10000, Owners: 10000, Total: 100000, Retry: 2 * DPoPWindow}

// confirmation is the cnf member (RFC 7800 §3.1) of a JWT access token
// (RFC 9449 §6.1) or of an introspection response (RFC 9449 §6.2).
type confirmation struct {
	JKT string `json:"jkt"`
}

// bind records on g the DPoP key the token is bound to, so checkDPoP holds
// it to the same proof rules whichever validator accepted it. A cnf
// without jkt binds the token to something this resource server cannot check, so
// the token is refused rather than taken as a bearer token.
func (c *confirmation) bind(g *Grant) error {
	if c == nil {
		return nil
	}
	if c.JKT == "" {
		return invalidf("The access token's cnf has no jkt (RFC 9449 section 6.1)")
	}
	g.JKT = c.JKT
	return nil
}

// dpopRefusal is 401 with a DPoP challenge (RFC 9449 §7.1): the proof
// is missing or invalid.
func dpopRefusal(desc string) *Refusal {
	return &Refusal{Status: http.StatusUnauthorized, DPoP: true,
		Challenge: map[string]string{"error": wire.ErrInvalidDPoPProof, "error_description": desc, "algs": "ES256"},
		Err:       wire.Errorf(wire.CodeInvalidRequest, "invalid DPoP proof: %s", desc)}
}

// checkDPoP enforces the binding of a grant (RFC 9449 §7.1): a bound
// token must come with the DPoP scheme and one proof of its key for this
// request (htm, htu, iat, ath), never seen before.
func (b *Bearer) checkDPoP(r *http.Request, scheme, token string, g *Grant) *Refusal {
	if g.JKT == "" {
		return nil
	}
	if scheme != wire.TokenTypeDPoP {
		return dpopRefusal("The access token is DPoP-bound: present it with the DPoP scheme and a DPoP proof (RFC 9449 section 7.1)")
	}
	proofs := r.Header.Values(wire.HeaderDPoP)
	if len(proofs) != 1 {
		return dpopRefusal("Send exactly one DPoP proof header")
	}
	now := b.now()
	p, err := wire.CheckDPoPProof(proofs[0], wire.DPoPCheck{Method: r.Method, URI: b.opts.Resource, AccessToken: token, Now: now, Window: DPoPWindow})
	switch {
	case err != nil:
		return dpopRefusal(wire.ErrorDescription(err.Error()))
	case p.JKT != g.JKT:
		return dpopRefusal("The DPoP proof is not made with the key the access token is bound to")
	}
	err = b.jtis.Remember(p.JKT, p.JTI, p.Expires, now)
	if errors.Is(err, bounded.ErrReplayed) {
		return dpopRefusal("The DPoP proof was already used (jti)")
	}
	if full, ok := errors.AsType[*bounded.FullError](err); ok {
		ref := &Refusal{Status: http.StatusServiceUnavailable, RetryAfter: full.RetrySeconds(),
			Err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: this server holds %d unexpired DPoP proofs already; retry in %s seconds", full.Limit, full.RetrySeconds())}
		if full.Owner {
			ref.Status = http.StatusTooManyRequests
			ref.Err = wire.Errorf(wire.CodeInvalidRequest, "invalid request: more than %d DPoP proofs of this key within %s; retry in %s seconds", full.Limit, DPoPWindow, full.RetrySeconds())
		}
		return ref
	}
	return nil
}
