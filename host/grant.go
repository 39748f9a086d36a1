package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// Grant is what a validated token establishes. It never holds the token.
type Grant struct {
	// Scheme is the id of the scheme that accepted the token.
	Scheme   string
	Subject  string
	ClientID string
	Scopes   []string
	// Expiry is zero when the token does not expire.
	Expiry time.Time
	// JTI is the token's identifier (RFC 7519 §4.1.7), when it has one.
	JTI    string
	Issuer string
	// JKT is the thumbprint of the DPoP key the token is bound to (cnf,
	// RFC 9449 §6.1): the HTTP face then requires a proof of it.
	JKT string
}

// HasScopes reports whether the grant holds every scope in need.
func (g *Grant) HasScopes(need []string) bool {
	for _, s := range need {
		if !slices.Contains(g.Scopes, s) {
			return false
		}
	}
	return true
}

func (g *Grant) expiredAt(now time.Time) bool {
	return !g.Expiry.IsZero() && !now.Before(g.Expiry)
}

// TokenErrorKind says why a token was rejected.
type TokenErrorKind int

const (
	// TokenInvalid: bad signature, issuer, audience, nbf, algorithm, or an
	// unknown token.
	TokenInvalid TokenErrorKind = iota
	// TokenExpired: exp has passed.
	TokenExpired
	// TokenRevoked: the authorization server withdrew the token.
	TokenRevoked
)

// TokenError is a rejected token. Description is the RFC 6750 §3
// error_description shown to the client; it never contains the token.
type TokenError struct {
	Kind        TokenErrorKind
	Description string
}

func (e *TokenError) Error() string {
	return "token rejected: " + strings.ToLower(e.Description[:1]) + e.Description[1:]
}

func invalidf(description string) *TokenError {
	return &TokenError{Kind: TokenInvalid, Description: description}
}

var (
	errExpired = &TokenError{Kind: TokenExpired, Description: "The access token expired"}
	errRevoked = &TokenError{Kind: TokenRevoked, Description: "The access token was revoked"}
)

// validator checks one token. A *TokenError means the token is bad; any
// other error means it could not be checked (the authorization server is
// unreachable, say).
type validator interface {
	validate(ctx context.Context, token string) (*Grant, error)
}

// maxCachedGrants bounds the grant cache.
const maxCachedGrants = 4096

// grantCache remembers validated tokens by their SHA-256, so a repeated
// validation costs no signature check or network round trip. An entry lives
// until the grant expires and, when ttl > 0, no longer than ttl.
type grantCache struct {
	now func() time.Time
	ttl time.Duration

	mu      sync.Mutex
	entries map[[32]byte]cacheEntry
}

type cacheEntry struct {
	grant *Grant
	until time.Time // zero: until evicted
}

func newGrantCache(now func() time.Time, ttl time.Duration) *grantCache {
	return &grantCache{now: now, ttl: ttl, entries: map[[32]byte]cacheEntry{}}
}

func (c *grantCache) get(token string) *Grant {
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil
	}
	if !e.until.IsZero() && !c.now().Before(e.until) {
		delete(c.entries, k)
		return nil
	}
	return e.grant
}

func (c *grantCache) put(token string, g *Grant) {
	now := c.now()
	until := g.Expiry
	if c.ttl > 0 && (until.IsZero() || now.Add(c.ttl).Before(until)) {
		until = now.Add(c.ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedGrants {
		for k, e := range c.entries {
			if !e.until.IsZero() && !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < maxCachedGrants {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[sha256.Sum256([]byte(token))] = cacheEntry{grant: g, until: until}
}

func (c *grantCache) drop(token string) {
	c.mu.Lock()
	delete(c.entries, sha256.Sum256([]byte(token)))
	c.mu.Unlock()
}

// dropJTIs forgets every grant whose JTI is in jtis and returns the latest
// expiry among them.
func (c *grantCache) dropJTIs(jtis map[string]bool) time.Time {
	var latest time.Time
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.grant.JTI != "" && jtis[e.grant.JTI] {
			delete(c.entries, k)
			if e.grant.Expiry.After(latest) {
				latest = e.grant.Expiry
			}
		}
	}
	return latest
}

// checker validates one scheme's tokens through its cache.
type checker struct {
	scheme string
	v      validator
	cache  *grantCache
}

// check validates token, from the cache unless fresh is set. A rejected
// token is dropped from the cache at once.
func (c *checker) check(ctx context.Context, token string, fresh bool) (*Grant, error) {
	if !fresh {
		if g := c.cache.get(token); g != nil {
			return g, nil
		}
	}
	g, err := c.v.validate(ctx, token)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			c.cache.drop(token)
		}
		return nil, err
	}
	out := *g
	out.Scheme = c.scheme
	c.cache.put(token, &out)
	return &out, nil
}
