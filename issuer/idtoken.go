package issuer

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// idTokenAlgs are the ID token signature algorithms the login accepts:
// the asymmetric ones (OIDC Core §3.1.3.7 step 6 and 7). none and the
// HMAC algorithms (keyed with the client secret) are refused.
var idTokenAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Clock skew allowed on an ID token's exp and iat.
const (
	idTokenLeeway = time.Minute
	// maxIDTokenAge bounds how far in the past or future an ID token's
	// iat may be (OIDC Core §3.1.3.7 step 10).
	maxIDTokenAge = 5 * time.Minute
)

// idTokenClaims are the ID token claims the login reads (OIDC Core §2,
// §5.1). Groups is read from the configured claim.
type idTokenClaims struct {
	Issuer        string           `json:"iss"`
	Subject       string           `json:"sub"`
	Audience      jwt.Audience     `json:"aud"`
	AZP           string           `json:"azp"`
	Expiry        *jwt.NumericDate `json:"exp"`
	IssuedAt      *jwt.NumericDate `json:"iat"`
	Nonce         string           `json:"nonce"`
	Email         string           `json:"email"`
	EmailVerified any              `json:"email_verified"` // a boolean; some providers send "true"
	// Extra holds every claim, for subjectClaim and groupsClaim.
	Extra map[string]any `json:"-"`
}

// idTokenCheck is what an ID token must match.
type idTokenCheck struct {
	Issuer   string // the provider's issuer, exactly as its metadata says
	ClientID string
	Nonce    string
	Now      time.Time
	Keys     *jose.JSONWebKeySet
}

// errUnknownKey says no key of the set verified the signature: the
// provider may have rotated its keys, so the caller fetches the JWKS again.
var errUnknownKey = errors.New("the ID token's signature does not verify with the provider's keys")

// validateIDToken validates an ID token from the token endpoint per OIDC
// Core §3.1.3.7: the signature with an allowed algorithm and a key of the
// provider's JWKS (steps 6–8; the kid selects the key when it names one),
// iss (2), aud (3), azp (4, 5), exp (9), iat (10) and nonce (11).
func validateIDToken(raw string, want idTokenCheck) (*idTokenClaims, error) {
	tok, err := jwt.ParseSigned(raw, idTokenAlgs)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the ID token (a JWS signed with one of %v): %w", idTokenAlgs, err)
	}
	if len(tok.Headers) != 1 {
		return nil, errors.New("the ID token must have exactly one signature")
	}
	h := tok.Headers[0]
	var c idTokenClaims
	verified := false
	for _, k := range want.Keys.Keys {
		if h.KeyID != "" && k.KeyID != h.KeyID || !isAsymmetric(k) {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if tok.Claims(k.Public().Key, &c, &c.Extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errUnknownKey
	}
	switch {
	case c.Issuer != want.Issuer:
		return nil, fmt.Errorf("the ID token's iss %q is not the provider's issuer %q", c.Issuer, want.Issuer)
	case !slices.Contains(c.Audience, want.ClientID):
		return nil, fmt.Errorf("the ID token's aud does not name client %q", want.ClientID)
	case len(c.Audience) > 1 && c.AZP == "":
		return nil, errors.New("the ID token has several audiences and no azp")
	case c.AZP != "" && c.AZP != want.ClientID:
		return nil, fmt.Errorf("the ID token's azp %q is not client %q", c.AZP, want.ClientID)
	case c.Expiry == nil:
		return nil, errors.New("the ID token has no exp")
	case !want.Now.Before(c.Expiry.Time().Add(idTokenLeeway)):
		return nil, errors.New("the ID token expired")
	case c.IssuedAt == nil:
		return nil, errors.New("the ID token has no iat")
	case c.IssuedAt.Time().After(want.Now.Add(maxIDTokenAge)) || c.IssuedAt.Time().Before(want.Now.Add(-maxIDTokenAge)):
		return nil, errors.New("the ID token's iat is too far from now (check the clocks)")
	case c.Nonce != want.Nonce || want.Nonce == "":
		return nil, errors.New("the ID token's nonce is not this sign-in's")
	case c.Subject == "":
		return nil, errors.New("the ID token has no sub")
	}
	return &c, nil
}

// isAsymmetric reports whether k is a public or private asymmetric key.
func isAsymmetric(k jose.JSONWebKey) bool {
	_, sym := k.Key.([]byte)
	return !sym
}

// emailVerified reads email_verified, a boolean (OIDC Core §5.1) that some
// providers send as a string.
func (c *idTokenClaims) emailVerified() bool {
	switch v := c.EmailVerified.(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}
