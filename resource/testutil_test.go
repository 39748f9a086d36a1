package resource

import (
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

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testIssuer is an authorization server publishing RFC 8414 metadata and a
// JWKS, counting JWKS fetches.
type testIssuer struct {
	srv         *httptest.Server
	mu          sync.Mutex
	published   []jose.JSONWebKey
	jwksFetches atomic.Int32
	// metadataPath is where the metadata is served.
	metadataPath string
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	ti := &testIssuer{metadataPath: "/.well-known/oauth-authorization-server"}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ti.metadataPath {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksFetches.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: ti.published})
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

// signingKey signs test tokens.
type signingKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func newSigningKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) *signingKey {
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
	}
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{kid: kid, alg: alg, key: k}
}

func (k *signingKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// publish adds keys to the issuer's JWKS.
func (ti *testIssuer) publish(keys ...*signingKey) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	for _, k := range keys {
		ti.published = append(ti.published, k.jwk())
	}
}

// sign makes a JWT with the given claims and typ.
func (k *signingKey) sign(t testing.TB, claims map[string]any, typ string) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.key, KeyID: k.kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// claims returns valid access-token claims for issuer and audience.
func claims(iss, aud string, now time.Time) map[string]any {
	return map[string]any{
		"iss": iss, "aud": aud, "sub": "alice", "client_id": "cli-1", "scope": "agent:use agent:admin",
		"jti": "jti-1", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}
