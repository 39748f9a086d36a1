package issuer

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/state"
)

// DefaultKeyRotation is how long one signing key signs before the next
// one takes over.
const DefaultKeyRotation = 30 * 24 * time.Hour

// StateKeySize is the size of Options.StateKey: an AES-256 key.
const StateKeySize = 32

// Signing keys are read from the store again at most every keyReload
// (another replica may have rotated), and on a token naming an unknown kid
// at most every keyReloadUnknown.
const (
	keyReload        = 30 * time.Second
	keyReloadUnknown = time.Second
)

// keyRecord is a stored ES256 signing key: its PKCS #8 form, sealed with
// AES-256-GCM under Options.StateKey (the kid as additional data) when
// one is given, plain otherwise. A key signs from Created until RetireAt;
// its record expires once every token it signed has expired, and the JWKS
// publishes it until then.
type keyRecord struct {
	Created  time.Time `json:"created"`
	RetireAt time.Time `json:"retire_at"`
	PKCS8    []byte    `json:"pkcs8,omitempty"`
	Sealed   []byte    `json:"sealed,omitempty"`
}

// signingKey is a loaded key.
type signingKey struct {
	kid      string
	key      *ecdsa.PrivateKey
	signer   jose.Signer
	retireAt time.Time
}

// keyRing caches the keys of the store.
type keyRing struct {
	mu       sync.Mutex
	current  *signingKey // the newest key not retired
	verify   map[string]*ecdsa.PublicKey
	jwks     jose.JSONWebKeySet
	loaded   time.Time
	reloaded time.Time // last reload for an unknown kid
}

// signer returns the current key, loading the store's keys when the cache
// is old or the key is due to retire, and creating a key when none is
// current.
func (i *Issuer) signer(ctx context.Context, now time.Time) (*signingKey, error) {
	k := &i.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.current != nil && now.Before(k.current.retireAt) && now.Sub(k.loaded) < keyReload {
		return k.current, nil
	}
	if err := i.loadKeysLocked(ctx, now, true); err != nil {
		return nil, err
	}
	return k.current, nil
}

// verifier returns the public key kid names, reloading the store's keys
// for an unknown kid at most every keyReloadUnknown.
func (i *Issuer) verifier(ctx context.Context, kid string) *ecdsa.PublicKey {
	k := &i.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	if pub := k.verify[kid]; pub != nil {
		return pub
	}
	now := i.now()
	if now.Sub(k.reloaded) < keyReloadUnknown {
		return nil
	}
	k.reloaded = now
	if err := i.loadKeysLocked(ctx, now, false); err != nil {
		i.log.Warn("issuer: cannot load signing keys", "err", err)
		return nil
	}
	return k.verify[kid]
}

// publicKeys returns the JWKS: every key whose tokens may still live.
func (i *Issuer) publicKeys(ctx context.Context) (jose.JSONWebKeySet, error) {
	now := i.now()
	k := &i.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.loaded) >= keyReload {
		if err := i.loadKeysLocked(ctx, now, false); err != nil {
			return jose.JSONWebKeySet{}, err
		}
	}
	return jose.JSONWebKeySet{Keys: slices.Clone(k.jwks.Keys)}, nil
}

// loadKeysLocked reads the live keys; with create, it adds a key when none
// may sign now (in the same transaction, so replicas do not both add one).
func (i *Issuer) loadKeysLocked(ctx context.Context, now time.Time, create bool) error {
	var recs []state.Record
	load := func(tx state.Tx) error {
		var err error
		recs, err = tx.List(kindKey)
		if err != nil || !create || slices.ContainsFunc(recs, func(r state.Record) bool { return i.keyCurrent(r, now) }) {
			return err
		}
		r, err := i.newKeyRecord(now)
		if err != nil {
			return err
		}
		recs = append(recs, r)
		return tx.Put(kindKey, r.Key, r.Value, r.Expires)
	}
	var err error
	if create {
		err = i.store.Update(ctx, load)
	} else {
		err = i.store.View(ctx, load)
	}
	if err != nil {
		return fmt.Errorf("cannot load the signing keys: %w", err)
	}
	k := &i.keys
	k.verify = map[string]*ecdsa.PublicKey{}
	k.jwks = jose.JSONWebKeySet{}
	var current *signingKey
	var currentCreated time.Time
	for _, r := range recs {
		if !r.Expires.IsZero() && !r.Expires.After(now) {
			continue
		}
		kr, key, err := i.openKey(r)
		if err != nil {
			return err
		}
		k.verify[r.Key] = &key.PublicKey
		k.jwks.Keys = append(k.jwks.Keys, jose.JSONWebKey{Key: &key.PublicKey, KeyID: r.Key, Algorithm: string(jose.ES256), Use: "sig"})
		if now.Before(kr.RetireAt) && (current == nil || kr.Created.After(currentCreated)) {
			signer, err := newSigner(r.Key, key)
			if err != nil {
				return err
			}
			current, currentCreated = &signingKey{kid: r.Key, key: key, signer: signer, retireAt: kr.RetireAt}, kr.Created
		}
	}
	if current != nil {
		k.current = current
	}
	if k.current == nil && create {
		return errors.New("cannot find a current signing key")
	}
	k.loaded = now
	return nil
}

// retireKeys ends the signing life of every current key now (a rotation
// out of schedule); each stays published until its tokens have expired.
func (i *Issuer) retireKeys(ctx context.Context, now time.Time) error {
	var retired []string
	err := i.store.Update(ctx, func(tx state.Tx) error {
		retired = nil
		recs, err := tx.List(kindKey)
		if err != nil {
			return err
		}
		for _, r := range recs {
			var kr keyRecord
			if err := json.Unmarshal(r.Value, &kr); err != nil || !now.Before(kr.RetireAt) {
				continue
			}
			kr.RetireAt = now
			b, err := json.Marshal(kr)
			if err != nil {
				return err
			}
			if err := tx.Put(kindKey, r.Key, b, now.Add(i.opts.TokenTTL+keyReload)); err != nil {
				return err
			}
			retired = append(retired, r.Key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot retire the signing keys: %w", err)
	}
	for _, kid := range retired {
		i.log.Info("issuer: signing key retired", "kid", kid)
	}
	return nil
}

// keyCurrent reports whether the stored key r may sign now.
func (i *Issuer) keyCurrent(r state.Record, now time.Time) bool {
	var kr keyRecord
	if err := json.Unmarshal(r.Value, &kr); err != nil {
		return false
	}
	return now.Before(kr.RetireAt)
}

// newKeyRecord generates an ES256 key; its kid is the RFC 7638 thumbprint.
// It signs for KeyRotation and is published for TokenTTL more (plus
// keyReload, for a replica that has not yet seen its successor).
func (i *Issuer) newKeyRecord(now time.Time) (state.Record, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return state.Record{}, fmt.Errorf("cannot generate a signing key: %w", err)
	}
	thumb, err := (&jose.JSONWebKey{Key: &key.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		return state.Record{}, fmt.Errorf("cannot compute a key id: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(thumb)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return state.Record{}, fmt.Errorf("cannot encode the signing key: %w", err)
	}
	kr := keyRecord{Created: now, RetireAt: now.Add(i.opts.KeyRotation)}
	if i.opts.StateKey != nil {
		if kr.Sealed, err = seal(i.opts.StateKey, der, kid); err != nil {
			return state.Record{}, err
		}
	} else {
		kr.PKCS8 = der
	}
	b, err := json.Marshal(kr)
	if err != nil {
		return state.Record{}, err
	}
	i.log.Info("issuer: new signing key", "kid", kid, "retire_at", kr.RetireAt.UTC().Format(time.RFC3339))
	return state.Record{Key: kid, Value: b, Expires: kr.RetireAt.Add(i.opts.TokenTTL + keyReload)}, nil
}

// openKey decodes a stored key, unsealing it with Options.StateKey.
func (i *Issuer) openKey(r state.Record) (*keyRecord, *ecdsa.PrivateKey, error) {
	var kr keyRecord
	if err := json.Unmarshal(r.Value, &kr); err != nil {
		return nil, nil, fmt.Errorf("cannot decode signing key %s: %w", r.Key, err)
	}
	der := kr.PKCS8
	if kr.Sealed != nil {
		if i.opts.StateKey == nil {
			return nil, nil, fmt.Errorf("cannot read signing key %s: it is encrypted\nStart serve with the state key that encrypted it (--state-key-file or --state-key-keyring)", r.Key)
		}
		var err error
		if der, err = unseal(i.opts.StateKey, kr.Sealed, r.Key); err != nil {
			return nil, nil, fmt.Errorf("cannot decrypt signing key %s: %w\nStart serve with the state key that encrypted it (--state-key-file or --state-key-keyring)", r.Key, err)
		}
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse signing key %s: %w", r.Key, err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, nil, fmt.Errorf("cannot use signing key %s: not a P-256 key", r.Key)
	}
	return &kr, key, nil
}

// newSigner signs with typ "at+jwt" (RFC 9068 §2.1) and the kid header.
func newSigner(kid string, key *ecdsa.PrivateKey) (jose.Signer, error) {
	jwk := jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return nil, fmt.Errorf("cannot create a signer: %w", err)
	}
	return signer, nil
}

// seal encrypts plain with AES-256-GCM; the nonce leads the result.
func seal(key, plain []byte, aad string) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return aead.Seal(nonce, nonce, plain, []byte(aad)), nil
}

func unseal(key, sealed []byte, aad string) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("the sealed key is truncated")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(aad))
	if err != nil {
		return nil, errors.New("wrong state key, or a damaged record")
	}
	return plain, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != StateKeySize {
		return nil, fmt.Errorf("the state key must be %d bytes", StateKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
