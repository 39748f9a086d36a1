package commands

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// mcpFake is an MCP server over Streamable HTTP for call's tests, answering
// every request with an event stream as the TypeScript SDK does. Its
// protected resource metadata names the oauthFake as its authorization
// server. refuse picks, per request, a 401/403 and its challenge (0: serve).
type mcpFake struct {
	srv    *httptest.Server
	as     *oauthfake.Server
	refuse func(method, token string) (int, map[string]string)

	mu   sync.Mutex
	seen []string // "METHOD TOKEN" per request
}

func newMCPFake(t *testing.T, as *oauthfake.Server) *mcpFake {
	m := &mcpFake{as: as}
	m.refuse = func(_, token string) (int, map[string]string) {
		if token == "" {
			return http.StatusUnauthorized, map[string]string{"scope": "agent:use"}
		}
		return 0, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		oauthfake.WriteJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{Resource: m.resource(), AuthorizationServers: []string{as.URL},
			ScopesSupported: []string{"agent:use", "agent:admin"}})
	})
	mux.HandleFunc("POST /mcp", m.serve)
	m.srv = httptest.NewServer(mux)
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mcpFake) resource() string { return m.srv.URL + "/mcp" }

func (m *mcpFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	msg, derr := wire.Decode(body)
	if derr != nil {
		http.Error(w, "bad message", http.StatusBadRequest)
		return
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	m.mu.Lock()
	m.seen = append(m.seen, msg.Method+" "+token)
	m.mu.Unlock()
	if status, ch := m.refuse(msg.Method, token); status != 0 {
		ch["resource_metadata"] = m.srv.URL + "/.well-known/oauth-protected-resource/mcp"
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(ch))
		oauthfake.WriteJSON(w, status, map[string]string{"error": ch["error"]})
		return
	}
	var result any
	var rpcErr *wire.Error
	switch msg.Method {
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
		return
	case wire.MethodInitialize:
		result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "fake", "title": "Fake MCP", "version": "1"}}
	case "tools/list":
		result = map[string]any{"tools": []map[string]any{{"name": "whoami", "inputSchema": map[string]any{"type": "object"}}}}
	case "tools/call":
		result = map[string]any{"content": []map[string]string{{"type": "text", "text": "alice"}}}
	default:
		rpcErr = wire.Errorf(wire.CodeMethodNotFound, "method %q not found", msg.Method)
	}
	resp, _ := wire.NewResult(msg.ID, result)
	if rpcErr != nil {
		resp = wire.NewErrorResponse(msg.ID, rpcErr)
	}
	b, _ := wire.Encode(resp)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, ": priming\n\nevent: message\ndata: %s\n\n", b)
}

func (m *mcpFake) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

// storeCredential stores a credential for the fake MCP server with a
// valid refresh token at the fake authorization server.
func storeCredential(t *testing.T, tf *testFactory, m *mcpFake, access string, expiry time.Time) {
	t.Helper()
	m.as.Lock()
	m.as.Clients["stored-client"] = ""
	m.as.Refresh = "rt-secret-0"
	m.as.Unlock()
	c := &store.Credential{Key: store.Key{Resource: m.resource(), Issuer: m.as.URL}, AccessToken: access, RefreshToken: "rt-secret-0",
		TokenType: "Bearer", Expiry: expiry, Scopes: []string{"agent:use"}, TokenEndpoint: m.as.URL + "/token",
		Client: store.ClientRegistration{ClientID: "stored-client", AuthMethod: "none", Source: "dcr"}}
	if err := tf.st.Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func TestCallHTTP(t *testing.T) {
	tests := []struct {
		name  string
		args  []string // before TARGET; METHOD and PARAMS come after it
		after []string
		stdin string
		setup func(t *testing.T, tf *testFactory, m *mcpFake)
		// wantCode, wantOut (exact stdout) and wantErr (regexps over stderr).
		wantCode int
		wantOut  string
		wantErr  []string
		// wantSeen are the MCP requests, tokens replaced by T.
		wantSeen []string
		// wantAuthorizations counts the logins.
		wantAuthorizations int
		check              func(t *testing.T, tf *testFactory, m *mcpFake)
	}{
		{
			name: "--login: 401, discovery, login, retry", args: []string{"--login"}, after: []string{"tools/list"},
			wantOut: "{\n  \"tools\": [\n    {\n      \"inputSchema\": {\n        \"type\": \"object\"\n      },\n      \"name\": \"whoami\"\n    }\n  ]\n}\n",
			wantErr: []string{`^initialize needs authorization \(HTTP 401\); logging in to http://127\.0\.0\.1:\d+/mcp\.$`,
				`^✓ Logged in to http://127\.0\.0\.1:\d+/mcp as alice \(agent:use, expires in 59m\)$`},
			wantSeen:           []string{"server/discover ", "server/discover T", "initialize T", "notifications/initialized T", "tools/list T"},
			wantAuthorizations: 1,
			check: func(t *testing.T, tf *testFactory, m *mcpFake) {
				q := m.as.AuthorizeQuery[0]
				if q.Get("scope") != "agent:use" || q.Get("resource") != m.resource() {
					t.Errorf("authorize query %v: want the challenge's scope and the resource", q)
				}
				if c := storedOne(t, tf); c.Resource != m.resource() || c.Issuer != m.as.URL {
					t.Errorf("stored %+v", c.Key)
				}
			},
		},
		{
			name: "no --login: the challenge, exit 4 and the login command", after: []string{"tools/list"},
			wantCode: ExitAuth,
			wantErr: []string{`^initialize: the server answered HTTP 401 Unauthorized$`, `^  scope: agent:use$`,
				`^  resource_metadata: http://127\.0\.0\.1:\d+/\.well-known/oauth-protected-resource/mcp$`,
				`^agentauth: cannot call initialize: the server needs authorization \(HTTP 401 Unauthorized\) \(call --login logs in by itself\)$`,
				`^To log in, run: agentauth login http://127\.0\.0\.1:\d+/mcp$`},
			wantSeen: []string{"server/discover "},
		},
		{
			name: "stored credential, expired: refreshed before use", after: []string{"tools/call", `{"name":"whoami","arguments":{}}`},
			setup: func(t *testing.T, tf *testFactory, m *mcpFake) {
				storeCredential(t, tf, m, "old-token", time.Now().Add(-time.Second))
				m.refuse = func(_, token string) (int, map[string]string) {
					if token == "old-token" || token == "" {
						return http.StatusUnauthorized, map[string]string{"error": "invalid_token"}
					}
					return 0, nil
				}
			},
			wantOut:  "{\n  \"content\": [\n    {\n      \"text\": \"alice\",\n      \"type\": \"text\"\n    }\n  ]\n}\n",
			wantSeen: []string{"server/discover T", "initialize T", "notifications/initialized T", "tools/call T"},
			check: func(t *testing.T, tf *testFactory, m *mcpFake) {
				if n := len(m.as.FormsWith(wire.GrantRefreshToken)); n != 1 {
					t.Errorf("%d refreshes, want 1", n)
				}
				if c := storedOne(t, tf); c.AccessToken == "old-token" || c.RefreshToken == "rt-secret-0" {
					t.Error("the refreshed credential was not stored")
				}
			},
		},
		{
			name: "stored token rejected (invalid_token): one refresh, retry", args: []string{"--json"}, after: []string{"tools/list"},
			setup: func(t *testing.T, tf *testFactory, m *mcpFake) {
				storeCredential(t, tf, m, "revoked-token", time.Now().Add(time.Hour))
				m.refuse = func(_, token string) (int, map[string]string) {
					if token == "revoked-token" || token == "" {
						return http.StatusUnauthorized, map[string]string{"error": "invalid_token"}
					}
					return 0, nil
				}
			},
			wantOut:  `{"tools":[{"inputSchema":{"type":"object"},"name":"whoami"}]}` + "\n",
			wantSeen: []string{"server/discover revoked-token", "server/discover T", "initialize T", "notifications/initialized T", "tools/list T"},
			check: func(t *testing.T, tf *testFactory, m *mcpFake) {
				if n := len(m.as.FormsWith(wire.GrantRefreshToken)); n != 1 {
					t.Errorf("%d refreshes, want 1", n)
				}
			},
		},
		{
			name: "--login, 403 insufficient_scope: one step-up with the union", args: []string{"--login"},
			after: []string{"tools/call", `{"name":"whoami","arguments":{}}`},
			setup: func(t *testing.T, tf *testFactory, m *mcpFake) {
				m.refuse = func(method, token string) (int, map[string]string) {
					switch {
					case token == "":
						return http.StatusUnauthorized, map[string]string{"scope": "agent:use"}
					case method == "tools/call" && m.as.Authorizations() < 2:
						return http.StatusForbidden, map[string]string{"error": "insufficient_scope", "scope": "agent:admin"}
					}
					return 0, nil
				}
			},
			wantOut:            "{\n  \"content\": [\n    {\n      \"text\": \"alice\",\n      \"type\": \"text\"\n    }\n  ]\n}\n",
			wantErr:            []string{`^tools/call needs more scope \(HTTP 403 insufficient_scope\); logging in again for agent:use agent:admin \(authorization 2 of 3\)\.$`},
			wantSeen:           []string{"server/discover ", "server/discover T", "initialize T", "notifications/initialized T", "tools/call T", "tools/call T"},
			wantAuthorizations: 2,
			check: func(t *testing.T, tf *testFactory, m *mcpFake) {
				if got := m.as.AuthorizeQuery[1].Get("scope"); got != "agent:use agent:admin" {
					t.Errorf("step-up asked for %q", got)
				}
				if n := len(m.as.FormsWith(wire.GrantRefreshToken)); n != 0 {
					t.Errorf("%d refreshes: a step-up must not refresh", n)
				}
				if m.as.Registered != 1 {
					t.Errorf("%d registrations: the step-up must reuse the client", m.as.Registered)
				}
			},
		},
		{
			name: "--login, a server that keeps answering 401: one login, exit 4", args: []string{"--login"}, after: []string{"tools/list"},
			setup: func(t *testing.T, tf *testFactory, m *mcpFake) {
				m.refuse = func(string, string) (int, map[string]string) {
					return http.StatusUnauthorized, map[string]string{"error": "invalid_token"}
				}
			},
			wantCode:           ExitAuth,
			wantErr:            []string{`^agentauth: cannot call initialize: the server rejected the token just obtained by logging in \(HTTP 401 Unauthorized invalid_token\); not logging in again$`},
			wantSeen:           []string{"server/discover ", "server/discover T"},
			wantAuthorizations: 1,
		},
		{
			name: "--login, 403 forever: three authorizations, exit 4 naming the scope", args: []string{"--login"}, after: []string{"tools/list"},
			setup: func(t *testing.T, tf *testFactory, m *mcpFake) {
				m.refuse = func(method, token string) (int, map[string]string) {
					switch {
					case token == "":
						return http.StatusUnauthorized, map[string]string{}
					case method == "tools/list":
						return http.StatusForbidden, map[string]string{"error": "insufficient_scope", "scope": "agent:admin"}
					}
					return 0, nil
				}
			},
			wantCode: ExitAuth,
			wantErr: []string{`^  error: insufficient_scope$`,
				`^agentauth: cannot call tools/list: the server still refuses after 3 authorizations \(HTTP 403 Forbidden insufficient_scope\): missing scope "agent:admin"$`},
			wantSeen:           []string{"server/discover ", "server/discover T", "initialize T", "notifications/initialized T", "tools/list T", "tools/list T", "tools/list T"},
			wantAuthorizations: 3,
		},
		{
			name: "a JSON-RPC error exits 1", args: []string{"--token-stdin"}, stdin: "my-token\n", after: []string{"resources/list"},
			wantCode: ExitError,
			wantErr:  []string{`^agentauth: resources/list failed: .*not found`},
			wantSeen: []string{"server/discover T", "initialize T", "notifications/initialized T", "resources/list T"},
		},
		{
			name: "--token-stdin: initialize prints the server's result", args: []string{"--token-stdin", "--json"}, stdin: "my-token\n",
			after:    []string{"initialize"},
			wantOut:  `{"capabilities":{"tools":{}},"protocolVersion":"2025-11-25","serverInfo":{"name":"fake","title":"Fake MCP","version":"1"}}` + "\n",
			wantSeen: []string{"server/discover T", "initialize T", "notifications/initialized T"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthfake.New(t)
			m := newMCPFake(t, as)
			tf := newTestFactory(t, tt.stdin)
			if tt.setup != nil {
				tt.setup(t, tf, m)
			}
			args := append(append(append([]string{"call"}, tt.args...), m.resource()), tt.after...)
			code := tf.run(args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tt.wantCode, tf.errOut)
			}
			if tf.out.String() != tt.wantOut {
				t.Errorf("stdout:\n%s\nwant:\n%s", tf.out, tt.wantOut)
			}
			for _, re := range tt.wantErr {
				if !regexp.MustCompile("(?m)" + re).MatchString(tf.errOut.String()) {
					t.Errorf("stderr lacks %s:\n%s", re, tf.errOut)
				}
			}
			var seen []string
			for _, r := range m.requests() {
				method, tok, _ := strings.Cut(r, " ")
				if tok != "" && tok != "revoked-token" {
					tok = "T"
				}
				seen = append(seen, method+" "+tok)
			}
			if diff := cmp.Diff(tt.wantSeen, seen); diff != "" {
				t.Errorf("MCP requests (-want +got):\n%s", diff)
			}
			if n := as.Authorizations(); n != tt.wantAuthorizations {
				t.Errorf("%d authorizations, want %d", n, tt.wantAuthorizations)
			}
			if tt.check != nil {
				tt.check(t, tf, m)
			}
			assertNoSecrets(t, tf.out.String(), tf.errOut.String())
			for _, tok := range []string{"old-token", "revoked-token", "my-token"} {
				if strings.Contains(tf.out.String()+tf.errOut.String(), tok) {
					t.Errorf("the output shows the token %s", tok)
				}
			}
		})
	}
}

// The agent-host flags do not apply to MCP servers, and --login and its
// flags need each other and an http(s) target.
// --login reads a pre-registered client's secret from stdin and uses it at
// the token endpoint; it is never shown.
func TestCallHTTPPreregisteredClient(t *testing.T) {
	as := oauthfake.New(t)
	as.Clients["app"] = "s3cret"
	as.Metadata.RegistrationEndpoint = ""
	m := newMCPFake(t, as)
	tf := newTestFactory(t, "s3cret\n")
	if code := tf.run("call", "--login", "--client-id", "app", "--client-secret-stdin", m.resource(), "tools/list"); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, tf.errOut)
	}
	if got := as.TokenAuth[0]; !strings.HasPrefix(got, "Basic ") {
		t.Errorf("token request Authorization %q, want client_secret_basic", got)
	}
	if c := storedOne(t, tf); c.Client.ClientID != "app" || c.Client.Source != "preregistered" {
		t.Errorf("stored client %+v", c.Client)
	}
	assertNoSecrets(t, tf.out.String(), tf.errOut.String())
}

// The stored credential of an agent host's scheme is not sent to an MCP
// server; a refresh that is refused without --login is exit 4.
func TestCallHTTPStoredCredentialChoice(t *testing.T) {
	as := oauthfake.New(t)
	m := newMCPFake(t, as)
	tf := newTestFactory(t, "")
	storeCredential(t, tf, m, "expired-token", time.Now().Add(-time.Hour))
	m.as.Lock()
	m.as.Refresh = "another"
	m.as.Unlock()
	if code := tf.run("call", m.resource(), "tools/list"); code != ExitAuth {
		t.Fatalf("exit %d, want 4; stderr:\n%s", code, tf.errOut)
	}
	if !strings.Contains(tf.errOut.String(), "cannot refresh the token") || len(m.requests()) != 0 {
		t.Errorf("stderr:\n%s\nrequests %q", tf.errOut, m.requests())
	}

	// The same credential under a scheme id: not used, the request goes without a token.
	tf = newTestFactory(t, "")
	c := &store.Credential{Key: store.Key{Resource: m.resource(), Issuer: as.URL, SchemeID: "dev"}, AccessToken: "host-token"}
	if err := tf.st.Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if code := tf.run("call", m.resource(), "tools/list"); code != ExitAuth {
		t.Fatalf("exit %d, want 4; stderr:\n%s", code, tf.errOut)
	}
	if got := m.requests(); got[len(got)-1] != "server/discover " {
		t.Errorf("requests %q: the scheme's token was sent", got)
	}
}
