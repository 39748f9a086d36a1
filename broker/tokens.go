package broker

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
)

// tokenRecord holds a session's upstream tokens: kindToken, by
// session/upstream. The broker must use the refresh token, so it is kept,
// not hashed; with a key the whole record is sealed.
type tokenRecord struct {
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Expiry        time.Time `json:"expiry,omitzero"`
	RefreshExpiry time.Time `json:"refresh_expiry,omitzero"`
	Scopes        []string  `json:"scopes,omitempty"`
	// Expires is the record's own expiry (recordExpiry), after which it
	// is treated as absent and swept.
	Expires time.Time `json:"expires,omitzero"`
}

// sliding says whether the record lives for Options.TokenLifetime from its
// last use, its tokens saying nothing of when the sign-in ends.
func (t *tokenRecord) sliding() bool {
	return t.RefreshExpiry.IsZero() && (t.RefreshToken != "" || t.Expiry.IsZero())
}

// recordExpiry is when a record written now stops being usable: when its
// refresh token expires, if the upstream said (refresh_expires_in); when
// its access token expires, if there is no refresh token; else
// tokenLifetime from now, renewed by each use and refresh.
func (b *Broker) recordExpiry(t *tokenRecord, now time.Time) time.Time {
	switch {
	case !t.sliding() && !t.RefreshExpiry.IsZero():
		return t.RefreshExpiry
	case !t.sliding():
		return t.Expiry
	}
	return now.Add(b.tokenLifetime)
}

// sealedPrefix marks a sealed record value.
const sealedPrefix = "sealed:"

func (b *Broker) aead() (cipher.AEAD, error) {
	// A key of its own, derived from the state key, so that a record of
	// one kind never decrypts as another's.
	k := sha256.Sum256(append([]byte("agentauth broker v1\x00"), b.opts.Key...))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plain with AES-256-GCM when the broker has a key (the
// nonce leads the result); without one it returns plain.
func (b *Broker) seal(plain []byte, aad string) ([]byte, error) {
	if b.opts.Key == nil {
		return plain, nil
	}
	a, err := b.aead()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return append([]byte(sealedPrefix), a.Seal(nonce, nonce, plain, []byte(aad))...), nil
}

func (b *Broker) unseal(v []byte, aad string) ([]byte, error) {
	if len(v) < len(sealedPrefix) || string(v[:len(sealedPrefix)]) != sealedPrefix {
		return v, nil
	}
	if b.opts.Key == nil {
		return nil, errors.New("the upstream tokens are encrypted: start serve with the same --state-key-file")
	}
	a, err := b.aead()
	if err != nil {
		return nil, err
	}
	v = v[len(sealedPrefix):]
	if len(v) < a.NonceSize() {
		return nil, errors.New("a sealed record is truncated")
	}
	plain, err := a.Open(nil, v[:a.NonceSize()], v[a.NonceSize():], []byte(aad))
	if err != nil {
		return nil, errors.New("wrong state key, or a damaged record")
	}
	return plain, nil
}

func (b *Broker) putToken(ctx context.Context, sid, upstream string, t *flows.Token) error {
	return b.putRecord(ctx, sid, upstream, &tokenRecord{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry,
		RefreshExpiry: t.RefreshExpiry, Scopes: t.Scopes})
}

// putRecord stores t with its expiry (recordExpiry) and sweeps up to
// maxSweep expired token records.
func (b *Broker) putRecord(ctx context.Context, sid, upstream string, t *tokenRecord) error {
	now := b.now()
	t.Expires = b.recordExpiry(t, now)
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	sealed, err := b.seal(raw, "token")
	if err != nil {
		return err
	}
	err = b.opts.Store.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.DeleteExpired(kindToken, now, maxSweep); err != nil {
			return err
		}
		return tx.Put(kindToken, tokenKey(sid, upstream), sealed, t.Expires)
	})
	if err != nil {
		return fmt.Errorf("cannot store the upstream token: %w", err)
	}
	return nil
}

func (b *Broker) getToken(ctx context.Context, sid, upstream string) (*tokenRecord, error) {
	var raw []byte
	err := b.opts.Store.View(ctx, func(tx state.Tx) error {
		var err error
		raw, err = tx.Get(kindToken, tokenKey(sid, upstream))
		return err
	})
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the upstream token: %w", err)
	}
	plain, err := b.unseal(raw, "token")
	if err != nil {
		return nil, fmt.Errorf("cannot read the upstream token: %w", err)
	}
	var t tokenRecord
	if err := json.Unmarshal(plain, &t); err != nil {
		return nil, fmt.Errorf("cannot read the upstream token: %w", err)
	}
	if !t.Expires.IsZero() && !b.now().Before(t.Expires) {
		return nil, nil // stale: not yet swept
	}
	return &t, nil
}

func (b *Broker) deleteToken(ctx context.Context, sid, upstream string) error {
	return b.opts.Store.Update(ctx, func(tx state.Tx) error { return tx.Delete(kindToken, tokenKey(sid, upstream)) })
}

// keyLock is the lock of one session and upstream, kept while in use.
type keyLock struct {
	sync.Mutex
	users int
}

// lock locks the session's upstream tokens and returns the unlock.
func (b *Broker) lock(sid, upstream string) func() {
	k := tokenKey(sid, upstream)
	b.mu.Lock()
	l := b.locks[k]
	if l == nil {
		l = &keyLock{}
		b.locks[k] = l
	}
	l.users++
	b.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		b.mu.Lock()
		if l.users--; l.users == 0 {
			delete(b.locks, k)
		}
		b.mu.Unlock()
	}
}

// renewDue says whether a use of t renews its record: a sliding record
// past half its lifetime (so a use writes at most twice per lifetime).
func (b *Broker) renewDue(t *tokenRecord) bool {
	return t.sliding() && t.Expires.Sub(b.now()) < b.tokenLifetime/2
}

func (t *tokenRecord) fresh(now time.Time) bool {
	return t.Expiry.IsZero() || now.Add(refreshMargin).Before(t.Expiry)
}

// Token returns the session's access token for the upstream, refreshed
// first (RFC 6749 §6) when it expires within refreshMargin: one refresh
// at a time per session and upstream, the others then use its result.
// ErrSignInNeeded when there is none, or it can no longer be refreshed.
func (b *Broker) Token(ctx context.Context, sid, upstream string) (string, error) {
	u := b.upstreams[upstream]
	if u == nil {
		return "", fmt.Errorf("%w %q", ErrUnknownUpstream, upstream)
	}
	t, err := b.getToken(ctx, sid, upstream)
	if err != nil || t == nil {
		if t == nil && err == nil {
			err = ErrSignInNeeded
		}
		return "", err
	}
	if t.fresh(b.now()) && !b.renewDue(t) {
		return t.AccessToken, nil
	}
	defer b.lock(sid, upstream)()
	if t, err = b.getToken(ctx, sid, upstream); err != nil || t == nil {
		if t == nil && err == nil {
			err = ErrSignInNeeded
		}
		return "", err
	}
	if t.fresh(b.now()) { // another caller refreshed it meanwhile, or a use renews it
		if b.renewDue(t) {
			if err := b.putRecord(ctx, sid, upstream, t); err != nil {
				return "", err
			}
		}
		return t.AccessToken, nil
	}
	if t.RefreshToken == "" {
		if b.now().Before(t.Expiry) {
			return t.AccessToken, nil
		}
		return "", ErrSignInNeeded
	}
	nt, err := flows.Refresh(ctx, b.opts.HTTPClient, flows.RefreshRequest{TokenEndpoint: u.TokenEndpoint, Client: u.Client,
		RefreshToken: t.RefreshToken, Resource: u.Resource, Scopes: t.Scopes})
	if err != nil {
		if errors.Is(err, flows.ErrInvalidGrant) {
			b.log.Info("broker: upstream refresh refused; the session must sign in again", "upstream", upstream)
			if err := b.deleteToken(ctx, sid, upstream); err != nil {
				return "", err
			}
			return "", ErrSignInNeeded
		}
		return "", fmt.Errorf("cannot refresh the %s token: %w", u.Label, err)
	}
	if nt.RefreshToken == t.RefreshToken && nt.RefreshExpiry.IsZero() {
		nt.RefreshExpiry = t.RefreshExpiry // the same refresh token, with its known expiry
	}
	if err := b.putToken(ctx, sid, upstream, nt); err != nil {
		return "", err
	}
	b.log.Info("broker: upstream token refreshed", "upstream", upstream)
	return nt.AccessToken, nil
}

// Status says whether the session is signed in to the upstream and when
// its access token expires (zero: unknown or never).
func (b *Broker) Status(ctx context.Context, sid, upstream string) (bool, time.Time, error) {
	t, err := b.getToken(ctx, sid, upstream)
	if err != nil || t == nil {
		return false, time.Time{}, err
	}
	if t.RefreshToken == "" && !t.Expiry.IsZero() && !b.now().Before(t.Expiry) {
		return false, time.Time{}, nil
	}
	return true, t.Expiry, nil
}

// Logout forgets the session's tokens for the upstream, revoking them
// first at its revocation endpoint when it has one (RFC 7009 §2.1: the
// refresh token, which takes its access tokens with it). The tokens are
// forgotten even when the revocation fails; the error says so.
func (b *Broker) Logout(ctx context.Context, sid, upstream string, revoke bool) error {
	u := b.upstreams[upstream]
	if u == nil {
		return fmt.Errorf("%w %q", ErrUnknownUpstream, upstream)
	}
	defer b.lock(sid, upstream)()
	t, err := b.getToken(ctx, sid, upstream)
	if err != nil || t == nil {
		return err
	}
	if err := b.deleteToken(ctx, sid, upstream); err != nil {
		return err
	}
	if !revoke || u.RevocationEndpoint == "" {
		b.log.Info("broker: signed out", "upstream", upstream, "revoked", false)
		b.opts.Telemetry.Audit(ops.EventUpstreamSignOut, "upstream", upstream, "revoked", false)
		return nil
	}
	tok, hint := t.RefreshToken, flows.HintRefreshToken
	if tok == "" {
		tok, hint = t.AccessToken, flows.HintAccessToken
	}
	if err := flows.Revoke(ctx, b.opts.HTTPClient, flows.RevokeRequest{Endpoint: u.RevocationEndpoint, Client: u.Client, Token: tok, TokenTypeHint: hint}); err != nil {
		b.log.Warn("broker: signed out, but the upstream did not revoke the token", "upstream", upstream, "err", err)
		b.opts.Telemetry.Audit(ops.EventUpstreamSignOut, "upstream", upstream, "revoked", false)
		return fmt.Errorf("signed out of %s, but %w", u.Label, err)
	}
	b.log.Info("broker: signed out", "upstream", upstream, "revoked", true)
	b.opts.Telemetry.Audit(ops.EventUpstreamSignOut, "upstream", upstream, "revoked", true)
	return nil
}
