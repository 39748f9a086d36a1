package issuer

import (
	"context"

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
	// Family names the token's family (grantRecord.Family), revoked as
	// one; sid as in OpenID Connect (a session of the client, one login).
	Family string `json:"sid,omitempty"`
	// Cnf binds the token to a DPoP key (RFC 9449 §6.1).
	Cnf *confirmation `json:"cnf,omitempty"`
}

// confirmation is the cnf claim (RFC 7800 §3.1) of a DPoP-bound token.
type confirmation struct {
	JKT string `json:"jkt"`
}

// parseAccessToken returns the claims of an access token this issuer
// signed, with any of its published keys, whether or not it expired or was
// revoked, or nil.
func (i *Issuer) parseAccessToken(ctx context.Context, s string) *accessClaims {
	t, err := jwt.ParseSigned(s, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(t.Headers) != 1 {
		return nil
	}
	pub := i.verifier(ctx, t.Headers[0].KeyID)
	if pub == nil {
		return nil
	}
	var c accessClaims
	if err := t.Claims(pub, &c); err != nil || c.Issuer != i.opts.Issuer || c.ID == "" {
		return nil
	}
	return &c
}
