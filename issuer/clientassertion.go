package issuer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/state"
)

// AuthPrivateKeyJWT is client authentication with a JWT signed by the
// client's key (RFC 7523 §2.2), whose public keys it registered as jwks.
const AuthPrivateKeyJWT = "private_key_jwt"

// clientAssertionType is the client_assertion_type of RFC 7523 §2.2.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Limits on client assertions and the keys that verify them.
const (
	// maxAssertionLifetime bounds exp - now of a client assertion: a
	// longer-lived one could be replayed after its jti was forgotten.
	maxAssertionLifetime = 10 * time.Minute
	// assertionLeeway is the clock skew allowed on exp, iat and nbf.
	assertionLeeway = 30 * time.Second
	// maxClientKeys bounds the keys of a registered jwks.
	maxClientKeys = 5
)

// assertionAlgs are the signature algorithms accepted on client
// assertions.
var assertionAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.RS256}

// checkJWKS reads a registered jwks (RFC 7591 §2): 1 to maxClientKeys
// public ES256 (P-256) or RS256 keys.
func checkJWKS(raw json.RawMessage) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("cannot read jwks: %w", err)
	}
	if len(set.Keys) == 0 || len(set.Keys) > maxClientKeys {
		return nil, fmt.Errorf("jwks must hold 1 to %d keys", maxClientKeys)
	}
	for _, k := range set.Keys {
		if !k.IsPublic() || !k.Valid() {
			return nil, fmt.Errorf("jwks must hold valid public keys only")
		}
	}
	return &set, nil
}

// authenticateAssertion authenticates a private_key_jwt client (RFC 7523
// §3): the assertion's signature by one of its registered keys, iss and
// sub its client id, aud the issuer or the token endpoint, a bounded
// lifetime, and a jti never seen before.
func (i *Issuer) authenticateAssertion(r *http.Request, form url.Values) (*client, *oauthError) {
	if form.Get("client_assertion_type") != clientAssertionType {
		return nil, clientError("client_assertion_type must be "+clientAssertionType, false)
	}
	tok, err := jwt.ParseSigned(form.Get("client_assertion"), assertionAlgs)
	if err != nil {
		return nil, clientError("cannot parse the client assertion (a JWS signed with ES256 or RS256)", false)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, clientError("cannot read the client assertion's claims", false)
	}
	id := unverified.Issuer
	if form.Has("client_id") && form.Get("client_id") != id {
		return nil, badRequest("invalid_request", "client_id differs from the client assertion's iss")
	}
	if id == "" || len(id) > maxParamBytes {
		return nil, clientError("unknown client", false)
	}
	c, err := i.lookupClient(r.Context(), id)
	switch {
	case err != nil:
		return nil, i.storeFailed(err)
	case c == nil:
		return nil, clientError("unknown client", false)
	case c.authMethod != AuthPrivateKeyJWT || c.jwks == nil:
		return nil, clientError("the client must authenticate with "+c.authMethod, false)
	}
	var claims jwt.Claims
	verified := false
	for _, k := range c.jwks.Keys {
		if tok.Claims(k.Key, &claims) == nil {
			verified = true
			break
		}
	}
	now := i.clock(r.Context())
	switch {
	case !verified:
		return nil, clientError("the client assertion's signature does not match the client's registered keys", false)
	case claims.Expiry == nil || claims.ID == "":
		return nil, clientError("the client assertion needs exp and jti (RFC 7523 §3)", false)
	case claims.Expiry.Time().Sub(now) > maxAssertionLifetime:
		return nil, clientError(fmt.Sprintf("the client assertion lives longer than %s", maxAssertionLifetime), false)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: id, Subject: id, AnyAudience: jwt.Audience{i.opts.Issuer, i.opts.Issuer + pathToken}, Time: now}, assertionLeeway); err != nil {
		return nil, clientError("the client assertion is not valid here: "+err.Error(), false)
	}
	// The assertion's id is kept, per client, until it expires (RFC 7523
	// §3 item 7), in the store the replicas share.
	var refused *oauthError
	err = i.store.Update(r.Context(), func(tx state.Tx) (err error) {
		refused, err = rememberTx(tx, kindAssertion, i.opts.Limits.ClientAssertions, id, claims.ID, claims.Expiry.Time().Add(assertionLeeway), now,
			clientError("the client assertion was already used (jti)", false), "client assertions")
		return err
	})
	if err != nil {
		return nil, i.storeFailed(err)
	}
	if refused != nil {
		return nil, refused
	}
	return c, nil
}
