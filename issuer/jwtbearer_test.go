package issuer_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/issuer"
)

const ciIssuer = "https://ci.example"

// assertionFor signs a JWT bearer assertion for the test server's issuer.
func assertionFor(t *testing.T, key *ecdsa.PrivateKey, claims jwt.Claims) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJWTBearerGrant(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s := start(t, issuer.Options{Clients: []issuer.Client{rs}, AssertionIssuers: []issuer.AssertionIssuer{
		{Issuer: ciIssuer, Keys: &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey}}}}}})
	if !slices.Contains(s.iss.Metadata().GrantTypesSupported, issuer.GrantJWTBearer) {
		t.Error("the metadata does not advertise the JWT bearer grant")
	}
	valid := func(jti string) jwt.Claims {
		return jwt.Claims{Issuer: ciIssuer, Subject: "repo:acme/app", Audience: jwt.Audience{s.url}, ID: jti,
			Expiry: jwt.NewNumericDate(epoch.Add(5 * time.Minute))}
	}
	grant := func(c jwt.Claims) reply {
		return s.post("/token", url.Values{"grant_type": {issuer.GrantJWTBearer}, "client_id": {issuer.CLIClientID}, "assertion": {assertionFor(t, key, c)}})
	}
	tok := wantOK(t, grant(valid("one")))
	if tok["refresh_token"] != nil {
		t.Error("the JWT bearer grant issued a refresh token")
	}
	at := s.introspect(tok["access_token"].(string))
	if at["sub"] != ciIssuer+"#repo:acme/app" {
		t.Errorf("sub %v, want the assertion's, namespaced by its issuer", at["sub"])
	}
	wantError(t, grant(valid("one")), http.StatusBadRequest, "invalid_grant") // replayed jti

	bad := map[string]func(c *jwt.Claims){
		"untrusted issuer": func(c *jwt.Claims) { c.Issuer = "https://other.example" },
		"other audience":   func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://rs.example"} },
		"no jti":           func(c *jwt.Claims) { c.ID = "" },
		"no sub":           func(c *jwt.Claims) { c.Subject = "" },
		"expired":          func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(epoch.Add(-time.Minute)) },
		"too long":         func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(epoch.Add(2 * time.Hour)) },
	}
	for name, edit := range bad {
		c := valid(name)
		edit(&c)
		wantError(t, grant(c), http.StatusBadRequest, "invalid_grant")
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	r := s.post("/token", url.Values{"grant_type": {issuer.GrantJWTBearer}, "client_id": {issuer.CLIClientID}, "assertion": {assertionFor(t, other, valid("other key"))}})
	wantError(t, r, http.StatusBadRequest, "invalid_grant")
}

func TestJWTBearerGrantNeedsTrustedIssuers(t *testing.T) {
	s := start(t, issuer.Options{})
	if slices.Contains(s.iss.Metadata().GrantTypesSupported, issuer.GrantJWTBearer) {
		t.Error("the metadata advertises the JWT bearer grant, which no issuer can use")
	}
	r := s.post("/token", url.Values{"grant_type": {issuer.GrantJWTBearer}, "client_id": {issuer.CLIClientID}, "assertion": {"x.y.z"}})
	wantError(t, r, http.StatusBadRequest, "unsupported_grant_type")
	if !strings.Contains(r.str(t, "error_description"), "--trust-assertion-issuer") {
		t.Errorf("the refusal does not name the fix: %s", r.body)
	}
	keys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ecdsa.PublicKey{}}}}
	if _, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:1", AssertionIssuers: []issuer.AssertionIssuer{
		{Issuer: ciIssuer, Keys: keys}, {Issuer: ciIssuer, Keys: keys}}}); err == nil {
		t.Error("New accepted the same assertion issuer twice")
	}
}

func TestParseAssertionKeys(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	pemOf := func(k *ecdsa.PrivateKey) []byte {
		der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	if set, err := issuer.ParseAssertionKeys(pemOf(p256)); err != nil || len(set.Keys) != 1 {
		t.Errorf("P-256 PEM: %v", err)
	}
	if _, err := issuer.ParseAssertionKeys(pemOf(p384)); err == nil {
		t.Error("a P-384 key was accepted")
	}
	if set, err := issuer.ParseAssertionKeys([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"` + base64.RawURLEncoding.EncodeToString(p256.X.FillBytes(make([]byte, 32))) + `","y":"` + base64.RawURLEncoding.EncodeToString(p256.Y.FillBytes(make([]byte, 32))) + `"}]}`)); err != nil || len(set.Keys) != 1 {
		t.Errorf("JWKS: %v", err)
	}
	if _, err := issuer.ParseAssertionKeys([]byte("not a key")); err == nil {
		t.Error("garbage was accepted")
	}
}

// TestJWTBearerIDJAGAudienceResource: an ID-JAG must name this issuer in
// aud (not merely its token endpoint), and its resource claim, when
// present, must include the resource the token is requested for
// (draft-ietf-oauth-identity-assertion-authz-grant §3).
func TestJWTBearerIDJAGAudienceResource(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s := start(t, issuer.Options{Clients: []issuer.Client{rs}, AssertionIssuers: []issuer.AssertionIssuer{
		{Issuer: ciIssuer, Keys: &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey}}}}}})
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("oauth-id-jag+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	jag := func(jti string, aud string, resource any) string {
		extra := map[string]any{"client_id": issuer.CLIClientID}
		if resource != nil {
			extra["resource"] = resource
		}
		j, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: ciIssuer, Subject: "carol", Audience: jwt.Audience{aud}, ID: jti,
			Expiry: jwt.NewNumericDate(epoch.Add(5 * time.Minute))}).Claims(extra).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	grant := func(assertion string, resource string) reply {
		form := url.Values{"grant_type": {issuer.GrantJWTBearer}, "client_id": {issuer.CLIClientID}, "assertion": {assertion}}
		if resource != "" {
			form.Set("resource", resource)
		}
		return s.post("/token", form)
	}
	mcp := s.url + "/mcp"
	wantOK(t, grant(jag("plain", s.url, nil), ""))
	wantOK(t, grant(jag("same", s.url, mcp), mcp))
	wantOK(t, grant(jag("default", s.url, mcp), ""))
	wantOK(t, grant(jag("list", s.url, []string{"https://other.example/api", mcp}), mcp))
	for name, c := range map[string]struct {
		assertion, resource, desc string
	}{
		"token endpoint aud": {jag("tep", s.url+"/token", nil), "", "(aud)"},
		"other resource":     {jag("other", s.url, "https://other.example/api"), mcp, "(resource)"},
		"other default":      {jag("otherdef", s.url, "https://other.example/api"), "", "(resource)"},
		"request elsewhere":  {jag("elsewhere", s.url, mcp), "https://other.example/api", "(resource)"},
	} {
		r := grant(c.assertion, c.resource)
		wantError(t, r, http.StatusBadRequest, "invalid_grant")
		if d := r.str(t, "error_description"); !strings.Contains(d, c.desc) {
			t.Errorf("%s: error_description %q does not name the claim %s", name, d, c.desc)
		}
	}
}

// The subject of a JWT bearer grant is namespaced by the assertion's
// issuer, and that of a client credentials grant by "client:": a
// workload's sub=alice is neither the browser user alice nor another
// issuer's alice, unless the configuration takes an issuer's subjects as
// they are.
func TestGrantSubjectsAreNamespaced(t *testing.T) {
	ci, idp := mustKey(t), mustKey(t)
	const idpIssuer = "https://idp.example"
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs}, AssertionIssuers: []issuer.AssertionIssuer{
		{Issuer: ciIssuer, Keys: &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ci.PublicKey}}}},
		{Issuer: "https://other-ci.example", Keys: &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ci.PublicKey}}}, SubjectPrefix: "other:"},
		{Issuer: idpIssuer, Keys: &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &idp.PublicKey}}}, SubjectAsIs: true}}})
	subject := func(iss string, key *ecdsa.PrivateKey) any {
		tok := wantOK(t, s.post("/token", url.Values{"grant_type": {issuer.GrantJWTBearer}, "client_id": {issuer.CLIClientID},
			"assertion": {assertionFor(t, key, jwt.Claims{Issuer: iss, Subject: "alice", Audience: jwt.Audience{s.url}, ID: iss,
				Expiry: jwt.NewNumericDate(epoch.Add(5 * time.Minute))})}}))
		return s.introspect(tok["access_token"].(string))["sub"]
	}
	browser := s.introspect(s.tokens(nil)["access_token"].(string))["sub"]
	if browser != "alice" {
		t.Fatalf("browser user %v, want alice", browser)
	}
	for iss, want := range map[string]string{ciIssuer: ciIssuer + "#alice", "https://other-ci.example": "other:alice"} {
		if got := subject(iss, ci); got != want {
			t.Errorf("%s's sub=alice became %v, want %s", iss, got, want)
		}
	}
	if got := subject(idpIssuer, idp); got != "alice" {
		t.Errorf("an as-is issuer's sub=alice became %v, want alice", got)
	}

	reg := s.postJSON("/register", `{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}`)
	id := reg.str(t, "client_id")
	tok := wantOK(t, s.post("/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {reg.str(t, "client_secret")}}))
	if got := s.introspect(tok["access_token"].(string))["sub"]; got != "client:"+id {
		t.Errorf("client credentials subject %v, want client:%s", got, id)
	}
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
