package resource

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"
)

// staticValidator accepts the tokens listed in the config. Tokens are looked
// up by their SHA-256, so the lookup time does not depend on how much of a
// token matches. A token's expiresIn lifetime starts when the host first
// sees the token and stays fixed for the life of the process.
type staticValidator struct {
	now    func() time.Time
	issuer string
	tokens map[[32]byte]StaticToken

	mu        sync.Mutex
	firstSeen map[[32]byte]time.Time
}

func newStaticValidator(s Scheme, now func() time.Time) *staticValidator {
	v := &staticValidator{now: now, tokens: map[[32]byte]StaticToken{}, firstSeen: map[[32]byte]time.Time{}}
	if len(s.AuthorizationServers) > 0 {
		v.issuer = s.AuthorizationServers[0]
	}
	for _, t := range s.Validation.Tokens {
		v.tokens[sha256.Sum256([]byte(t.Token))] = t
	}
	return v
}

func (v *staticValidator) Validate(_ context.Context, token string) (*Grant, error) {
	k := sha256.Sum256([]byte(token))
	t, ok := v.tokens[k]
	if !ok {
		return nil, invalidf("The access token is not recognised")
	}
	g := &Grant{Subject: t.Subject, ClientID: t.ClientID, Scopes: t.Scopes, Issuer: v.issuer}
	if t.ExpiresIn > 0 {
		now := v.now()
		v.mu.Lock()
		first, seen := v.firstSeen[k]
		if !seen {
			first = now
			v.firstSeen[k] = now
		}
		v.mu.Unlock()
		g.Expiry = first.Add(time.Duration(t.ExpiresIn))
		if g.ExpiredAt(now) {
			return nil, ErrExpired
		}
	}
	return g, nil
}
