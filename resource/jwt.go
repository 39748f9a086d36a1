package resource

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/wire"
)

const (
	// jwtLeeway tolerates clock skew on nbf and iat. exp gets none: the
	// host pushes "expired" at exp, so it must also reject at exp.
	jwtLeeway = 30 * time.Second
	// minKeyRefetch is the least time between two JWKS fetches for one
	// issuer, however many unknown kids arrive.
	minKeyRefetch = 10 * time.Second
	// maxKeys bounds the keys kept from one JWKS.
	maxKeys = 64
)

// jwtValidator verifies JWT access tokens (RFC 9068) against the keys of
// the issuer named by their iss, found through its RFC 8414 metadata
// jwks_uri (or a configured jwksUri). Keys are fetched on first use, cached,
// and refetched when a token names an unknown kid, at most once per
// minKeyRefetch.
type jwtValidator struct {
	client     *http.Client
	now        func() time.Time
	issuers    []string
	resource   string
	algs       []jose.SignatureAlgorithm
	jwksURI    string
	minRefetch time.Duration

	mu   sync.Mutex
	sets map[string]*keySet // by issuer; "" when jwksURI is configured
}

type keySet struct {
	uri       string
	keys      []jose.JSONWebKey
	attempted time.Time // last fetch attempt; zero: never
	err       error     // last fetch error
}

func newJWTValidator(s Scheme, resource string, client *http.Client, now func() time.Time) *jwtValidator {
	names := s.Validation.Algorithms
	if len(names) == 0 {
		names = AllowedAlgorithms
	}
	algs := make([]jose.SignatureAlgorithm, len(names))
	for i, a := range names {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	return &jwtValidator{client: client, now: now, issuers: s.AuthorizationServers, resource: resource,
		algs: algs, jwksURI: s.Validation.JWKSURI, minRefetch: minKeyRefetch, sets: map[string]*keySet{}}
}

// jwsHeader is the part of the protected header read before verification.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// accessClaims are the RFC 9068 §2.2 claims beyond RFC 7519's.
type accessClaims struct {
	Scope    string `json:"scope"`
	ClientID string `json:"client_id"`
	// SID names the token's family (see Grant.Family).
	SID string `json:"sid"`
	// Cnf is the key binding of a DPoP-bound token (RFC 9449 §6.1).
	Cnf *confirmation `json:"cnf"`
}

func (v *jwtValidator) Validate(ctx context.Context, token string) (*Grant, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, invalidf("The access token is not a signed JWT")
	}
	// RFC 7515 §2: base64url without padding. A segment is accepted only
	// in its one canonical form (no padding, line breaks or non-zero
	// trailing bits), so one token has one spelling.
	var header []byte
	for i, p := range parts {
		b, ok := decodeSegment(p)
		if !ok {
			return nil, invalidf("The access token is not canonical base64url (RFC 7515 section 2)")
		}
		if i == 0 {
			header = b
		}
	}
	var h jwsHeader
	if json.Unmarshal(header, &h) != nil {
		return nil, invalidf("The access token has a malformed header")
	}
	// RFC 8725 §3.1: only the allow-listed algorithms, never "none" or a
	// MAC keyed with a public key.
	if !slices.Contains(v.algs, jose.SignatureAlgorithm(h.Alg)) {
		return nil, invalidf(fmt.Sprintf("The access token's algorithm %s is not allowed", wire.Clip(h.Alg)))
	}
	// RFC 9068 §4: typ must be at+jwt (RFC 7515 §4.1.9: a media type,
	// compared case-insensitively, "application/" optional). "JWT" or no
	// typ is an ID token or another JWT, never an access token (RFC 8725
	// §3.11).
	if !isAccessTokenType(h.Typ) {
		typ := "no typ"
		if h.Typ != "" {
			typ = "typ " + wire.Clip(h.Typ)
		}
		return nil, invalidf(fmt.Sprintf("The token is not an access token (%s, want at+jwt per RFC 9068 section 4): ID tokens are not accepted", typ))
	}
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, invalidf("The access token is not a well-formed JWT")
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, invalidf("The access token's claims are malformed")
	}
	// iss only picks the key set here; it is checked again once verified.
	if !slices.Contains(v.issuers, unverified.Issuer) {
		return nil, invalidf(fmt.Sprintf("The access token's issuer %s is not trusted", wire.Clip(unverified.Issuer)))
	}
	key, err := v.key(ctx, unverified.Issuer, h.Kid, h.Alg)
	if err != nil {
		return nil, err
	}
	var c jwt.Claims
	var extra accessClaims
	if err := tok.Claims(key.Key, &c, &extra); err != nil {
		return nil, invalidf("The access token's signature is invalid")
	}
	now := v.now()
	switch {
	case c.Issuer != unverified.Issuer:
		return nil, invalidf("The access token's issuer is not trusted")
	case !c.Audience.Contains(v.resource):
		return nil, invalidf("The access token's audience does not include " + v.resource)
	case c.Expiry == nil:
		return nil, invalidf("The access token has no expiry (exp)")
	case c.NotBefore != nil && now.Add(jwtLeeway).Before(c.NotBefore.Time()):
		return nil, invalidf("The access token is not valid yet (nbf)")
	case c.IssuedAt != nil && now.Add(jwtLeeway).Before(c.IssuedAt.Time()):
		return nil, invalidf("The access token was issued in the future (iat)")
	case !now.Before(c.Expiry.Time()):
		return nil, ErrExpired
	}
	g := &Grant{Subject: c.Subject, ClientID: extra.ClientID, Scopes: wire.SplitScope(extra.Scope),
		Expiry: c.Expiry.Time(), JTI: c.ID, Family: extra.SID, Issuer: c.Issuer}
	if err := extra.Cnf.bind(g); err != nil {
		return nil, err
	}
	return g, nil
}

// accessTokenTypes are the RFC 9068 §4 typ values, in lower case.
var accessTokenTypes = []string{"at+jwt", "application/at+jwt"}

func isAccessTokenType(typ string) bool {
	return slices.Contains(accessTokenTypes, strings.ToLower(typ))
}

// decodeSegment decodes a JWS segment, reporting false unless it is the
// canonical base64url encoding of what it decodes to.
func decodeSegment(seg string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != seg {
		return nil, false
	}
	return b, true
}

// key finds the verification key for kid, fetching the issuer's JWKS on
// first use and again (rate-bounded) when kid is unknown.
func (v *jwtValidator) key(ctx context.Context, issuer, kid, alg string) (jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	name := issuer
	if v.jwksURI != "" {
		name = ""
	}
	ks := v.sets[name]
	if ks == nil {
		ks = &keySet{uri: v.jwksURI}
		v.sets[name] = ks
	}
	if ks.attempted.IsZero() {
		v.fetch(ctx, ks, issuer)
	}
	if k, ok := ks.find(kid, alg); ok {
		return k, nil
	}
	if v.now().Sub(ks.attempted) >= v.minRefetch {
		v.fetch(ctx, ks, issuer)
		if k, ok := ks.find(kid, alg); ok {
			return k, nil
		}
	}
	if len(ks.keys) == 0 && ks.err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("cannot verify the token: %w", ks.err)
	}
	return jose.JSONWebKey{}, invalidf("The access token is signed with an unknown key")
}

// fetch (re)loads a key set; on failure the old keys stay.
func (v *jwtValidator) fetch(ctx context.Context, ks *keySet, issuer string) {
	ks.attempted = v.now()
	if ks.uri == "" {
		md, err := discoverAuthServer(ctx, v.client, issuer)
		if err != nil {
			ks.err = err
			return
		}
		if md.JWKSURI == "" {
			ks.err = fmt.Errorf("the authorization server %s publishes no jwks_uri", issuer)
			return
		}
		ks.uri = md.JWKSURI
	}
	var doc json.RawMessage
	if err := fetchJSON(ctx, v.client, ks.uri, &doc); err != nil {
		ks.err = err
		return
	}
	keys, err := decodeJWKS(doc)
	if err != nil {
		ks.err = fmt.Errorf("cannot read the key set at %s: %w", ks.uri, err)
		return
	}
	ks.keys, ks.err = keys, nil
	if len(keys) == 0 {
		ks.err = errors.New("the key set at " + ks.uri + " has no usable keys")
	}
}

// decodeJWKS reads a JWK Set (RFC 7517 §5): the public halves of at most
// maxKeys valid asymmetric keys. Keys of unsupported types and symmetric
// keys are skipped, not fatal; private halves are never kept.
func decodeJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		if len(keys) == maxKeys {
			break
		}
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil || !k.Valid() {
			continue
		}
		pub := k.Public()
		if pub.Key == nil { // a symmetric key
			continue
		}
		keys = append(keys, pub)
	}
	return keys, nil
}

// find picks the signing key for kid (or the only key when the token names
// none) whose use and alg, when stated, fit.
func (ks *keySet) find(kid, alg string) (jose.JSONWebKey, bool) {
	for _, k := range ks.keys {
		if kid == "" && len(ks.keys) != 1 {
			break
		}
		if (kid == "" || k.KeyID == kid) && (k.Use == "" || k.Use == "sig") && (k.Algorithm == "" || k.Algorithm == alg) {
			return k, true
		}
	}
	return jose.JSONWebKey{}, false
}
