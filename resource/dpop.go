package resource

import (
	"net/http"
	"sync"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// DPoP on a protected resource (RFC 9449 §7): a token bound to a key (cnf.jkt)
// is accepted only with the DPoP scheme and a valid proof of that key.
const (
	// DPoPWindow bounds |now - iat| of a proof.
	DPoPWindow = 60 * time.Second
	// MaxDPoPJTIs bounds the replay cache of proof ids; when it is full
	// the ids that left DPoPWindow are dropped, then the oldest.
	MaxDPoPJTIs = 10000
)

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

// jtiCache remembers proof ids until they leave the window, at most max.
type jtiCache struct {
	mu    sync.Mutex
	max   int
	seen  map[string]time.Time
	order []string // insertion order, for eviction
}

func newJTICache(max int) *jtiCache { return &jtiCache{max: max, seen: map[string]time.Time{}} }

// add records jti until expires and reports false when it was seen.
func (c *jtiCache) add(jti string, expires, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.seen[jti]; ok && now.Before(exp) {
		return false
	}
	if len(c.order) >= c.max {
		kept := c.order[:0]
		for _, j := range c.order {
			if now.Before(c.seen[j]) {
				kept = append(kept, j)
			} else {
				delete(c.seen, j)
			}
		}
		c.order = kept
		for len(c.order) >= c.max {
			delete(c.seen, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.seen[jti] = expires
	c.order = append(c.order, jti)
	return true
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
	case !b.jtis.add(p.JTI, p.Expires, now):
		return dpopRefusal("The DPoP proof was already used (jti)")
	}
	return nil
}
