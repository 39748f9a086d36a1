package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/resource"
)

// An introspected token is accepted only when it was issued for this
// resource: serve's own issuer's /introspect (on loopback, a token from a
// real client credentials grant) names the audience, and a token issued
// for this resource passes where a resource server of another identifier
// refuses it; an authorization server that answers without aud (ORY Hydra
// does for a token requested without an audience) gets its tokens refused
// with invalid_token, and the refusal's operator hint names
// allowMissingAudience, which accepts them when the scheme sets it.
func TestIntrospectionRequiresAudience(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	iss, err := issuer.New(issuer.Options{Issuer: origin, Clients: []issuer.Client{
		{ID: "rs", Secret: "rs s3cret"},
		{ID: "worker", Secret: "w s3cret", GrantTypes: []string{"client_credentials"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range iss.Paths() {
		mux.Handle(p, iss.Handler())
	}
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)

	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"agent:use"}}
	req, _ := http.NewRequest(http.MethodPost, origin+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("worker", url.QueryEscape("w s3cret"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if tok.AccessToken == "" {
		t.Fatalf("no token from the issuer: HTTP %d", resp.StatusCode)
	}

	scheme := func(res, endpoint, id, secret string, allow bool) resource.Scheme {
		return resource.Scheme{ID: "corp", Resource: res, AuthorizationServers: []string{origin},
			Validation: resource.Validation{Type: resource.ValidationIntrospection, IntrospectionEndpoint: endpoint,
				ClientID: id, ClientSecret: secret, AllowMissingAudience: allow}}
	}
	// serve's own issuer names the audience: its default resource.
	own := resource.NewValidator(scheme(origin+"/mcp", origin+"/introspect", "rs", "rs s3cret", false), http.DefaultClient, time.Now)
	if g, err := own.Validate(ctx, tok.AccessToken); err != nil || g.ClientID != "worker" {
		t.Fatalf("the issuer's token for this resource: %+v, %v", g, err)
	}
	other := resource.NewValidator(scheme("http://other.example/mcp", origin+"/introspect", "rs", "rs s3cret", false), http.DefaultClient, time.Now)
	var te *resource.TokenError
	if _, err := other.Validate(ctx, tok.AccessToken); !errors.As(err, &te) || te.Kind != resource.TokenInvalid || !strings.Contains(te.Description, "audience does not include") {
		t.Fatalf("another resource server accepted the token: %v", err)
	}

	// An authorization server answering without aud.
	ti := tokenfake.NewIntrospector(t)
	ti.Set("no-aud", map[string]any{"active": true, "sub": "alice", "scope": "agent:use", "exp": time.Now().Add(time.Hour).Unix()})
	strict := resource.NewValidator(scheme(origin+"/mcp", ti.URL+"/introspect", "rs:1", "s cret", false), ti.Client(), time.Now)
	_, err = strict.Validate(ctx, "no-aud")
	if !errors.As(err, &te) || te.Kind != resource.TokenInvalid || !strings.Contains(te.Description, "not issued for "+origin+"/mcp") {
		t.Fatalf("a token without aud: %v; want it refused as invalid", err)
	}
	if strings.Contains(te.Description, "allowMissingAudience") || !strings.Contains(te.Hint, "allowMissingAudience") {
		t.Errorf("the option belongs in the operator's hint, not the client's description: %+v", te)
	}
	lax := resource.NewValidator(scheme(origin+"/mcp", ti.URL+"/introspect", "rs:1", "s cret", true), ti.Client(), time.Now)
	if g, err := lax.Validate(ctx, "no-aud"); err != nil || g.Subject != "alice" {
		t.Errorf("allowMissingAudience: %+v, %v; want the token accepted", g, err)
	}
}
