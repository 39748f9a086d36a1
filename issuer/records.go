package issuer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// The kinds of record the issuer keeps in its state.Store. Codes, refresh
// tokens, device codes and page nonces are keyed by their SHA-256 (hash)
// and never stored in the clear; client secrets are kept as their SHA-256.
const (
	kindClient   state.Kind = "client"    // registered clients, by client_id
	kindCode     state.Kind = "code"      // unredeemed authorization codes, per client (bounded.Kind)
	kindGrant    state.Kind = "grant"     // token families: by the code's hash, or random
	kindRefresh  state.Kind = "refresh"   // refresh tokens, used ones included
	kindRevoked  state.Kind = "revoked"   // revoked access tokens, by jti, until they expire
	kindDevice   state.Kind = "device"    // device authorizations
	kindUserCode state.Kind = "user_code" // normalised user code → device key
	kindConsent  state.Kind = "consent"   // pending consent and device pages
	kindKey      state.Kind = "key"       // signing keys, by kid
)

// maxSweep bounds the expired records one sweep deletes; a sweep runs at
// most every sweepEvery.
const maxSweep = 1000

// codeRecord is an issued authorization code.
type codeRecord struct {
	ClientID      string    `json:"client_id"`
	RedirectURI   string    `json:"redirect_uri"`   // effective redirect URI
	RedirectGiven bool      `json:"redirect_given"` // redirect_uri was sent (RFC 6749 §4.1.3)
	Challenge     string    `json:"challenge"`
	Subject       string    `json:"sub"`
	Scope         string    `json:"scope"`
	Resource      string    `json:"resource"`
	Expires       time.Time `json:"expires"`
}

// grantRecord is one authorization: the family of every token issued from
// one code or device approval, through all refresh rotations. A family
// from a code is keyed by the code's hash, so that a replayed code finds
// it (RFC 6749 §4.1.2) for as long as its tokens may live.
type grantRecord struct {
	ClientID string `json:"client_id"`
	Subject  string `json:"sub"`
	Scope    string `json:"scope"`
	Resource string `json:"resource"`
	// Access lists the access tokens of the family that may still live.
	Access []issuedAccess `json:"access,omitempty"`
	// Refresh is the hash of the family's current refresh token: any
	// other of its refresh tokens was rotated, and presenting it is reuse.
	Refresh string `json:"refresh,omitempty"`
	Revoked bool   `json:"revoked,omitempty"`
	// JKT binds the family's tokens to a DPoP key (RFC 9449 §5): its
	// refreshes need a proof with that key.
	JKT string `json:"jkt,omitempty"`
}

type issuedAccess struct {
	JTI     string    `json:"jti"`
	Expires time.Time `json:"exp"`
}

// refreshRecord is a refresh token, current or rotated (see
// grantRecord.Refresh); it is written once.
type refreshRecord struct {
	GrantID string    `json:"grant_id"`
	Expires time.Time `json:"expires"`
}

// clientRecord is a client registered at the registration endpoint.
type clientRecord struct {
	ID           string   `json:"client_id"`
	Name         string   `json:"client_name,omitempty"`
	AuthMethod   string   `json:"auth_method"`
	SecretHash   []byte   `json:"secret_sha256,omitempty"`
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	GrantTypes   []string `json:"grant_types"`
	// JWKS are the public keys of a private_key_jwt client.
	JWKS json.RawMessage `json:"jwks,omitempty"`
	// Issued is set once the client was issued a token; until then the
	// record expires unusedClientTTL after LastActive.
	Issued     bool      `json:"issued,omitempty"`
	LastActive time.Time `json:"last_active"`
}

// getRecord decodes the record kind/key into a new T, or returns nil.
func getRecord[T any](tx state.Tx, kind state.Kind, key string) (*T, error) {
	b, err := tx.Get(kind, key)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("cannot decode %s record: %w", kind, err)
	}
	return v, nil
}

func putRecord(tx state.Tx, kind state.Kind, key string, v any, expires time.Time) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode %s record: %w", kind, err)
	}
	return tx.Put(kind, key, b, expires)
}

// storeFailed logs a state store failure and returns the error a client
// sees: server_error, with nothing of the cause.
func (i *Issuer) storeFailed(err error) *oauthError {
	i.log.Error("issuer: state store failed", "err", err)
	return &oauthError{status: http.StatusInternalServerError, body: wire.OAuthError{Code: "server_error", Description: "the issuer cannot reach its state store; try again, and see serve's log"}}
}

// storePage is storeFailed for the HTML pages.
func (i *Issuer) storePage(w http.ResponseWriter, err error) {
	i.log.Error("issuer: state store failed", "err", err)
	i.errorPage(w, http.StatusInternalServerError, "The issuer cannot reach its state store. Try again, and see serve's log.")
}

// clock returns the time and, at most every sweepEvery, first deletes up
// to maxSweep expired records (outside any transaction).
func (i *Issuer) clock(ctx context.Context) time.Time {
	now := i.now()
	i.mu.Lock()
	due := !now.Before(i.nextSweep)
	if due {
		i.nextSweep = now.Add(sweepEvery)
	}
	i.mu.Unlock()
	if due {
		if n, err := i.store.Sweep(ctx, now, maxSweep); err != nil {
			i.log.Warn("issuer: cannot sweep expired state", "err", err)
		} else if n > 0 {
			i.log.Debug("issuer: expired state swept", "records", n)
		}
	}
	return now
}

// revokeGrantTx revokes every token of the family g (id) and returns the
// jtis of the access tokens that were still live.
func (i *Issuer) revokeGrantTx(tx state.Tx, now time.Time, id string, g *grantRecord) ([]string, error) {
	g.Revoked = true
	var jtis []string
	for _, a := range g.Access {
		if !a.Expires.After(now) {
			continue
		}
		revoked, err := i.revokeAccessTx(tx, a.JTI, a.Expires)
		if err != nil {
			return nil, err
		}
		if revoked {
			jtis = append(jtis, a.JTI)
		}
	}
	return jtis, putRecord(tx, kindGrant, id, g, i.grantExpiry(now))
}

// revokeAccessTx records that the access token jti, which expires at
// expires, is revoked, and reports whether it was live. An access token is
// not stored: the issuer's signature vouches for it, and the revoked ones
// are listed until they expire.
func (i *Issuer) revokeAccessTx(tx state.Tx, jti string, expires time.Time) (bool, error) {
	if !expires.After(i.now()) {
		return false, nil
	}
	_, err := tx.Get(kindRevoked, jti)
	if err == nil || !errors.Is(err, state.ErrNotFound) {
		return false, err
	}
	return true, tx.Put(kindRevoked, jti, []byte("{}"), expires)
}

// grantExpiry is how long a family issued or rotated now is kept: until
// its last refresh or access token expires.
func (i *Issuer) grantExpiry(now time.Time) time.Time {
	return now.Add(max(i.opts.TokenTTL, i.opts.RefreshTTL))
}

// Revoked returns the revoked access tokens that have not expired, by
// jti, with their expiry: what an agent host must keep refusing after a
// restart.
func (i *Issuer) Revoked(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	now := i.now()
	err := i.store.View(ctx, func(tx state.Tx) error {
		recs, err := tx.List(kindRevoked)
		for _, r := range recs {
			if r.Expires.After(now) {
				out[r.Key] = r.Expires
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read the revoked tokens: %w", err)
	}
	return out, nil
}
