package gateway

import (
	"strings"
	"testing"

	"github.com/agentauth/agentauth/flows"
)

// TestExchangeConfig: the config's refusals.
func TestExchangeConfig(t *testing.T) {
	x := func(mod func(*TokenExchange)) *TokenExchange {
		v := &TokenExchange{Issuer: "https://as.example", ClientID: "gw", ClientSecret: "s"}
		if mod != nil {
			mod(v)
		}
		return v
	}
	for _, tc := range []struct {
		b    Backend
		want string
	}{
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange}, "backends[0].tokenExchange: identity \"exchange\" needs it"},
		{Backend{Name: "a", URL: "http://b.test/mcp", TokenExchange: x(nil)}, "backends[0].tokenExchange: set identity \"exchange\" to use it"},
		{Backend{Name: "a", Command: "server", Identity: IdentityExchange, TokenExchange: x(nil)}, "a stdio command gets none"},
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange, TokenExchange: x(func(v *TokenExchange) { v.Issuer = "http://as.example" })}, "tokenExchange.issuer: want an https URL"},
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange, TokenExchange: x(func(v *TokenExchange) { v.ClientSecret = "" })}, "serve authenticates as a confidential client"},
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange, TokenExchange: x(func(v *TokenExchange) { v.ClientSecretEnv = "X" })}, "give one of clientSecret"},
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange, TokenExchange: x(func(v *TokenExchange) { v.AuthMethod = "tls_client_auth" })}, "tokenExchange.authMethod: want"},
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange, TokenExchange: x(func(v *TokenExchange) { v.AuthMethod = flows.AuthMethodPrivateKeyJWT })}, "tokenExchange.privateKeyFile"},
		{Backend{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange, TokenExchange: x(func(v *TokenExchange) { v.Scopes = []string{"a b"} })}, "tokenExchange.scopes[0]"},
	} {
		err := tc.b.Check("backends[0]")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.b, err, tc.want)
		}
	}
	t.Setenv("GW_SECRET", "")
	_, err := New(Options{Backends: []Backend{{Name: "a", URL: "http://b.test/mcp", Identity: IdentityExchange,
		TokenExchange: &TokenExchange{Issuer: "https://as.example", ClientID: "gw", ClientSecretEnv: "GW_SECRET"}}}})
	if err == nil || !strings.Contains(err.Error(), "the client secret is empty (is GW_SECRET set?)") {
		t.Errorf("empty secret: %v", err)
	}
}
