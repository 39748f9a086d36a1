package host

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfigErrorsNameTheKey(t *testing.T) {
	const tok = `{"token": "t", "subject": "s"}`
	static := func(extra string) string {
		return `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `]` + extra + `}}]}`
	}
	tests := []struct {
		name, config, want string
	}{
		{"not json", `{"schemes": [`, "not valid JSON"},
		{"not an object", `[]`, "the document: must be an object"},
		{"unknown top-level key", `{"resources": "x", "schemes": []}`, "resources: unknown key"},
		{"unknown nested key", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokns": []}}]}`, "schemes[0].validation.tokns: unknown key"},
		{"unknown token key", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s", "expires": "1h"}]}}]}`, "schemes[0].validation.tokens[0].expires: unknown key"},
		{"wrong type", `{"schemes": [{"id": 7}]}`, "schemes[0].id: must be a string"},
		{"wrong required type", `{"schemes": [{"id": "a", "required": "yes"}]}`, "schemes[0].required: must be a boolean"},
		{"schemes not array", `{"schemes": {}}`, "schemes: must be an array"},
		{"no schemes", `{"schemes": []}`, "schemes: at least one scheme is needed"},
		{"schemes missing", `{}`, "schemes: at least one scheme is needed"},
		{"missing id", `{"schemes": [{"validation": {"type": "static", "tokens": [` + tok + `]}}]}`, "schemes[0].id: missing"},
		{"duplicate id", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `]}}, {"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `]}}]}`, `schemes[1].id: duplicate scheme id "dev"`},
		{"bad duration", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s", "expiresIn": "2x"}]}}]}`, `schemes[0].validation.tokens[0].expiresIn: "2x" is not a duration`},
		{"duration not string", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s", "expiresIn": 5}]}}]}`, `schemes[0].validation.tokens[0].expiresIn: must be a duration string`},
		{"negative duration", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s", "expiresIn": "-1s"}]}}]}`, `expiresIn: "-1s" must be positive`},
		{"no validation type", `{"schemes": [{"id": "dev", "validation": {}}]}`, "schemes[0].validation.type: missing"},
		{"unknown validation type", `{"schemes": [{"id": "dev", "validation": {"type": "magic"}}]}`, `schemes[0].validation.type: unknown validation type "magic"`},
		{"key of another type", static(`, "jwksUri": "https://as.example/jwks"`), `schemes[0].validation.jwksUri: only applies to type "jwt"`},
		{"no static tokens", `{"schemes": [{"id": "dev", "validation": {"type": "static"}}]}`, "schemes[0].validation.tokens: at least one token is needed"},
		{"token without subject", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t"}]}}]}`, "schemes[0].validation.tokens[0].subject: missing"},
		{"duplicate token", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `,` + tok + `]}}]}`, "schemes[0].validation.tokens[1].token: the same token appears twice"},
		{"jwt without issuer", `{"schemes": [{"id": "dev", "validation": {"type": "jwt"}}]}`, "schemes[0].authorizationServers: a jwt scheme needs at least one"},
		{"jwt bad algorithm", `{"schemes": [{"id": "dev", "authorizationServers": ["https://as.example"], "validation": {"type": "jwt", "algorithms": ["ES256", "HS256"]}}]}`, `schemes[0].validation.algorithms[1]: "HS256" is not allowed`},
		{"jwt alg none", `{"schemes": [{"id": "dev", "authorizationServers": ["https://as.example"], "validation": {"type": "jwt", "algorithms": ["none"]}}]}`, `schemes[0].validation.algorithms[0]: "none" is not allowed`},
		{"plain http issuer", `{"schemes": [{"id": "dev", "authorizationServers": ["http://as.example"], "validation": {"type": "jwt"}}]}`, "schemes[0].authorizationServers[0]: \"http://as.example\" must use https"},
		{"introspection without credentials", `{"schemes": [{"id": "dev", "authorizationServers": ["https://as.example"], "validation": {"type": "introspection", "clientId": "rs"}}]}`, "schemes[0].validation.clientSecret: missing"},
		{"allowMissingAudience outside introspection", `{"schemes": [{"id": "dev", "authorizationServers": ["https://as.example"], "validation": {"type": "jwt", "allowMissingAudience": true}}]}`, `schemes[0].validation.allowMissingAudience: only applies to type "introspection"`},
		{"introspection bad ttl", `{"schemes": [{"id": "dev", "authorizationServers": ["https://as.example"], "validation": {"type": "introspection", "clientId": "rs", "clientSecret": "x", "cacheTTL": "soon"}}]}`, `schemes[0].validation.cacheTTL: "soon" is not a duration`},
		{"bad resource", `{"resource": "mcp", "schemes": []}`, `resource: "mcp" must be an absolute http or https URL`},
		{"unknown method scope", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `]}}], "methodScopes": {"dispose": ["a"]}}`, "methodScopes.dispose: not a gated method"},
		{"bad scope", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `]}}], "methodScopes": {"echo": ["a b"]}}`, `methodScopes.echo[0]: "a b" is not a valid scope`},
		{"method scopes wrong type", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [` + tok + `]}}], "methodScopes": {"echo": "a"}}`, "methodScopes.echo: must be an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.config))
			if err == nil {
				t.Fatalf("ParseConfig accepted %s", tt.config)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseConfigDefaultsAndResolve(t *testing.T) {
	c, err := ParseConfig([]byte(`{
	  "schemes": [
	    {"id": "dev", "label": "Dev", "authorizationServers": ["embedded", "https://as.example"], "scopesSupported": ["agent:use"],
	     "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s", "expiresIn": "2s"}]}},
	    {"id": "ext", "required": false, "authorizationServers": ["https://as.example"],
	     "validation": {"type": "introspection", "clientId": "rs", "clientSecret": "x"}}],
	  "methodScopes": {"disposeSession": ["agent:admin"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Schemes[0].IsRequired() || c.Schemes[1].IsRequired() {
		t.Errorf("required = %v, %v; want true (default), false", c.Schemes[0].IsRequired(), c.Schemes[1].IsRequired())
	}
	if got := time.Duration(c.Schemes[0].Validation.Tokens[0].ExpiresIn); got != 2*time.Second {
		t.Errorf("expiresIn = %v, want 2s", got)
	}
	if err := c.checkResolved(); err == nil {
		t.Error("an unresolved config passed checkResolved")
	}
	c.Resolve("http://127.0.0.1:4242/")
	if c.Resource != "http://127.0.0.1:4242/mcp" {
		t.Errorf("resource = %q", c.Resource)
	}
	if got := c.Schemes[0].AuthorizationServers; got[0] != "http://127.0.0.1:4242" || got[1] != "https://as.example" {
		t.Errorf("authorizationServers = %q", got)
	}
	if err := c.checkResolved(); err != nil {
		t.Error(err)
	}
	// An explicit resource is kept.
	c2, err := ParseConfig([]byte(`{"resource": "https://agent.example/mcp", "schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s"}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c2.Resolve("http://127.0.0.1:1")
	if c2.Resource != "https://agent.example/mcp" {
		t.Errorf("resource = %q", c2.Resource)
	}
}
