package issuer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// OIDC Core §3.1.3.7: each check of an ID token refuses a token that
// breaks only it.
func TestValidateIDToken(t *testing.T) {
	now := time.Now()
	good, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	keys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: good.Public(), KeyID: "k1", Algorithm: "ES256", Use: "sig"},
		{Key: rsaKey.Public(), KeyID: "k2", Use: "sig"},
	}}
	want := idTokenCheck{Issuer: "https://id.example/", ClientID: "serve", Nonce: "n-0S6", Now: now, Keys: keys}
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://id.example/", "sub": "248289761001", "aud": "serve", "nonce": "n-0S6",
			"exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	sign := func(alg jose.SignatureAlgorithm, key any, kid string, c map[string]any) string {
		opts := (&jose.SignerOptions{}).WithType("JWT")
		if kid != "" {
			opts = opts.WithHeader("kid", kid)
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(c)
		jws, err := s.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := jws.CompactSerialize()
		return out
	}
	es := func(change func(map[string]any)) string { return sign(jose.ES256, good, "k1", claims(change)) }
	b64 := base64.RawURLEncoding.EncodeToString
	payload, _ := json.Marshal(claims(nil))
	for _, tc := range []struct {
		name  string
		token string
		err   string // "" for valid
	}{
		{"valid ES256", es(nil), ""},
		{"valid RS256 by kid", sign(jose.RS256, rsaKey, "k2", claims(nil)), ""},
		{"valid without kid", sign(jose.ES256, good, "", claims(nil)), ""},
		{"several audiences with azp", es(func(c map[string]any) { c["aud"] = []string{"serve", "other"}; c["azp"] = "serve" }), ""},
		{"wrong iss", es(func(c map[string]any) { c["iss"] = "https://evil.example/" }), "iss"},
		{"iss without the trailing slash", es(func(c map[string]any) { c["iss"] = "https://id.example" }), "iss"},
		{"wrong aud", es(func(c map[string]any) { c["aud"] = "someone-else" }), "aud"},
		{"several audiences without azp", es(func(c map[string]any) { c["aud"] = []string{"serve", "other"} }), "azp"},
		{"wrong azp", es(func(c map[string]any) { c["azp"] = "other" }), "azp"},
		{"expired", es(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() }), "expired"},
		{"no exp", es(func(c map[string]any) { delete(c, "exp") }), "exp"},
		{"iat far in the future", es(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() }), "iat"},
		{"iat far in the past", es(func(c map[string]any) { c["iat"] = now.Add(-time.Hour).Unix() }), "iat"},
		{"bad nonce", es(func(c map[string]any) { c["nonce"] = "replayed" }), "nonce"},
		{"no nonce", es(func(c map[string]any) { delete(c, "nonce") }), "nonce"},
		{"no sub", es(func(c map[string]any) { delete(c, "sub") }), "sub"},
		{"bad signature", sign(jose.ES256, other, "k1", claims(nil)), "signature"},
		{"unknown kid", sign(jose.ES256, good, "k9", claims(nil)), "signature"},
		{"tampered payload", func() string {
			p := strings.Split(es(nil), ".")
			forged, _ := json.Marshal(claims(func(c map[string]any) { c["sub"] = "admin" }))
			return p[0] + "." + b64(forged) + "." + p[2]
		}(), "signature"},
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(payload) + ".", "parse"},
		{"alg HS256 not allowed", sign(jose.HS256, []byte("the-client-secret-the-client-secret"), "", claims(nil)), "parse"},
		{"alg ES256 with an RS256 key's kid", sign(jose.ES256, good, "k2", claims(nil)), "signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := validateIDToken(tc.token, want)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err == "" && c.Subject != "248289761001":
				t.Fatalf("sub %q", c.Subject)
			case tc.err != "" && err == nil:
				t.Fatal("accepted")
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Fatalf("error %q does not mention %q", err, tc.err)
			}
		})
	}
}

// OIDC Discovery §4.3 with RFC 3986 normalisation: a trailing slash, the
// case of scheme and host, and the default port do not matter; anything
// else does.
func TestSameIssuer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://id.example", "https://id.example/", true},
		{"https://id.example/", "https://id.example/", true},
		{"HTTPS://ID.example:443", "https://id.example/", true},
		{"http://127.0.0.1:4000/", "http://127.0.0.1:4000", true},
		{"https://id.example/tenant", "https://id.example/tenant/", false},
		{"https://id.example", "https://id.example.evil", false},
		{"https://id.example", "http://id.example", false},
		{"", "https://id.example", false},
	} {
		if got := sameIssuer(tc.a, tc.b); got != tc.same {
			t.Errorf("sameIssuer(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
