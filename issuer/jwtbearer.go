package issuer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// GrantJWTBearer is the JWT bearer authorization grant (RFC 7523 §2.1).
const GrantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// maxGrantAssertionLifetime bounds exp - now of a JWT bearer assertion: a
// CI platform's workload token lives for minutes to an hour, and a
// longer-lived one could be replayed after its jti was forgotten.
const maxGrantAssertionLifetime = time.Hour

// typIDJAG is the JWT typ of an identity assertion JWT authorization
// grant (ID-JAG), the assertion of MCP's enterprise-managed authorization.
const typIDJAG = "oauth-id-jag+jwt"

// maxAssertionIssuers bounds the trusted assertion issuers.
const maxAssertionIssuers = 20

// AssertionIssuer is an issuer of JWT bearer assertions (RFC 7523 §3) that
// the embedded issuer trusts: a CI platform's workload identity, an
// enterprise IdP issuing ID-JAGs.
type AssertionIssuer struct {
	// Issuer is the assertions' iss, compared exactly.
	Issuer string
	// Keys verify the assertions' signatures (ES256 or RS256).
	Keys *jose.JSONWebKeySet
	// SubjectPrefix is put before an assertion's sub to make the token's
	// subject; empty means Issuer + "#", so that a workload's sub=alice
	// is not the user alice who signs in with a browser, nor another
	// issuer's alice. SubjectAsIs takes sub as it is instead, for an
	// issuer whose subjects are this server's users (an enterprise IdP
	// that also signs them in).
	SubjectPrefix string
	SubjectAsIs   bool
}

// subject is the token subject of an assertion's sub: namespaced by its
// issuer unless configured otherwise.
func (a *AssertionIssuer) subject(sub string) string {
	switch {
	case a.SubjectAsIs:
		return sub
	case a.SubjectPrefix != "":
		return a.SubjectPrefix + sub
	}
	return a.Issuer + "#" + sub
}

// ParseAssertionKeys reads the public keys of an assertion issuer: a JWKS
// document (RFC 7517 §5) of 1 to maxClientKeys keys, or a PEM public key
// (PKIX, P-256 or RSA of at least 2048 bits).
func ParseAssertionKeys(data []byte) (*jose.JSONWebKeySet, error) {
	if block, _ := pem.Decode(data); block != nil {
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("cannot parse the PEM public key (want -----BEGIN PUBLIC KEY-----): %w", err)
		}
		switch k := pub.(type) {
		case *ecdsa.PublicKey:
			if k.Curve != elliptic.P256() {
				return nil, errors.New("an EC key must be on P-256 (ES256)")
			}
		case *rsa.PublicKey:
			if k.N.BitLen() < 2048 {
				return nil, errors.New("an RSA key must have at least 2048 bits (RS256)")
			}
		default:
			return nil, fmt.Errorf("a %T is not supported: use a P-256 (ES256) or RSA (RS256) key", pub)
		}
		return &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub}}}, nil
	}
	return checkJWKS(json.RawMessage(data))
}

// redeemJWTBearerTx is the JWT bearer grant (RFC 7523 §2.1, §3): an
// assertion signed by a trusted issuer's key, its aud the issuer or the
// token endpoint, with exp (at most maxGrantAssertionLifetime away), a sub
// that becomes the token's subject (namespaced, AssertionIssuer.subject), and a jti never seen before. An ID-JAG
// (typ oauth-id-jag+jwt, draft-ietf-oauth-identity-assertion-authz-grant
// §3) must name this issuer itself in aud and the requesting client as
// client_id. An assertion's resource claim, when present, must include the
// resource the token is requested for (the request's resource parameter,
// or the default resource), so an ID-JAG the IdP issued for one resource
// cannot buy a token for another. No refresh token: the client presents
// a fresh assertion instead.
func (i *Issuer) redeemJWTBearerTx(is *issuing, c *client, form url.Values) (*tokenResponse, []string, *oauthError, error) {
	raw := form.Get("assertion")
	if raw == "" {
		return nil, nil, badRequest("invalid_request", "assertion is required (RFC 7523 §2.1)"), nil
	}
	tok, err := jwt.ParseSigned(raw, assertionAlgs)
	if err != nil {
		return nil, nil, badRequest("invalid_grant", "cannot parse the assertion (a JWS signed with ES256 or RS256)"), nil
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, nil, badRequest("invalid_grant", "cannot read the assertion's claims"), nil
	}
	var trusted *AssertionIssuer
	for k := range i.opts.AssertionIssuers {
		if i.opts.AssertionIssuers[k].Issuer == unverified.Issuer {
			trusted = &i.opts.AssertionIssuers[k]
		}
	}
	if trusted == nil {
		return nil, nil, badRequest("invalid_grant", "the assertion's issuer is not trusted: start serve with --trust-assertion-issuer ISSUER=KEYFILE"), nil
	}
	var claims jwt.Claims
	var jag struct {
		ClientID string `json:"client_id"`
		// Resource is one resource indicator or several (RFC 8707 §2).
		Resource jwt.Audience `json:"resource"`
	}
	verified := false
	for _, k := range trusted.Keys.Keys {
		if tok.Claims(k.Key, &claims, &jag) == nil {
			verified = true
			break
		}
	}
	now := is.now
	isJAG := len(tok.Headers) == 1 && tok.Headers[0].ExtraHeaders[jose.HeaderType] == typIDJAG
	switch {
	case !verified:
		return nil, nil, badRequest("invalid_grant", "the assertion's signature does not match its issuer's trusted keys"), nil
	case claims.Expiry == nil || claims.ID == "" || claims.Subject == "":
		return nil, nil, badRequest("invalid_grant", "the assertion needs exp, jti and sub (RFC 7523 §3)"), nil
	case claims.Expiry.Time().Sub(now) > maxGrantAssertionLifetime:
		return nil, nil, badRequest("invalid_grant", fmt.Sprintf("the assertion lives longer than %s", maxGrantAssertionLifetime)), nil
	case checkSubject(claims.Subject) != nil:
		return nil, nil, badRequest("invalid_grant", "the assertion's sub must be 1 to 255 printable characters"), nil
	case isJAG && jag.ClientID != c.id:
		return nil, nil, badRequest("invalid_grant", "the ID-JAG was issued for another client (client_id): log in with the --client-id the identity provider names"), nil
	case isJAG && !claims.Audience.Contains(i.opts.Issuer):
		return nil, nil, badRequest("invalid_grant", fmt.Sprintf("the ID-JAG was issued for another authorization server (aud): ask the identity provider for an ID-JAG with audience %s", i.opts.Issuer)), nil
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: trusted.Issuer, AnyAudience: jwt.Audience{i.opts.Issuer, i.opts.Issuer + pathToken}, Time: now}, assertionLeeway); err != nil {
		return nil, nil, badRequest("invalid_grant", "the assertion is not valid here: "+err.Error()), nil
	}
	scope, e := i.requestedScope(form)
	if e != nil {
		return nil, nil, e, nil
	}
	resource, e := i.requestedResource(form)
	if e != nil {
		return nil, nil, e, nil
	}
	if len(jag.Resource) > 0 && !jag.Resource.Contains(resource) {
		return nil, nil, badRequest("invalid_grant", fmt.Sprintf("the assertion was issued for another resource (resource): request the token for a resource it names, or ask the identity provider for an assertion for %s", resource)), nil
	}
	// The assertion's id is kept, per issuer and subject (what it signs,
	// whichever client presents it), until it expires (RFC 7523 §3 item
	// 7), in the store the replicas share.
	refused, err := rememberTx(is.tx, kindGrantAssertion, i.opts.Limits.GrantAssertions, trusted.Issuer+"\x00"+claims.Subject, claims.ID,
		claims.Expiry.Time().Add(assertionLeeway), now, badRequest("invalid_grant", "the assertion was already used (jti): present a fresh one"), "assertions")
	if refused != nil || err != nil {
		return nil, nil, refused, err
	}
	is.noRefresh = true
	g := &grantRecord{ClientID: c.id, Subject: trusted.subject(claims.Subject), Scope: scope, Resource: resource}
	return i.issueTx(is, c, randomID(), g, scope)
}

// checkAssertionIssuers checks the trusted assertion issuers of Options.
func checkAssertionIssuers(issuers []AssertionIssuer) error {
	if len(issuers) > maxAssertionIssuers {
		return fmt.Errorf("cannot trust more than %d assertion issuers", maxAssertionIssuers)
	}
	seen := map[string]bool{}
	for _, a := range issuers {
		switch {
		case a.Issuer == "":
			return errors.New("cannot trust an assertion issuer without a name (its iss)")
		case seen[a.Issuer]:
			return fmt.Errorf("cannot trust assertion issuer %q twice: give all its keys in one JWKS file", a.Issuer)
		case a.Keys == nil || len(a.Keys.Keys) == 0:
			return fmt.Errorf("cannot trust assertion issuer %q without keys", a.Issuer)
		}
		seen[a.Issuer] = true
	}
	return nil
}
