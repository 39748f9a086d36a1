package resource

import (
	"context"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
)

const testResource = "http://127.0.0.1:7777/mcp"

func newTestJWTValidator(ti *tokenfake.Issuer, clock *tokenfake.Clock, algs ...string) *jwtValidator {
	s := Scheme{ID: "dev", AuthorizationServers: []string{ti.URL}, Validation: Validation{Type: ValidationJWT, Algorithms: algs}}
	return newJWTValidator(s, testResource, ti.Client(), clock.Now)
}

// b64 encodes a JWS segment.
func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestJWTValidation(t *testing.T) {
	ti := tokenfake.NewIssuer(t)
	clock := tokenfake.NewClock()
	now := clock.Now()
	es := tokenfake.NewKey(t, "es", jose.ES256)
	rs := tokenfake.NewKey(t, "rs", jose.RS256)
	ed := tokenfake.NewKey(t, "ed", jose.EdDSA)
	ti.Publish(es, rs, ed)
	stranger := tokenfake.NewKey(t, "es", jose.ES256) // same kid, unpublished key

	with := func(changes map[string]any) map[string]any {
		c := tokenfake.Claims(ti.URL, testResource, now)
		for k, v := range changes {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	// alg "none": a header and payload with an empty signature.
	none := b64(map[string]string{"alg": "none", "typ": "at+jwt", "kid": "es"}) + "." + b64(with(nil)) + "."
	// HS256 keyed with the RSA public key: the classic key-confusion attack.
	pubDER, _ := x509.MarshalPKIXPublicKey(rs.Signer.Public().(*rsa.PublicKey))
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hsInput := b64(map[string]string{"alg": "HS256", "typ": "at+jwt", "kid": "rs"}) + "." + b64(with(nil))
	mac := hmac.New(sha256.New, pubPEM)
	mac.Write([]byte(hsInput))
	hs256 := hsInput + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	tests := []struct {
		name  string
		token string
		kind  TokenErrorKind
		want  string // description substring; "" means the token is accepted
	}{
		{"ES256", es.Sign(t, with(nil), "at+jwt"), 0, ""},
		{"RS256", rs.Sign(t, with(nil), "at+jwt"), 0, ""},
		{"EdDSA", ed.Sign(t, with(nil), "at+jwt"), 0, ""},
		{"typ application/at+jwt", es.Sign(t, with(nil), "application/at+jwt"), 0, ""},
		{"typ in upper case", es.Sign(t, with(nil), "AT+JWT"), 0, ""},
		{"typ JWT: an ID token", es.Sign(t, with(nil), "JWT"), TokenInvalid, `not an access token (typ "JWT", want at+jwt per RFC 9068 section 4): ID tokens are not accepted`},
		{"no typ", es.Sign(t, with(nil), ""), TokenInvalid, `not an access token (no typ, want at+jwt`},
		{"padded segment", pad(es.Sign(t, with(nil), "at+jwt")), TokenInvalid, "not canonical base64url"},
		{"non-zero trailing bits", trailingBits(t, es.Sign(t, with(nil), "at+jwt")), TokenInvalid, "not canonical base64url"},
		{"line break in a segment", strings.Replace(es.Sign(t, with(nil), "at+jwt"), ".", "\n.", 1), TokenInvalid, "not canonical base64url"},
		{"audience array", es.Sign(t, with(map[string]any{"aud": []string{"https://other.example", testResource}}), "at+jwt"), 0, ""},
		{"nbf within leeway", es.Sign(t, with(map[string]any{"nbf": now.Add(10 * time.Second).Unix()}), "at+jwt"), 0, ""},
		{"expired", es.Sign(t, with(map[string]any{"exp": now.Add(-time.Second).Unix()}), "at+jwt"), TokenExpired, "The access token expired"},
		{"expires now", es.Sign(t, with(map[string]any{"exp": now.Unix()}), "at+jwt"), TokenExpired, "expired"},
		{"wrong aud", es.Sign(t, with(map[string]any{"aud": "http://127.0.0.1:7777/other"}), "at+jwt"), TokenInvalid, "audience does not include " + testResource},
		{"no aud", es.Sign(t, with(map[string]any{"aud": nil}), "at+jwt"), TokenInvalid, "audience"},
		{"wrong iss", es.Sign(t, with(map[string]any{"iss": "https://evil.example"}), "at+jwt"), TokenInvalid, `issuer "https://evil.example" is not trusted`},
		{"alg none", none, TokenInvalid, `algorithm "none" is not allowed`},
		{"HS256 with the public key as secret", hs256, TokenInvalid, `algorithm "HS256" is not allowed`},
		{"signed by another key with a known kid", stranger.Sign(t, with(nil), "at+jwt"), TokenInvalid, "signature is invalid"},
		{"not yet valid", es.Sign(t, with(map[string]any{"nbf": now.Add(time.Hour).Unix()}), "at+jwt"), TokenInvalid, "not valid yet"},
		{"issued in the future", es.Sign(t, with(map[string]any{"iat": now.Add(time.Hour).Unix()}), "at+jwt"), TokenInvalid, "issued in the future"},
		{"no exp", es.Sign(t, with(map[string]any{"exp": nil}), "at+jwt"), TokenInvalid, "no expiry"},
		{"wrong typ", es.Sign(t, with(nil), "dpop+jwt"), TokenInvalid, `not an access token (typ "dpop+jwt"`},
		{"not a JWT", "opaque-token", TokenInvalid, "not a signed JWT"},
		{"garbage header", "e30x.e30.sig", TokenInvalid, "malformed header"},
	}
	v := newTestJWTValidator(ti, clock)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := v.Validate(context.Background(), tt.token)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("rejected a good token: %v", err)
				}
				if g.Subject != "alice" || g.ClientID != "cli-1" || g.JTI != "jti-1" || g.Issuer != ti.URL ||
					!cmp.Equal(g.Scopes, []string{"agent:use", "agent:admin"}) || g.Expiry.Unix() != now.Add(time.Hour).Unix() {
					t.Errorf("grant = %+v", g)
				}
				return
			}
			var te *TokenError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want a *TokenError", err)
			}
			if te.Kind != tt.kind || !strings.Contains(te.Description, tt.want) {
				t.Errorf("got kind %d %q, want kind %d containing %q", te.Kind, te.Description, tt.kind, tt.want)
			}
			if strings.Contains(err.Error(), tt.token) {
				t.Errorf("the error contains the token: %v", err)
			}
		})
	}
}

// pad spells the ES256 signature segment (64 bytes) with the "=="
// padding of standard base64url.
func pad(tok string) string { return tok + "==" }

// trailingBits respells the signature segment with non-zero unused
// trailing bits: the same bytes, another string.
func trailingBits(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	sig := parts[2]
	if len(sig)%4 == 0 {
		t.Fatal("the signature has no unused bits")
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	parts[2] = sig[:len(sig)-1] + string(alphabet[last|1])
	return strings.Join(parts, ".")
}

func TestJWTAlgorithmsConfigured(t *testing.T) {
	ti := tokenfake.NewIssuer(t)
	clock := tokenfake.NewClock()
	rs := tokenfake.NewKey(t, "rs", jose.RS256)
	ti.Publish(rs)
	v := newTestJWTValidator(ti, clock, "ES256")
	_, err := v.Validate(context.Background(), rs.Sign(t, tokenfake.Claims(ti.URL, testResource, clock.Now()), "at+jwt"))
	var te *TokenError
	if !errors.As(err, &te) || !strings.Contains(te.Description, `"RS256" is not allowed`) {
		t.Errorf("err = %v, want RS256 refused", err)
	}
}

func TestJWTUnknownKidRefetchesWithARateBound(t *testing.T) {
	ti := tokenfake.NewIssuer(t)
	clock := tokenfake.NewClock()
	k1 := tokenfake.NewKey(t, "k1", jose.ES256)
	k2 := tokenfake.NewKey(t, "k2", jose.ES256)
	ti.Publish(k1)
	v := newTestJWTValidator(ti, clock)
	ctx := context.Background()
	tok1 := k1.Sign(t, tokenfake.Claims(ti.URL, testResource, clock.Now()), "at+jwt")
	validate := func(tok string) error {
		_, err := v.Validate(ctx, tok)
		return err
	}
	if err := validate(tok1); err != nil {
		t.Fatal(err)
	}
	if n := ti.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times on first use, want 1", n)
	}
	if err := validate(tok1); err != nil || ti.JWKSFetches.Load() != 1 {
		t.Fatalf("known kid: err %v, fetches %d; want cached keys", err, ti.JWKSFetches.Load())
	}

	unknown := k2.Sign(t, tokenfake.Claims(ti.URL, testResource, clock.Now()), "at+jwt")
	wantUnknown := func(step string, fetches int32) {
		t.Helper()
		err := validate(unknown)
		var te *TokenError
		if !errors.As(err, &te) || te.Kind != TokenInvalid || !strings.Contains(te.Description, "unknown key") {
			t.Errorf("%s: err = %v, want an unknown key", step, err)
		}
		if n := ti.JWKSFetches.Load(); n != fetches {
			t.Errorf("%s: JWKS fetched %d times, want %d", step, n, fetches)
		}
	}
	// Just fetched: the rate bound holds the refetch back.
	wantUnknown("within the rate bound", 1)
	// Later: one refetch, the kid is still unknown.
	clock.Advance(minKeyRefetch)
	wantUnknown("after the bound", 2)
	wantUnknown("again at once", 2)

	// The issuer rotates k2 in: found at the next allowed refetch.
	ti.Publish(k2)
	clock.Advance(minKeyRefetch)
	if err := validate(unknown); err != nil {
		t.Errorf("rotated key: %v", err)
	}
	if n := ti.JWKSFetches.Load(); n != 3 {
		t.Errorf("JWKS fetched %d times, want 3", n)
	}
}

func TestJWTKeyDiscovery(t *testing.T) {
	clock := tokenfake.NewClock()
	ctx := context.Background()

	t.Run("OpenID configuration fallback", func(t *testing.T) {
		ti := tokenfake.NewIssuer(t)
		ti.MetadataPath = "/.well-known/openid-configuration"
		k := tokenfake.NewKey(t, "k", jose.ES256)
		ti.Publish(k)
		if _, err := newTestJWTValidator(ti, clock).Validate(ctx, k.Sign(t, tokenfake.Claims(ti.URL, testResource, clock.Now()), "at+jwt")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("metadata names another issuer", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]string{"issuer": "https://evil.example", "jwks_uri": "http://127.0.0.1:1/jwks"})
		}))
		defer srv.Close()
		k := tokenfake.NewKey(t, "k", jose.ES256)
		v := newJWTValidator(Scheme{AuthorizationServers: []string{srv.URL}}, testResource, srv.Client(), clock.Now)
		_, err := v.Validate(ctx, k.Sign(t, tokenfake.Claims(srv.URL, testResource, clock.Now()), "at+jwt"))
		var te *TokenError
		if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "RFC 8414 §3.3") {
			t.Errorf("err = %v, want a discovery failure (not a token rejection)", err)
		}
	})

	t.Run("oversized JWKS", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"keys": ["` + strings.Repeat("x", maxDocumentSize) + `"]}`))
		}))
		defer srv.Close()
		k := tokenfake.NewKey(t, "k", jose.ES256)
		s := Scheme{AuthorizationServers: []string{"https://as.example"}, Validation: Validation{JWKSURI: srv.URL}}
		v := newJWTValidator(s, testResource, srv.Client(), clock.Now)
		_, err := v.Validate(ctx, k.Sign(t, tokenfake.Claims("https://as.example", testResource, clock.Now()), "at+jwt"))
		if err == nil || !strings.Contains(err.Error(), "exceeds") {
			t.Errorf("err = %v, want the size limit", err)
		}
	})

	t.Run("JWKS key count is bounded", func(t *testing.T) {
		ti := tokenfake.NewIssuer(t)
		var last *tokenfake.Key
		for i := range maxKeys + 1 {
			last = tokenfake.NewKey(t, "k"+string(rune('A'+i%26))+string(rune('a'+i/26)), jose.EdDSA)
			ti.Publish(last)
		}
		_, err := newTestJWTValidator(ti, clock).Validate(ctx, last.Sign(t, tokenfake.Claims(ti.URL, testResource, clock.Now()), "at+jwt"))
		if err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("err = %v, want the key past the bound to be ignored", err)
		}
	})
}
