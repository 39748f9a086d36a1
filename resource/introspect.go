package resource

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/wire"
)

// introspectionValidator asks the authorization server about each token
// (RFC 7662), authenticating with client_secret_basic (RFC 6749 §2.3.1).
// The endpoint is configured or read from the first authorization server's
// RFC 8414 metadata on first use. active:false means revoked. An active
// token is accepted only when its aud names this resource (RFC 7662 §2.2
// aud, with RFC 8707 §2 resource indicators and RFC 9068 §4's rule for
// JWTs): an answer without aud is refused unless the scheme sets
// allowMissingAudience (noAudience).
type introspectionValidator struct {
	client       *http.Client
	now          func() time.Time
	issuers      []string
	resource     string
	clientID     string
	clientSecret string
	// noAudience is validation.allowMissingAudience.
	noAudience bool

	mu       sync.Mutex
	endpoint string
}

func newIntrospectionValidator(s Scheme, resource string, client *http.Client, now func() time.Time) *introspectionValidator {
	return &introspectionValidator{client: client, now: now, issuers: s.AuthorizationServers, resource: resource,
		clientID: s.Validation.ClientID, clientSecret: s.Validation.ClientSecret, endpoint: s.Validation.IntrospectionEndpoint,
		noAudience: s.Validation.AllowMissingAudience}
}

// introspection is the RFC 7662 §2.2 response.
type introspection struct {
	Active   bool         `json:"active"`
	Scope    string       `json:"scope"`
	ClientID string       `json:"client_id"`
	Username string       `json:"username"`
	Sub      string       `json:"sub"`
	Exp      *float64     `json:"exp"`
	Nbf      *float64     `json:"nbf"`
	Iss      string       `json:"iss"`
	Aud      jwt.Audience `json:"aud"`
	JTI      string       `json:"jti"`
	// Cnf is the key binding of a DPoP-bound token (RFC 9449 §6.2).
	Cnf *confirmation `json:"cnf"`
}

func (v *introspectionValidator) endpointURL(ctx context.Context) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.endpoint != "" {
		return v.endpoint, nil
	}
	md, err := discoverAuthServer(ctx, v.client, v.issuers[0])
	if err != nil {
		return "", err
	}
	if md.IntrospectionEndpoint == "" {
		return "", fmt.Errorf("the authorization server %s publishes no introspection_endpoint", v.issuers[0])
	}
	if err := CheckFetchURL(md.IntrospectionEndpoint); err != nil {
		return "", fmt.Errorf("cannot use the introspection endpoint: %w", err)
	}
	v.endpoint = md.IntrospectionEndpoint
	return v.endpoint, nil
}

func (v *introspectionValidator) Validate(ctx context.Context, token string) (*Grant, error) {
	ep, err := v.endpointURL(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot introspect the token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("cannot introspect the token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.clientID), url.QueryEscape(v.clientSecret))
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot introspect the token at %s: %w", ep, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot introspect the token: %s answered HTTP %d", ep, resp.StatusCode)
	}
	var r introspection
	if err := readJSON(resp.Body, ep, &r); err != nil {
		return nil, fmt.Errorf("cannot introspect the token: %w", err)
	}
	if !r.Active {
		return nil, &TokenError{Kind: TokenRevoked, Description: "The authorization server reports the access token is not active"}
	}
	now := v.now()
	g := &Grant{Subject: r.Sub, ClientID: r.ClientID, Scopes: wire.SplitScope(r.Scope), JTI: r.JTI, Issuer: r.Iss}
	if g.Subject == "" {
		g.Subject = r.Username
	}
	if r.Exp != nil {
		g.Expiry = unixTime(*r.Exp)
	}
	if err := r.Cnf.bind(g); err != nil {
		return nil, err
	}
	switch {
	case r.Iss != "" && len(v.issuers) > 0 && !slices.Contains(v.issuers, r.Iss):
		return nil, invalidf(fmt.Sprintf("The access token's issuer %s is not trusted", wire.Clip(r.Iss)))
	case len(r.Aud) == 0 && !v.noAudience:
		return nil, &TokenError{Kind: TokenInvalid, Description: "The access token was not issued for " + v.resource,
			Hint: "the introspection answer names no audience (aud), so nothing says the token was issued for this resource; " +
				"to accept such tokens, set allowMissingAudience: true in the scheme's validation"}
	case len(r.Aud) > 0 && !r.Aud.Contains(v.resource):
		return nil, invalidf("The access token's audience does not include " + v.resource)
	case r.Nbf != nil && now.Add(jwtLeeway).Before(unixTime(*r.Nbf)):
		return nil, invalidf("The access token is not valid yet (nbf)")
	case g.ExpiredAt(now):
		return nil, ErrExpired
	}
	return g, nil
}

func unixTime(f float64) time.Time {
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}
