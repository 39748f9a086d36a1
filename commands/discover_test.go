package commands

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/wire"
)

func TestDiscoverFlags(t *testing.T) {
	checkFlags(t, []flagCase[DiscoverOptions]{
		{args: []string{"ws://h"}, want: DiscoverOptions{Target: "ws://h"}},
		{args: []string{"--json", "stdio:agentauth serve --stdio"}, want: DiscoverOptions{Target: "stdio:agentauth serve --stdio", JSON: true}},
		{args: nil, wantCode: ExitUsage, wantErr: "discover expects TARGET"},
		{args: []string{"ws://a", "ws://b"}, wantCode: ExitUsage, wantErr: "discover expects TARGET"},
		{args: []string{"ftp://h"}, wantCode: ExitUsage, wantErr: `unsupported target "ftp://h": use ws://HOST:PORT, wss://HOST:PORT, stdio:COMMAND LINE or an MCP server's https:// URL`},
		{args: []string{"ws://h?tkn=secret", "x"}, wantCode: ExitUsage, wantErr: "discover expects TARGET"},
		{args: []string{"host:7777?tkn=secret"}, wantCode: ExitUsage, wantErr: `unsupported target "host:7777?tkn=***"`},
	}, discoverCommand, func(f *Factory, o *DiscoverOptions) bool {
		ok := o.IO == f.IO && o.HTTPClient == f.HTTPClient
		o.IO, o.HTTPClient = nil, nil
		return ok
	})
}

// fakeHost is an agent host on WebSocket whose initialize answers result.
func fakeHost(t *testing.T, result string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := wire.AcceptWebSocket(w, r, 1<<20)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			data, err := conn.Read(r.Context())
			if err != nil {
				return
			}
			m, _ := wire.Decode(data)
			resp := &wire.Message{JSONRPC: wire.Version, ID: m.ID, Result: json.RawMessage(result)}
			b, _ := wire.Encode(resp)
			if conn.Write(r.Context(), b) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name string
		// target builds the target from the fake authorization server (as)
		// and one that does not offer S256 (bad).
		target   func(t *testing.T, as, bad *oauthfake.Server) string
		json     bool
		wantCode int
		// wantOut and wantErr are regexps over stdout and stderr ({AS} and
		// {BAD} are the servers' URLs).
		wantOut, wantErr []string
		check            func(t *testing.T, as *oauthfake.Server, out []byte)
	}{
		{
			name:   "http target",
			target: func(t *testing.T, as, bad *oauthfake.Server) string { return as.Resource() },
			wantOut: []string{`^{AS}/mcp \(Fake MCP\)$`, `^  resource:\s+{AS}/mcp$`, `^  authorization servers:\s+{AS}$`,
				`^  scopes:\s+agent:use$`, `^  challenge scope:\s+mcp:read$`, `^  required:\s+yes$`,
				`^  grant types:\s+authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:device_code$`,
				`^  registration:\s+pre-registered client \(--client-id\), dynamic registration \(RFC 7591\)$`},
		},
		{
			name:   "http target, --json",
			target: func(t *testing.T, as, bad *oauthfake.Server) string { return as.Resource() },
			json:   true,
			check: func(t *testing.T, as *oauthfake.Server, out []byte) {
				var got discoverDoc
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, out)
				}
				want := discoverDoc{Target: as.Resource(), Kind: "http", HTTPStatus: 401,
					MetadataURL: as.URL + "/.well-known/oauth-protected-resource/mcp", Warnings: []string{},
					Requirements: []requirementDoc{{Label: "Fake MCP", Resource: as.Resource(), AuthorizationServers: []string{as.URL},
						ScopesSupported: []string{"agent:use"}, ChallengeScope: "mcp:read", Required: true,
						AuthorizationServer: &authServerDoc{Issuer: as.URL, AuthorizationEndpoint: as.URL + "/authorize",
							TokenEndpoint: as.URL + "/token", DeviceAuthorizationEndpoint: as.URL + "/device",
							RegistrationEndpoint: as.URL + "/register", RevocationEndpoint: as.URL + "/revoke",
							GrantTypes:               []string{"authorization_code", "refresh_token", wire.GrantDeviceCode},
							TokenEndpointAuthMethods: []string{"none", "client_secret_basic", "client_secret_post"},
							CodeChallengeMethods:     []string{"S256"}},
						Registration: []string{"preregistered", "dcr"}}}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("document (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "agent host, design dialect, one server failing its checks",
			target: func(t *testing.T, as, bad *oauthfake.Server) string {
				return fakeHost(t, `{"protocolVersion":1,"serverSeq":0,"snapshots":[],"resourceMetadata":{"resource":"`+as.Resource()+`",
					"authSchemes":[{"scheme":"bearer","id":"dev","label":"Dev issuer","authorizationServers":["`+as.URL+`"],"scopesSupported":["agent:use"],"required":true},
					{"scheme":"bearer","id":"gh","authorizationServers":["`+bad.URL+`"],"required":false}]}}`)
			},
			wantCode: ExitError,
			wantOut: []string{`^dev \(Dev issuer\)$`, `^  resource:\s+{AS}/mcp$`, `^  registration:\s+pre-registered`, `^gh$`, `^  required:\s+no$`,
				`^  error:\s+the authorization server does not advertise PKCE with S256: {BAD} does not list code_challenge_methods_supported$`},
			wantErr: []string{`^agentauth: gh: the authorization server does not advertise PKCE with S256`},
		},
		{
			name: "agent host, published dialect, --json",
			target: func(t *testing.T, as, bad *oauthfake.Server) string {
				return fakeHost(t, `{"protocolVersion":"0.9.0","serverSeq":0,"snapshots":[{"resource":"ahp-root://","state":{"agents":[{"provider":"x",
					"protectedResources":[{"resource":"`+as.Resource()+`","authorization_servers":["`+as.URL+`"],"scheme_id":"dev","required":true}]}]}}]}`)
			},
			json: true,
			check: func(t *testing.T, as *oauthfake.Server, out []byte) {
				var got discoverDoc
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, out)
				}
				if got.Kind != "agent-host" || got.Dialect != "published" || len(got.Requirements) != 1 ||
					got.Requirements[0].SchemeID != "dev" || got.Requirements[0].AuthorizationServer == nil {
					t.Errorf("document = %+v", got)
				}
			},
		},
		{
			name: "http target without any metadata: the 2025-03-26 fallback and default endpoints",
			target: func(t *testing.T, as, bad *oauthfake.Server) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
				t.Cleanup(srv.Close)
				return srv.URL + "/mcp"
			},
			wantErr: []string{`^warning: (http://\S+)/mcp publishes no protected resource metadata \(RFC 9728\); falling back to MCP 2025-03-26 discovery, with http://\S+ as its authorization server$`},
			wantOut: []string{`^  authorization servers:\s+http://127\.0\.0\.1:\d+$`, `^  required:\s+unknown \(no protected resource metadata\)$`,
				`^  metadata:\s+none published; MCP 2025-03-26 defaults guessed: http://\S+/authorize, http://\S+/token, http://\S+/register$`,
				`^  registration:\s+unknown \(login tries the guessed http://\S+/register; else --client-id\)$`},
		},
		{
			name: "metadata for another resource",
			target: func(t *testing.T, as, bad *oauthfake.Server) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					oauthfake.WriteJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{Resource: "https://elsewhere.example/mcp", AuthorizationServers: []string{as.URL}})
				}))
				t.Cleanup(srv.Close)
				return srv.URL + "/mcp"
			},
			wantCode: ExitError,
			wantErr:  []string{`^agentauth: the protected resource metadata is for another resource: \S+ names resource "https://elsewhere.example/mcp"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as, bad := oauthfake.New(t), oauthfake.New(t)
			as.ChallengeScope = "mcp:read"
			bad.Metadata.CodeChallengeMethodsSupported = nil
			tf := newTestFactory(t, "")
			args := []string{"discover"}
			if tt.json {
				args = append(args, "--json")
			}
			code := tf.run(append(args, tt.target(t, as, bad))...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, tf.errOut)
			}
			expand := func(re string) *regexp.Regexp {
				re = strings.ReplaceAll(re, "{AS}", regexp.QuoteMeta(as.URL))
				return regexp.MustCompile("(?m)" + strings.ReplaceAll(re, "{BAD}", regexp.QuoteMeta(bad.URL)))
			}
			for _, re := range tt.wantOut {
				if !expand(re).Match(tf.out.Bytes()) {
					t.Errorf("stdout lacks %s:\n%s", re, tf.out)
				}
			}
			for _, re := range tt.wantErr {
				if !expand(re).Match(tf.errOut.Bytes()) {
					t.Errorf("stderr lacks %s:\n%s", re, tf.errOut)
				}
			}
			if tt.check != nil {
				tt.check(t, as, tf.out.Bytes())
			}
		})
	}
}
