package host

import (
	"strings"
	"testing"
)

func TestUpstreamConfigErrorsNameTheKey(t *testing.T) {
	const schemes = `"schemes": [{"id": "dev", "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s"}]}}]`
	cfg := func(upstream, extra string) string {
		return `{` + schemes + `, "upstreams": [` + upstream + `]` + extra + `}`
	}
	const ep = `"authorizationEndpoint": "https://rally.example/authorize", "tokenEndpoint": "https://rally.example/token"`
	tests := []struct {
		name, config, want string
	}{
		{"unknown key", cfg(`{"id": "r", "clientId": "c", `+ep+`, "secret": "x"}`, ""), "upstreams[0].secret: unknown key"},
		{"missing id", cfg(`{"clientId": "c", `+ep+`}`, ""), "upstreams[0].id: missing"},
		{"bad id", cfg(`{"id": "r/x", "clientId": "c", `+ep+`}`, ""), `upstreams[0].id: "r/x" must be letters`},
		{"duplicate id", cfg(`{"id": "r", "clientId": "c", `+ep+`}, {"id": "r", "clientId": "c", `+ep+`}`, ""), `upstreams[1].id: duplicate upstream id "r"`},
		{"missing client id", cfg(`{"id": "r", `+ep+`}`, ""), "upstreams[0].clientId: missing"},
		{"no endpoints", cfg(`{"id": "r", "clientId": "c"}`, ""), "upstreams[0]: needs issuer"},
		{"one endpoint", cfg(`{"id": "r", "clientId": "c", "issuer": "https://rally.example", "tokenEndpoint": "https://rally.example/t"}`, ""), "upstreams[0]: give both authorizationEndpoint and tokenEndpoint"},
		{"http endpoint", cfg(`{"id": "r", "clientId": "c", "authorizationEndpoint": "http://rally.example/a", "tokenEndpoint": "https://rally.example/t"}`, ""), "upstreams[0].authorizationEndpoint: \"http://rally.example/a\" must use https"},
		{"two secrets", cfg(`{"id": "r", "clientId": "c", `+ep+`, "clientSecret": "x", "clientSecretEnv": "X"}`, ""), "upstreams[0].clientSecret: give one of clientSecret, clientSecretFile and clientSecretEnv"},
		{"post without secret", cfg(`{"id": "r", "clientId": "c", `+ep+`, "tokenEndpointAuthMethod": "client_secret_post"}`, ""), "upstreams[0].tokenEndpointAuthMethod: client_secret_post needs a secret"},
		{"unknown auth method", cfg(`{"id": "r", "clientId": "c", `+ep+`, "tokenEndpointAuthMethod": "private_key_jwt"}`, ""), `upstreams[0].tokenEndpointAuthMethod: "private_key_jwt" is not supported`},
		{"bad pkce", cfg(`{"id": "r", "clientId": "c", `+ep+`, "pkce": "plain"}`, ""), `upstreams[0].pkce: "plain" is not supported`},
		{"public client without pkce", cfg(`{"id": "r", "clientId": "c", `+ep+`, "pkce": "none"}`, ""), "upstreams[0].pkce: none needs a client secret"},
		{"bad scope", cfg(`{"id": "r", "clientId": "c", `+ep+`, "scopes": ["a b"]}`, ""), `upstreams[0].scopes[0]: "a b" is not a valid scope`},
		{"unknown method", cfg(`{"id": "r", "clientId": "c", `+ep+`}`, `, "methodUpstreams": {"dispose": ["r"]}`), "methodUpstreams.dispose: not a gated method"},
		{"unknown upstream", cfg(`{"id": "r", "clientId": "c", `+ep+`}`, `, "methodUpstreams": {"echo": ["github"]}`), `methodUpstreams.echo[0]: no upstream has the id "github"`},
		{"bad lifetime", cfg(`{"id": "r", "clientId": "c", `+ep+`}`, `, "stateLifetime": "soon"`), `stateLifetime: "soon" is not a duration`},
		{"bad token lifetime", cfg(`{"id": "r", "clientId": "c", `+ep+`}`, `, "upstreamTokenLifetime": "-1h"`), `upstreamTokenLifetime: "-1h" must be positive`},
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
	ok := cfg(`{"id": "rally", "label": "Rally", "clientId": "c", `+ep+`, "clientSecretEnv": "RALLY_SECRET", "pkce": "none", "scopes": ["alm:read"]}`,
		`, "methodUpstreams": {"echo": ["rally"]}, "stateLifetime": "1ms"`)
	c, err := ParseConfig([]byte(ok))
	if err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	if u := c.Upstreams[0]; u.UsesPKCE() || u.ClientSecretEnv != "RALLY_SECRET" {
		t.Fatalf("upstream %+v: want no PKCE and a secret", u)
	}
}
