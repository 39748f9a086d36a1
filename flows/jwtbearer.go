package flows

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/wire"
)

// ClientAssertionType is the client_assertion_type of a JWT client
// assertion (RFC 7523 §2.2).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// ClientAssertionLifetime is how long a client assertion is valid: long
// enough for one token request, short enough to be useless when seen.
const ClientAssertionLifetime = 5 * time.Minute

// ParsePrivateKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1
// RSA) and the JWS algorithm it signs with: ES256 for a P-256 key, RS256
// for an RSA key of at least 2048 bits. Other keys are refused.
func ParsePrivateKey(pemBytes []byte) (crypto.Signer, jose.SignatureAlgorithm, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, "", errors.New("no PEM block found (expected -----BEGIN PRIVATE KEY-----)")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot parse the private key: %w", err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, "", errors.New("an EC key must be on P-256 (ES256)")
		}
		return k, jose.ES256, nil
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, "", errors.New("an RSA key must have at least 2048 bits (RS256)")
		}
		return k, jose.RS256, nil
	}
	return nil, "", fmt.Errorf("a %T is not supported: use a P-256 (ES256) or RSA (RS256) key", key)
}

// clientAssertion signs the JWT with which a client authenticates with
// private_key_jwt (RFC 7523 §2.2, §3): iss and sub are the client id, aud
// the authorization server's issuer, with a random jti and a lifetime of
// ClientAssertionLifetime.
func clientAssertion(c Client, now time.Time) (string, error) {
	key, alg, err := ParsePrivateKey([]byte(c.PrivateKey))
	if err != nil {
		return "", err
	}
	if c.Audience == "" {
		return "", errors.New("private_key_jwt needs the authorization server's issuer as the assertion's audience")
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("cannot sign the client assertion: %w", err)
	}
	claims := jwt.Claims{
		Issuer:   c.ID,
		Subject:  c.ID,
		Audience: jwt.Audience{c.Audience},
		ID:       rand.Text(),
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(ClientAssertionLifetime)),
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("cannot sign the client assertion: %w", err)
	}
	return s, nil
}

// JWTBearerRequest is a JWT bearer authorization grant (RFC 7523 §2.1):
// an assertion from a party the authorization server trusts (a CI
// platform's workload token, an enterprise IdP's ID-JAG) for an access
// token.
type JWTBearerRequest struct {
	TokenEndpoint string
	// Client authenticates as the server requires; a public client sends
	// its client_id alone.
	Client    Client
	Assertion string
	Scopes    []string
	// Resource is sent as the RFC 8707 resource indicator when not empty.
	Resource string
}

// JWTBearer runs the JWT bearer grant (RFC 7523 §2.1). A refusal is not
// retried: the assertion would be refused again (SEP-1933).
func JWTBearer(ctx context.Context, hc *http.Client, req JWTBearerRequest) (*Token, error) {
	if req.Assertion == "" {
		return nil, errors.New("cannot run the JWT bearer grant: the assertion is empty")
	}
	form := url.Values{"grant_type": {GrantJWTBearer}, "assertion": {req.Assertion}}
	if len(req.Scopes) > 0 {
		form.Set("scope", wire.JoinScope(req.Scopes))
	}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	t, err := requestToken(ctx, hc, req.TokenEndpoint, req.Client, form, req.Scopes)
	if err != nil {
		return nil, fmt.Errorf("cannot get a token with the JWT bearer grant: %w", err)
	}
	return t, nil
}

// GrantJWTBearer is the grant type of RFC 7523 §2.1.
const GrantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
