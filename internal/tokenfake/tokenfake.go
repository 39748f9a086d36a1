// Package tokenfake holds the fakes that tests of access-token checks share:
// a settable clock, signing keys that mint JWTs, an authorization server
// publishing RFC 8414 metadata and a JWKS, an RFC 7662 introspection
// endpoint, and a validator that counts its calls. The host and resource
// tests use them.
//
// It is a normal package so that the tests of several packages can import
// it, but only _test.go files do: nothing the agentauth binary runs depends
// on it (check with `go list -deps .`). It imports no agentauth package, so
// that a package's own (internal) tests can import it without a cycle.
//
// The fakes are written from the RFCs; they back up, and never replace, the
// tests against a real OpenID Provider.
package tokenfake

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Clock is a settable clock; its Now method is what the code under test is
// given as its clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock set to the current time.
func NewClock() *Clock { return &Clock{t: time.Now()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Issuer is an authorization server publishing RFC 8414 metadata (at
// MetadataPath) and a JWKS at /jwks, counting JWKS fetches. Its URL is the
// issuer; it stops when the test ends.
type Issuer struct {
	*httptest.Server
	// JWKSFetches counts requests for the JWKS.
	JWKSFetches atomic.Int32
	// MetadataPath is where the metadata is served; set it before the code
	// under test fetches it.
	MetadataPath string

	mu        sync.Mutex
	published []jose.JSONWebKey
}

// NewIssuer starts an Issuer with an empty JWKS and its metadata at
// /.well-known/oauth-authorization-server.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	ti := &Issuer{MetadataPath: "/.well-known/oauth-authorization-server"}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ti.MetadataPath {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": ti.URL, "jwks_uri": ti.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.JWKSFetches.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: ti.published})
	})
	ti.Server = httptest.NewServer(mux)
	t.Cleanup(ti.Close)
	return ti
}

// Publish adds the keys' public halves to the issuer's JWKS.
func (ti *Issuer) Publish(keys ...*Key) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	for _, k := range keys {
		ti.published = append(ti.published, k.JWK())
	}
}

// Key signs test tokens.
type Key struct {
	KID    string
	Alg    jose.SignatureAlgorithm
	Signer crypto.Signer
}

// NewKey generates a key for alg (ES256, RS256 or EdDSA) with key id kid.
func NewKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) *Key {
	t.Helper()
	var k crypto.Signer
	var err error
	switch alg {
	case jose.ES256:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("tokenfake: no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &Key{KID: kid, Alg: alg, Signer: k}
}

// JWK is the key's public half as a JWKS entry (RFC 7517 §4).
func (k *Key) JWK() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.Signer.Public(), KeyID: k.KID, Algorithm: string(k.Alg), Use: "sig"}
}

// Sign makes a JWT with the given claims and, unless it is empty, the typ
// header (RFC 9068 §2.1: "at+jwt").
func (k *Key) Sign(t testing.TB, claims map[string]any, typ string) string {
	t.Helper()
	return SignWith(t, k.Alg, k.Signer, k.KID, claims, typ)
}

// SignWith is Key.Sign with any key go-jose signs with for alg (a
// symmetric key too), and kid in the header unless it is empty.
func SignWith(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any, typ string) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Claims returns valid RFC 9068 access-token claims for issuer and audience,
// issued at now for an hour: sub alice, client_id cli-1, scope
// "agent:use agent:admin", jti jti-1.
func Claims(iss, aud string, now time.Time) map[string]any {
	return map[string]any{
		"iss": iss, "aud": aud, "sub": "alice", "client_id": "cli-1", "scope": "agent:use agent:admin",
		"jti": "jti-1", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// Introspector is an RFC 7662 introspection endpoint (POST /introspect) with
// per-token answers, and RFC 8414 metadata naming it. It accepts only the
// client rs:1 with secret "s cret", sent form-encoded in HTTP Basic
// authentication (RFC 6749 §2.3.1), and the hint access_token. An unknown
// token is inactive. It stops when the test ends.
type Introspector struct {
	*httptest.Server
	// Calls counts introspection requests.
	Calls atomic.Int32

	mu   sync.Mutex
	resp map[string]map[string]any
}

// NewIntrospector starts an Introspector that knows no token.
func NewIntrospector(t testing.TB) *Introspector {
	t.Helper()
	ti := &Introspector{resp: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		ti.Calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != "rs%3A1" || secret != "s+cret" { // form-encoded (RFC 6749 §2.3.1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.FormValue("token_type_hint") != "access_token" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ti.mu.Lock()
		ans, ok := ti.resp[r.FormValue("token")]
		ti.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		json.NewEncoder(w).Encode(ans)
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": ti.URL, "introspection_endpoint": ti.URL + "/introspect"})
	})
	ti.Server = httptest.NewServer(mux)
	t.Cleanup(ti.Close)
	return ti
}

// Set makes the endpoint answer ans for token.
func (ti *Introspector) Set(token string, ans map[string]any) {
	ti.mu.Lock()
	ti.resp[token] = ans
	ti.mu.Unlock()
}

// CountingValidator counts validations and returns a fixed answer. G is the
// grant type of the validator interface it stands in for (resource.Grant);
// a type parameter because this package imports no agentauth package.
type CountingValidator[G any] struct {
	Calls atomic.Int32
	Grant *G
	Err   error
}

// Validate counts the call and returns Grant and Err.
func (c *CountingValidator[G]) Validate(context.Context, string) (*G, error) {
	c.Calls.Add(1)
	return c.Grant, c.Err
}
