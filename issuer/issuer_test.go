package issuer_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/wire"
)

func TestMetadata(t *testing.T) {
	s := start(t, issuer.Options{})
	oauth := s.get("/.well-known/oauth-authorization-server")
	oidc := s.get("/.well-known/openid-configuration")
	if string(oauth.body) != string(oidc.body) {
		t.Errorf("the two metadata documents differ:\n%s\n%s", oauth.body, oidc.body)
	}
	wantOK(t, oauth)
	var m wire.AuthServerMetadata
	if err := json.Unmarshal(oauth.body, &m); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.iss.Metadata(), m); diff != "" {
		t.Errorf("served metadata differs from Metadata() (-want +got):\n%s", diff)
	}
	if m.Issuer != s.url {
		t.Errorf("issuer %q, want the listener origin %q", m.Issuer, s.url)
	}
	paths := s.iss.Paths()
	for name, ep := range map[string]string{
		"authorization": m.AuthorizationEndpoint, "token": m.TokenEndpoint, "jwks": m.JWKSURI,
		"registration": m.RegistrationEndpoint, "revocation": m.RevocationEndpoint,
		"introspection": m.IntrospectionEndpoint, "device": m.DeviceAuthorizationEndpoint,
	} {
		path, ok := strings.CutPrefix(ep, s.url+"/")
		if !ok || !slices.Contains(paths, "/"+path) {
			t.Errorf("%s endpoint %q is not a path under the issuer listed by Paths %v", name, ep, paths)
		}
	}
	want := wire.AuthServerMetadata{
		ScopesSupported:                            []string{"agent:use"},
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken, wire.GrantDeviceCode, wire.GrantClientCredentials},
		TokenEndpointAuthMethodsSupported:          []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: true,
	}
	got := wire.AuthServerMetadata{
		ScopesSupported:                            m.ScopesSupported,
		ResponseTypesSupported:                     m.ResponseTypesSupported,
		GrantTypesSupported:                        m.GrantTypesSupported,
		TokenEndpointAuthMethodsSupported:          m.TokenEndpointAuthMethodsSupported,
		CodeChallengeMethodsSupported:              m.CodeChallengeMethodsSupported,
		AuthorizationResponseIssParameterSupported: m.AuthorizationResponseIssParameterSupported,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
}

type atClaims struct {
	jwt.Claims
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	SID      string `json:"sid"`
}

// verify checks an access token against /jwks.json the way a resource
// server would: ES256, kid, typ at+jwt (RFC 9068 §4), iss and lifetime.
func (s *testServer) verify(token string) atClaims {
	s.t.Helper()
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(s.get("/jwks.json").body, &set); err != nil {
		s.t.Fatalf("jwks: %v", err)
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		s.t.Fatalf("access token is not an ES256 JWS: %v", err)
	}
	h := tok.Headers[0]
	if typ := h.ExtraHeaders[jose.HeaderType]; typ != "at+jwt" {
		s.t.Errorf("typ %v, want at+jwt", typ)
	}
	keys := set.Key(h.KeyID)
	if h.KeyID == "" || len(keys) != 1 {
		s.t.Fatalf("kid %q does not name one key of %d in the JWKS", h.KeyID, len(set.Keys))
	}
	var c atClaims
	if err := tok.Claims(keys[0].Key, &c); err != nil {
		s.t.Fatalf("signature: %v", err)
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: s.url, Time: s.clock.Now()}, 0); err != nil {
		s.t.Errorf("claims: %v", err)
	}
	if c.ID == "" || c.Subject == "" || c.IssuedAt == nil || c.Expiry == nil {
		s.t.Errorf("missing RFC 9068 claims: %+v", c)
	}
	return c
}

func TestAuthorizationCodeFlowWithOAuth2Client(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	const resource = "https://rs.example/mcp"
	conf := &oauth2.Config{
		ClientID:    issuer.CLIClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: s.url + "/authorize", TokenURL: s.url + "/token", AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: cliRedirect,
		Scopes:      []string{"agent:use"},
	}
	verifier := oauth2.GenerateVerifier()
	r := s.get(conf.AuthCodeURL("st-xyz", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)))
	loc, _ := url.Parse(r.header.Get("Location"))
	if r.status != http.StatusFound || !strings.HasPrefix(loc.String(), cliRedirect+"?") {
		t.Fatalf("authorize: status %d, Location %q", r.status, loc)
	}
	q := loc.Query()
	if q.Get("state") != "st-xyz" || q.Get("iss") != s.url {
		t.Errorf("state %q iss %q, want st-xyz and %s", q.Get("state"), q.Get("iss"), s.url)
	}

	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, s.client)
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Extra("scope") != "agent:use" || tok.ExpiresIn != 3600 {
		t.Errorf("token response: type %q refresh %t scope %v expires_in %d", tok.TokenType, tok.RefreshToken != "", tok.Extra("scope"), tok.ExpiresIn)
	}
	c := s.verify(tok.AccessToken)
	want := atClaims{ClientID: issuer.CLIClientID, Scope: "agent:use"}
	want.Issuer, want.Subject, want.Audience = s.url, "alice", jwt.Audience{resource}
	got := atClaims{ClientID: c.ClientID, Scope: c.Scope}
	got.Issuer, got.Subject, got.Audience = c.Issuer, c.Subject, c.Audience
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if life := c.Expiry.Time().Sub(c.IssuedAt.Time()); life != time.Hour {
		t.Errorf("token lifetime %v, want 1h", life)
	}

	// A refresh keeps the audience the user approved.
	refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if c2 := s.verify(refreshed.AccessToken); !slices.Equal(c2.Audience, []string{resource}) || c2.ID == c.ID {
		t.Errorf("refreshed token: aud %v jti %q, want aud %s and a new jti", c2.Audience, c2.ID, resource)
	}
}

func TestAudienceWithoutResource(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	if c := s.verify(s.tokens(nil)["access_token"].(string)); !slices.Equal(c.Audience, []string{s.url + "/mcp"}) {
		t.Errorf("aud %v, want the default resource %s/mcp", c.Audience, s.url)
	}
	s = start(t, issuer.Options{AutoApprove: true, DefaultResource: "https://default.example/api"})
	if c := s.verify(s.tokens(nil)["access_token"].(string)); !slices.Equal(c.Audience, []string{"https://default.example/api"}) {
		t.Errorf("aud %v, want the configured DefaultResource", c.Audience)
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	var logs lockedBuffer
	s := start(t, issuer.Options{
		AutoApprove: true,
		Clients:     []issuer.Client{rs},
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	tok := wantOK(t, s.exchange(a, code))
	wantError(t, s.exchange(a, code), http.StatusBadRequest, "invalid_grant") // replay
	dev := wantOK(t, s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}}))
	s.get(dev["verification_uri_complete"].(string))
	s.advance(5 * time.Second)
	wantOK(t, s.post("/token", url.Values{"grant_type": {wire.GrantDeviceCode}, "device_code": {dev["device_code"].(string)}, "client_id": {issuer.CLIClientID}}))
	reg := s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"]}`).json(t)
	wantError(t, s.post("/introspect", url.Values{"token": {tok["access_token"].(string)}}, "rs", "wrong-secret"), http.StatusUnauthorized, "invalid_client")

	out := logs.String()
	if !strings.Contains(out, "access token issued") || !strings.Contains(out, "replayed") {
		t.Fatalf("the log misses the flow:\n%s", out)
	}
	for name, secret := range map[string]string{
		"code": code, "verifier": a.verifier, "challenge": a.query.Get("code_challenge"),
		"access token": tok["access_token"].(string), "refresh token": tok["refresh_token"].(string),
		"device code": dev["device_code"].(string), "user code": dev["user_code"].(string),
		"client secret": reg["client_secret"].(string), "wrong secret": "wrong-secret",
	} {
		if strings.Contains(out, secret) {
			t.Errorf("the log contains the %s", name)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, opts := range map[string]issuer.Options{
		"issuer without scheme":   {Issuer: "127.0.0.1:7777"},
		"issuer with path":        {Issuer: "http://127.0.0.1:7777/as"},
		"issuer with query":       {Issuer: "http://127.0.0.1:7777?x=1"},
		"relative resource":       {Issuer: "http://127.0.0.1:7777", DefaultResource: "/mcp"},
		"subject with newline":    {Issuer: "http://127.0.0.1:7777", Subject: "bob\nadmin"},
		"duplicate client":        {Issuer: "http://127.0.0.1:7777", Clients: []issuer.Client{{ID: issuer.CLIClientID}}},
		"public client secret":    {Issuer: "http://127.0.0.1:7777", Clients: []issuer.Client{{ID: "c", Secret: "s", AuthMethod: "none"}}},
		"secret method no secret": {Issuer: "http://127.0.0.1:7777", Clients: []issuer.Client{{ID: "c", AuthMethod: "client_secret_post"}}},
		"http redirect":           {Issuer: "http://127.0.0.1:7777", Clients: []issuer.Client{{ID: "c", RedirectURIs: []string{"http://app.example/cb"}}}},
		"unknown grant":           {Issuer: "http://127.0.0.1:7777", Clients: []issuer.Client{{ID: "c", GrantTypes: []string{"password"}}}},
		"bad scope":               {Issuer: "http://127.0.0.1:7777", ScopesSupported: []string{`a"b`}},
	} {
		if _, err := issuer.New(opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
}

// TestCORSOnlyForPublicDocuments checks that the metadata and JWKS are
// readable cross-origin and that no other endpoint lets a web page read
// its answer (issue 9: a page could register, authorize and mint tokens).
func TestCORSOnlyForPublicDocuments(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/jwks.json"} {
		req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
		req.Header.Set("Origin", "https://inspector.example")
		if got := s.do(req).header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want *", path, got)
		}
		req, _ = http.NewRequest(http.MethodOptions, s.url+path, nil)
		req.Header.Set("Origin", "https://inspector.example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		if r := s.do(req); r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: preflight status %d, headers %v", path, r.status, r.header)
		}
	}
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	for _, r := range []reply{
		s.authorize(a),
		s.get("/device"),
		s.post("/token", url.Values{"grant_type": {"client_credentials"}}),
		s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}}),
		s.post("/revoke", url.Values{"token": {"x"}}),
		s.post("/introspect", url.Values{"token": {"x"}}),
		s.post("/consent", url.Values{"nonce": {"x"}}),
		s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"]}`),
	} {
		if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("status %d answer allows cross-origin reads: %q; body %s", r.status, got, r.body)
		}
	}
	for _, path := range []string{"/token", "/register", "/device_authorization", "/revoke", "/introspect"} {
		req, _ := http.NewRequest(http.MethodOptions, s.url+path, nil)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		if r := s.do(req); r.header.Get("Access-Control-Allow-Origin") != "" || r.status == http.StatusNoContent {
			t.Errorf("%s: preflight passes: status %d, headers %v", path, r.status, r.header)
		}
	}
}
