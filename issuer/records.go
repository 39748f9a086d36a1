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

// The kinds of record the issuer keeps in its state.Store. Codes, device
// codes and page nonces are keyed by their SHA-256 (hash), refresh tokens
// by their issue time and SHA-256 (refreshKey): none is stored in the
// clear; client secrets are kept as their SHA-256.
const (
	kindClient   state.Kind = "client"    // registered clients, by client_id
	kindCode     state.Kind = "code"      // unredeemed authorization codes, per client (bounded.Kind)
	kindGrant    state.Kind = "grant"     // token families: by the code's hash, or random
	kindRefresh  state.Kind = "refresh"   // refresh tokens, used ones included
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
	// Family names the family in its access tokens (their sid claim):
	// revoking the family puts this one id in the revocation log, however
	// many access tokens it issued.
	Family string `json:"family,omitempty"`
	// Access lists access tokens issued without a sid claim (by an
	// earlier agentauth) that may still live; none are added.
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
	return decodeRecord[T](kind, b, err)
}

// peekRecord is getRecord for a record written once and never changed
// (a refresh token's): read without a lock (state.Tx.Peek), which on
// PostgreSQL would write to the row's page, one among all the refresh
// tokens' pages that the next checkpoint then writes again.
func peekRecord[T any](tx state.Tx, kind state.Kind, key string) (*T, error) {
	b, err := tx.Peek(kind, key)
	return decodeRecord[T](kind, b, err)
}

// decodeRecord decodes a read of kind into a new T, or returns nil when
// there is no record.
func decodeRecord[T any](kind state.Kind, b []byte, err error) (*T, error) {
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
// ids it put in the revocation log: the family's, which its access tokens
// carry as their sid, and the jtis of access tokens issued without one.
func (i *Issuer) revokeGrantTx(tx state.Tx, now time.Time, id string, g *grantRecord) ([]string, error) {
	g.Revoked = true
	var ids []string
	if g.Family != "" {
		// Every access token of the family expires within one TokenTTL.
		revoked, err := i.revokeAccessTx(tx, g.Family, now.Add(i.opts.TokenTTL))
		if err != nil {
			return nil, err
		}
		if revoked {
			ids = append(ids, g.Family)
		}
	}
	for _, a := range g.Access {
		if !a.Expires.After(now) {
			continue
		}
		revoked, err := i.revokeAccessTx(tx, a.JTI, a.Expires)
		if err != nil {
			return nil, err
		}
		if revoked {
			ids = append(ids, a.JTI)
		}
	}
	g.Access = nil
	return ids, putRecord(tx, kindGrant, id, g, i.grantExpiry(now))
}

// revokeAccessTx puts id (an access token's jti, or a family's id), whose
// tokens expire at expires, in the revocation log, and reports whether it
// was not there yet and its tokens may still live. An access token is not
// stored: the issuer's signature vouches for it, and the revocation log
// lists the revoked ones until they expire.
func (i *Issuer) revokeAccessTx(tx state.Tx, id string, expires time.Time) (bool, error) {
	now := i.now()
	if !expires.After(now) {
		return false, nil
	}
	revoked, err := tx.Revoked(id, now)
	if revoked || err != nil {
		return false, err
	}
	return true, tx.Revoke(id, expires)
}

// grantExpiry is how long a family issued or rotated now is kept: until
// its last refresh or access token expires, rounded up to the next
// grantExpiryStep, so that the many rotations of one family within a step
// rewrite its record without moving its expiry: PostgreSQL then updates
// the row in place (a HOT update, no new index entries), where a new
// expiry on every refresh grew the indexes with dead entries and slowed
// every later refresh.
func (i *Issuer) grantExpiry(now time.Time) time.Time {
	exp := now.Add(max(i.opts.TokenTTL, i.opts.RefreshTTL))
	if r := exp.Truncate(grantExpiryStep); !r.Equal(exp) {
		exp = r.Add(grantExpiryStep)
	}
	return exp
}

// grantExpiryStep is the granularity of a family's record expiry.
const grantExpiryStep = time.Minute

// Revoked returns the revocation log's entries that have not expired (a
// revoked access token's jti, or a revoked family's id, which its access
// tokens carry as their sid), with their expiry: what an agent host must
// keep refusing after a restart.
func (i *Issuer) Revoked(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	now := i.now()
	for seq := int64(0); ; {
		revs, err := i.store.RevokedSince(ctx, seq, 1000)
		if err != nil {
			return nil, fmt.Errorf("cannot read the revoked tokens: %w", err)
		}
		for _, r := range revs {
			if r.Expires.After(now) {
				out[r.ID] = r.Expires
			}
			seq = r.Seq
		}
		if len(revs) < 1000 {
			return out, nil
		}
	}
}
