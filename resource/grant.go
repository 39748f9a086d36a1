package resource

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sync/singleflight"
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
	JTI string
	// Family is the token family's id (its sid claim, as serve's
	// embedded issuer sets it: one login and its refreshes), revoked as
	// one; empty when the token has none.
	Family string
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

// ExpiredAt reports whether the grant has expired at now.
func (g *Grant) ExpiredAt(now time.Time) bool {
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
// Hint, when set, is for the operator's log only (a configuration option
// that would accept the token): it is never sent to the client.
type TokenError struct {
	Kind        TokenErrorKind
	Description string
	Hint        string
}

func (e *TokenError) Error() string {
	return "token rejected: " + strings.ToLower(e.Description[:1]) + e.Description[1:]
}

func invalidf(description string) *TokenError {
	return &TokenError{Kind: TokenInvalid, Description: description}
}

// The rejections of an expired and of a revoked token.
var (
	ErrExpired = &TokenError{Kind: TokenExpired, Description: "The access token expired"}
	ErrRevoked = &TokenError{Kind: TokenRevoked, Description: "The access token was revoked"}
)

// Validator checks one token: static.go, jwt.go (RFC 9068) and
// introspect.go (RFC 7662) implement it. A *TokenError means the token is
// bad; any other error means it could not be checked (the authorization
// server is unreachable, say).
type Validator interface {
	Validate(ctx context.Context, token string) (*Grant, error)
}

// maxCachedGrants bounds the grant cache.
const maxCachedGrants = 4096

// grantCache remembers validated tokens by their SHA-256, so a repeated
// validation costs no signature check or network round trip. An entry lives
// until the grant expires and, when ttl > 0, no longer than ttl.
type grantCache struct {
	now func() time.Time
	ttl time.Duration

	mu      sync.RWMutex
	entries map[[32]byte]cacheEntry
}

// tokenKey is the cache key of a token: its SHA-256, hashed in place
// (the token is read, never copied or kept).
func tokenKey(token string) [32]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

type cacheEntry struct {
	grant *Grant
	until time.Time // zero: until evicted
}

func newGrantCache(now func() time.Time, ttl time.Duration) *grantCache {
	return &grantCache{now: now, ttl: ttl, entries: map[[32]byte]cacheEntry{}}
}

// get returns the grant cached for the token with key k, under a read
// lock; an expired entry is removed under the write lock.
func (c *grantCache) get(k [32]byte) *Grant {
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if !ok {
		return nil
	}
	if !e.until.IsZero() && !c.now().Before(e.until) {
		c.mu.Lock()
		if cur, ok := c.entries[k]; ok && cur == e {
			delete(c.entries, k)
		}
		c.mu.Unlock()
		return nil
	}
	return e.grant
}

func (c *grantCache) put(k [32]byte, g *Grant) {
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
	c.entries[k] = cacheEntry{grant: g, until: until}
}

func (c *grantCache) drop(token string) {
	k := tokenKey(token)
	c.mu.Lock()
	delete(c.entries, k)
	c.mu.Unlock()
}

// NewChecker checks the tokens of the scheme named scheme with v, caching
// each grant until it expires and, when ttl > 0, for at most ttl.
// validated, when not nil, is called after each validation that was not a
// cache hit.
func NewChecker(scheme string, v Validator, ttl time.Duration, now func() time.Time, validated func()) *Checker {
	return &Checker{scheme: scheme, v: v, cache: newGrantCache(now, ttl), validated: validated}
}

// Drop forgets the cached grant of token.
func (c *Checker) Drop(token string) { c.cache.drop(token) }

// Checker validates one scheme's tokens through its grant cache, with
// single flight: the concurrent first uses of one token validate it once.
type Checker struct {
	scheme string
	v      Validator
	cache  *grantCache
	// flights makes concurrent validations of one token share one: the
	// first runs, the others wait for its answer.
	flights singleflight.Group
	// validated, when set, is called after each validation that is not a
	// cache hit (a signature check, an introspection), for the debug log.
	validated func()
}

// Check validates token, from the cache unless fresh is set. A rejected
// token is dropped from the cache at once. Concurrent misses for one token
// wait for the first validation instead of repeating it; a caller whose
// ctx ends stops waiting, while the validation goes on for the others.
func (c *Checker) Check(ctx context.Context, token string, fresh bool) (*Grant, error) {
	k := tokenKey(token)
	if !fresh {
		if g := c.cache.get(k); g != nil {
			return g, nil
		}
	}
	return c.share(ctx, k, token)
}

// share runs the validation of the token with key k, or waits for the one
// under way (a function of its own, so that a cache hit allocates nothing).
func (c *Checker) share(ctx context.Context, k [32]byte, token string) (*Grant, error) {
	ch := c.flights.DoChan(string(k[:]), func() (any, error) {
		return c.validate(context.WithoutCancel(ctx), k, token)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Grant), nil
	}
}

// validate asks the validator and caches its answer.
func (c *Checker) validate(ctx context.Context, k [32]byte, token string) (*Grant, error) {
	g, err := c.v.Validate(ctx, token)
	if c.validated != nil {
		c.validated()
	}
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			c.cache.drop(token)
		}
		return nil, err
	}
	out := *g
	out.Scheme = c.scheme
	c.cache.put(k, &out)
	return &out, nil
}
