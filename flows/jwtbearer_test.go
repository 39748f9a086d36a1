package flows

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestJWTBearer: the grant sends the assertion with grant_type jwt-bearer
// (RFC 7523 §2.1) and the public client's id; a refusal is returned as the
// grant's error after one request, never retried.
func TestJWTBearer(t *testing.T) {
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") != GrantJWTBearer || r.PostForm.Get("client_id") != "workload" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"unsupported_grant_type"}`))
			return
		}
		if r.PostForm.Get("assertion") != "good.jwt.here" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		w.Write([]byte(`{"access_token":"at","token_type":"Bearer","expires_in":60}`))
	}))
	defer srv.Close()
	c := Client{ID: "workload"}
	tok, err := JWTBearer(context.Background(), srv.Client(), JWTBearerRequest{TokenEndpoint: srv.URL, Client: c, Assertion: "good.jwt.here"})
	if err != nil || tok.AccessToken != "at" {
		t.Fatalf("JWTBearer = %v, %v; want the token", tok, err)
	}
	requests = 0
	_, err = JWTBearer(context.Background(), srv.Client(), JWTBearerRequest{TokenEndpoint: srv.URL, Client: c, Assertion: "bad"})
	if !errors.Is(err, ErrInvalidGrant) || requests != 1 {
		t.Errorf("refused assertion: err %v after %d requests; want invalid_grant after 1", err, requests)
	}
}

// TestClientAssertion: a private_key_jwt assertion (RFC 7523 §3) is signed
// with the key, iss and sub the client id, aud the issuer, short-lived.
func TestClientAssertion(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	c := Client{ID: "machine", AuthMethod: AuthMethodPrivateKeyJWT, PrivateKey: pemKey, Audience: "https://as.example"}
	req, err := c.newRequest("https://as.example/token", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = req.ParseForm()
	if req.PostForm.Get("client_assertion_type") != ClientAssertionType {
		t.Fatalf("client_assertion_type = %q", req.PostForm.Get("client_assertion_type"))
	}
	tok, err := jwt.ParseSigned(req.PostForm.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.Claims
	if err := tok.Claims(&key.PublicKey, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Issuer != "machine" || claims.Subject != "machine" || !claims.Audience.Contains("https://as.example") || claims.ID == "" ||
		claims.Expiry.Time().Sub(claims.IssuedAt.Time()) != ClientAssertionLifetime {
		t.Errorf("claims %+v", claims)
	}
	if _, _, err := ParsePrivateKey([]byte("not a key")); err == nil {
		t.Error("ParsePrivateKey accepted garbage")
	}
}
