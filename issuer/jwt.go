package issuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// accessClaims are the claims of an RFC 9068 §2.2 access token.
type accessClaims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
	ID       string `json:"jti"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope,omitempty"`
}

// initKey generates the ES256 signing key; its kid is the RFC 7638
// thumbprint. Tokens carry typ "at+jwt" (RFC 9068 §2.1).
func (i *Issuer) initKey() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("cannot generate signing key: %w", err)
	}
	jwk := jose.JSONWebKey{Key: key, Algorithm: string(jose.ES256), Use: "sig"}
	thumb, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return fmt.Errorf("cannot compute key id: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return fmt.Errorf("cannot create signer: %w", err)
	}
	i.key = key
	i.signer = signer
	i.jwks = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}}
	return nil
}

func (i *Issuer) sign(c accessClaims) (string, error) {
	return jwt.Signed(i.signer).Claims(c).Serialize()
}

// parseAccessToken returns the claims of an access token this issuer
// signed, whether or not it expired or was revoked, or nil.
func (i *Issuer) parseAccessToken(s string) *accessClaims {
	t, err := jwt.ParseSigned(s, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil
	}
	var c accessClaims
	if err := t.Claims(&i.key.PublicKey, &c); err != nil || c.Issuer != i.opts.Issuer || c.ID == "" {
		return nil
	}
	return &c
}
