package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/internal/syncbuf"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// testResource is the resource the fixture's agent host declares.
const testResource = "https://agent.example/mcp"

// authFixture is an agent host (the real host package, static tokens) on a
// WebSocket httptest server, and a fake authorization server whose token
// endpoint refreshes (rotating the refresh token) and whose revocation
// endpoint records what it is asked. Knobs are set before a command runs.
type authFixture struct {
	t      *testing.T
	host   *host.Host
	ws     *httptest.Server
	as     *httptest.Server
	target string
	st     store.Store

	mu sync.Mutex
	// next are the access tokens the token endpoint hands out, in order.
	next []string
	// refreshError makes the token endpoint answer this OAuth error.
	refreshError string
	// refreshToken is the one valid refresh token.
	refreshToken string
	refreshForms []url.Values
	// revokeStatus makes the revocation endpoint answer this status.
	revokeStatus int
	revoked      []string // "hint:token"
	revokeAuth   []string // client ids seen
}

// hostConfig declares "dev" (required, static tokens at-1…at-5 for alice,
// short-1 and short-2 living 50 ms) and "docs" (optional, token docs-1).
const hostConfig = `{"resource": "` + testResource + `",
 "schemes": [
  {"id": "dev", "label": "Dev issuer", "authorizationServers": ["https://as.example"],
   "scopesSupported": ["agent:use"],
   "validation": {"type": "static", "tokens": [
     {"token": "at-1", "subject": "alice", "scopes": ["agent:use"]},
     {"token": "at-2", "subject": "alice", "scopes": ["agent:use"]},
     {"token": "at-3", "subject": "alice", "scopes": ["agent:use"]},
     {"token": "short-1", "subject": "alice", "scopes": ["agent:use"], "expiresIn": "50ms"},
     {"token": "short-2", "subject": "alice", "scopes": ["agent:use"], "expiresIn": "50ms"}]}},
  {"id": "docs", "label": "Docs", "authorizationServers": ["https://docs.example"], "required": false,
   "validation": {"type": "static", "tokens": [{"token": "docs-1", "subject": "bob"}]}}]}`

func newAuthFixture(t *testing.T, authScope string) *authFixture {
	t.Helper()
	cfg, err := host.ParseConfig([]byte(hostConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resolve("http://127.0.0.1")
	h, err := host.New(host.Options{Config: cfg, AuthScope: authScope})
	if err != nil {
		t.Fatal(err)
	}
	fx := &authFixture{t: t, host: h, st: store.NewMemory(), refreshToken: "rt-0"}
	fx.ws = httptest.NewServer(h.WebSocketHandler(""))
	fx.target = "ws://" + strings.TrimPrefix(fx.ws.URL, "http://")
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", fx.token)
	mux.HandleFunc("POST /revoke", fx.revoke)
	fx.as = httptest.NewServer(mux)
	t.Cleanup(func() {
		fx.ws.Close()
		fx.as.Close()
		h.Close()
	})
	return fx
}

func (fx *authFixture) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.refreshForms = append(fx.refreshForms, r.PostForm)
	switch {
	case fx.refreshError != "":
		writeTestJSON(w, http.StatusBadRequest, map[string]string{"error": fx.refreshError})
		return
	case r.PostForm.Get("refresh_token") != fx.refreshToken || len(fx.next) == 0:
		writeTestJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	at := fx.next[0]
	fx.next = fx.next[1:]
	fx.refreshToken = fmt.Sprintf("rt-%d", len(fx.refreshForms))
	writeTestJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600,
		"refresh_token": fx.refreshToken, "scope": "agent:use"})
}

func (fx *authFixture) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.revokeAuth = append(fx.revokeAuth, r.PostForm.Get("client_id"))
	if fx.revokeStatus != 0 {
		w.WriteHeader(fx.revokeStatus)
		return
	}
	fx.revoked = append(fx.revoked, r.PostForm.Get("token_type_hint")+":"+r.PostForm.Get("token"))
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// seed stores a credential for scheme "dev" of the fixture's host holding
// access token at, expiring in left (0: unknown), with the current refresh
// token.
func (fx *authFixture) seed(at string, left time.Duration, mutate func(*store.Credential)) *store.Credential {
	fx.t.Helper()
	c := &store.Credential{
		Key:    store.Key{Resource: testResource, Issuer: fx.as.URL, SchemeID: "dev"},
		Target: fx.target,
		// The fake host is not on testResource's origin: the user allowed
		// it explicitly (login --allow-resource).
		AllowedTargets:     []string{"http://" + strings.TrimPrefix(fx.target, "ws://")},
		AccessToken:        at,
		RefreshToken:       fx.refreshToken,
		TokenType:          "Bearer",
		Scopes:             []string{"agent:use"},
		Subject:            "alice",
		Client:             store.ClientRegistration{ClientID: "cli-1", AuthMethod: "none", Source: "dcr"},
		TokenEndpoint:      fx.as.URL + "/token",
		RevocationEndpoint: fx.as.URL + "/revoke",
	}
	if left != 0 {
		c.Expiry = time.Now().Add(left)
	}
	if mutate != nil {
		mutate(c)
	}
	if err := fx.st.Put(context.Background(), c); err != nil {
		fx.t.Fatal(err)
	}
	return c
}

// stored returns the credential stored for dev, or nil.
func (fx *authFixture) stored() *store.Credential {
	c, err := fx.st.Get(context.Background(), store.Key{Resource: testResource, Issuer: fx.as.URL, SchemeID: "dev"})
	if err != nil {
		return nil
	}
	return c
}

// testRun is one command run with test streams.
type testRun struct {
	f        *Factory
	out, err *syncbuf.Buffer
}

func (fx *authFixture) factory(stdin string) *testRun {
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	f := &Factory{
		IO:         &IOStreams{In: strings.NewReader(stdin), Out: out, ErrOut: errOut},
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
		Now:        time.Now,
		OpenStore:  func() (store.Store, error) { return fx.st, nil },
	}
	return &testRun{f: f, out: out, err: errOut}
}

// run runs agentauth with args ({TARGET} replaced by the host's URL).
func (fx *authFixture) run(stdin string, args ...string) (code int, stdout, stderr string) {
	r := fx.factory(stdin)
	code = Run(r.f, fx.args(args))
	return code, r.out.String(), r.err.String()
}

func (fx *authFixture) args(args []string) []string {
	out := []string{"agentauth"}
	for _, a := range args {
		out = append(out, strings.ReplaceAll(a, "{TARGET}", fx.target))
	}
	return out
}

// expand replaces {TARGET} and {AS} in an expected output.
func (fx *authFixture) expand(s string) string {
	return strings.NewReplacer("{TARGET}", fx.target, "{AS}", fx.as.URL).Replace(s)
}

func TestAuthenticateFlags(t *testing.T) {
	checkFlags(t, []flagCase[AuthenticateOptions]{
		{args: []string{"ws://h"}, want: AuthenticateOptions{Target: "ws://h"}},
		{args: []string{"--scheme", "dev", "--token-stdin", "--watch", "--json", "stdio:serve"},
			want: AuthenticateOptions{Target: "stdio:serve", SchemeID: "dev", TokenStdin: true, Watch: true, JSON: true}},
		{args: []string{"https://mcp.example/mcp"}, want: AuthenticateOptions{Target: "https://mcp.example/mcp"}},
		{args: []string{}, wantCode: ExitUsage},
		{args: []string{"ws://a", "ws://b"}, wantCode: ExitUsage},
		{args: []string{"--watch", "http://127.0.0.1/mcp"}, wantCode: ExitUsage},
		{args: []string{"--scheme", "dev", "http://127.0.0.1/mcp"}, wantCode: ExitUsage},
		{args: []string{"--bogus", "ws://h"}, wantCode: ExitUsage},
		{args: []string{"--method", "login", "--timeout", "30s", "stdio:agent --acp"},
			want: AuthenticateOptions{Target: "stdio:agent --acp", MethodID: "login", Timeout: 30 * time.Second}},
		{args: []string{"--timeout", "30s", "stdio:agent"}, want: AuthenticateOptions{Target: "stdio:agent", Timeout: 30 * time.Second}},
		{args: []string{"--timeout", "30s", "http://127.0.0.1:7777/mcp"}, wantCode: ExitUsage, wantErr: "--timeout applies to an ACP agent's sign-in"},
		{args: []string{"--method", "login", "--watch", "stdio:agent"}, wantCode: ExitUsage, wantErr: "--method applies alone"},
	}, authenticateCommand, func(f *Factory, o *AuthenticateOptions) bool {
		ok := o.IO == f.IO && o.Client == f.Client() && o.Now != nil
		o.IO, o.Now, o.Client = nil, nil, nil
		return ok
	})
}

func TestAuthenticate(t *testing.T) {
	tests := []struct {
		name  string
		setup func(fx *authFixture)
		stdin string
		args  []string
		code  int
		// stderr is the whole expected stderr ({TARGET} and {AS} expanded).
		stderr    string
		refreshes int
		// storedToken is the access token stored afterwards.
		storedToken string
	}{{
		name:        "valid stored token",
		setup:       func(fx *authFixture) { fx.seed("at-1", time.Hour, nil) },
		args:        []string{"authenticate", "{TARGET}"},
		stderr:      "✓ dev: accepted as alice (agent:use)\n! docs: not logged in (optional)\n",
		storedToken: "at-1",
	}, {
		name: "expired token is refreshed first",
		setup: func(fx *authFixture) {
			fx.seed("at-1", -time.Second, nil)
			fx.next = []string{"at-2"}
		},
		args:        []string{"authenticate", "--scheme", "dev", "{TARGET}"},
		stderr:      "✓ dev: accepted as alice (agent:use)\n",
		refreshes:   1,
		storedToken: "at-2",
	}, {
		name: "rejected token is refreshed once and sent again",
		setup: func(fx *authFixture) {
			fx.seed("at-unknown", time.Hour, nil)
			fx.next = []string{"at-3"}
		},
		args:        []string{"authenticate", "--scheme", "dev", "{TARGET}"},
		stderr:      "✓ dev: accepted as alice (agent:use)\n",
		refreshes:   1,
		storedToken: "at-3",
	}, {
		name: "rejected token that cannot be refreshed",
		setup: func(fx *authFixture) {
			fx.seed("at-unknown", time.Hour, nil)
			fx.refreshError = "invalid_grant"
		},
		args: []string{"authenticate", "--scheme", "dev", "{TARGET}"},
		code: ExitAuth,
		stderr: "X dev: invalid_token — The access token is not recognised\n" +
			"agentauth: not authenticated to {TARGET} (dev)\nTo log in, run: agentauth login --scheme dev {TARGET}\n",
		refreshes:   1,
		storedToken: "at-unknown",
	}, {
		name: "expired token without a refresh token",
		setup: func(fx *authFixture) {
			fx.seed("at-1", -time.Hour, func(c *store.Credential) { c.RefreshToken = "" })
		},
		args: []string{"authenticate", "--scheme", "dev", "{TARGET}"},
		code: ExitAuth,
		stderr: "X dev: the access token for https://agent.example/mcp (scheme dev) has expired and there is no refresh token\n" +
			"agentauth: not authenticated to {TARGET} (dev)\nTo log in, run: agentauth login --scheme dev {TARGET}\n",
		storedToken: "at-1",
	}, {
		name: "nothing stored",
		args: []string{"authenticate", "{TARGET}"},
		code: ExitAuth,
		stderr: "X dev: not logged in\n! docs: not logged in (optional)\n" +
			"agentauth: not authenticated to {TARGET} (dev)\nTo log in, run: agentauth login --scheme dev {TARGET}\n",
	}, {
		name:   "token from stdin",
		stdin:  "at-2\n",
		args:   []string{"authenticate", "--token-stdin", "{TARGET}"},
		stderr: "✓ dev: accepted\n",
	}, {
		name:   "token from stdin for the optional scheme",
		stdin:  "docs-1",
		args:   []string{"authenticate", "--token-stdin", "--scheme", "docs", "{TARGET}"},
		stderr: "✓ docs: accepted\n",
	}, {
		name:  "garbage from stdin",
		stdin: "garbage",
		args:  []string{"authenticate", "--token-stdin", "{TARGET}"},
		code:  ExitAuth,
		stderr: "X dev: invalid_token — The access token is not recognised\n" +
			"agentauth: not authenticated to {TARGET} (dev)\nTo log in, run: agentauth login --scheme dev {TARGET}\n",
	}, {
		name:   "unknown scheme",
		args:   []string{"authenticate", "--scheme", "nope", "{TARGET}"},
		code:   ExitUsage,
		stderr: "agentauth: the host declares no scheme \"nope\" (declared: dev, docs)\nRun 'agentauth authenticate --help' for usage.\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newAuthFixture(t, host.AuthScopeConnection)
			if tt.setup != nil {
				tt.setup(fx)
			}
			code, stdout, stderr := fx.run(tt.stdin, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if diff := cmp.Diff(fx.expand(tt.stderr), stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing without --json", stdout)
			}
			if len(fx.refreshForms) != tt.refreshes {
				t.Errorf("%d refreshes, want %d", len(fx.refreshForms), tt.refreshes)
			}
			for _, form := range fx.refreshForms {
				if form.Get("resource") != testResource {
					t.Errorf("refresh sent resource %q, want %q (RFC 8707)", form.Get("resource"), testResource)
				}
			}
			got := ""
			if c := fx.stored(); c != nil {
				got = c.AccessToken
			}
			if got != tt.storedToken {
				t.Errorf("stored access token %q, want %q", got, tt.storedToken)
			}
		})
	}
}

func TestAuthenticateJSON(t *testing.T) {
	fx := newAuthFixture(t, host.AuthScopeConnection)
	fx.seed("at-unknown", time.Hour, nil)
	fx.next = []string{"at-2"}
	code, stdout, _ := fx.run("", "authenticate", "--json", "{TARGET}")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Errorf("--json printed %q, want one line", stdout)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	schemes := doc["schemes"].([]any)
	dev := schemes[0].(map[string]any)
	delete(dev, "expiresAt")
	want := map[string]any{
		"target": fx.target, "kind": "agent-host", "dialect": "design", "authenticated": true,
		"schemes": []any{
			map[string]any{"schemeId": "dev", "label": "Dev issuer", "resource": testResource, "required": true, "source": "store",
				"accepted": true, "subject": "alice", "scopes": []any{"agent:use"}, "refreshed": true},
			map[string]any{"schemeId": "docs", "label": "Docs", "resource": testResource + "/docs", "required": false, "source": "store",
				"accepted": false, "refreshed": false, "error": "no_credential", "errorDescription": "no stored credential for " + fx.target},
		},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}
	if strings.Contains(stdout, "at-2") || strings.Contains(stdout, "rt-") {
		t.Error("--json output holds a token")
	}
}

// waitFor polls s until it contains n occurrences of sub.
func waitFor(t *testing.T, s *syncbuf.Buffer, sub string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.String(), sub) < n {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d × %q in:\n%s", n, sub, s.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAuthenticateWatch(t *testing.T) {
	// Host scope, so that another connection signing out pushes "required".
	fx := newAuthFixture(t, host.AuthScopeHost)
	fx.seed("short-1", 0, nil)
	fx.next = []string{"short-2", "at-1"}
	r := fx.factory("")
	done := make(chan int, 1)
	go func() {
		done <- Run(r.f, fx.args([]string{"authenticate", "--watch", "--json", "--scheme", "dev", "{TARGET}"}))
	}()

	// short-1 and short-2 live 50 ms: two expiries, two refreshes.
	waitFor(t, r.err, "re-authenticated", 2)
	// Another connection signs dev out; the refresh token is gone.
	fx.mu.Lock()
	fx.refreshError = "invalid_grant"
	fx.mu.Unlock()
	ctx := context.Background()
	conn, err := wire.DialTarget(ctx, fx.target, wire.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := wire.NewClient(conn)
	defer client.Close()
	if _, err := wire.Initialize(ctx, client, wire.DialectDesign, "other"); err != nil {
		t.Fatal(err)
	}
	if err := wire.Authenticate(ctx, client, wire.DialectDesign, wire.Requirement{SchemeID: "dev"}, ""); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the watch did not end after required; stderr:\n%s", r.err.String())
	}
	if code != ExitAuth {
		t.Errorf("exit code %d, want %d", code, ExitAuth)
	}
	want := fx.expand(`✓ dev: accepted as alice (agent:use)
! dev: expired — The access token expired
✓ dev: re-authenticated as alice (agent:use)
! dev: expired — The access token expired
✓ dev: re-authenticated as alice (agent:use)
X dev: required — No access token was provided
X dev: cannot refresh the token for https://agent.example/mcp (scheme dev): …
agentauth: cannot authenticate dev again with {TARGET}
To log in, run: agentauth login --scheme dev {TARGET}
`)
	got := strings.Split(r.err.String(), "\n")
	if len(got) > 6 && strings.HasPrefix(got[6], "X dev: cannot refresh the token for https://agent.example/mcp (scheme dev): ") {
		got[6] = "X dev: cannot refresh the token for https://agent.example/mcp (scheme dev): …"
	}
	if diff := cmp.Diff(want, strings.Join(got, "\n")); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	var events []string
	for _, l := range strings.Split(strings.TrimSpace(r.out.String()), "\n")[1:] {
		var e watchEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		events = append(events, e.Event+":"+e.State)
	}
	wantEvents := []string{"notification:expired", "reauthenticated:", "notification:expired", "reauthenticated:", "notification:required", "failed:"}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestCallUsesStoredCredential(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(fx *authFixture)
		stdin     string
		args      []string
		code      int
		stdout    string
		stderr    string
		refreshes int
	}{{
		name:   "stored token",
		setup:  func(fx *authFixture) { fx.seed("at-1", time.Hour, nil) },
		args:   []string{"call", "--json", "{TARGET}", "whoami"},
		stdout: `"subject":"alice"`,
	}, {
		name: "rejected stored token is refreshed and sent again",
		setup: func(fx *authFixture) {
			fx.seed("at-unknown", time.Hour, nil)
			fx.next = []string{"at-2"}
		},
		args:      []string{"call", "--json", "{TARGET}", "whoami"},
		stdout:    `"subject":"alice"`,
		refreshes: 1,
	}, {
		name: "unrefreshable stored token",
		setup: func(fx *authFixture) {
			fx.seed("at-1", -time.Minute, func(c *store.Credential) { c.RefreshToken = "" })
		},
		args: []string{"call", "--json", "{TARGET}", "whoami"},
		code: ExitAuth,
		stderr: "X dev: the access token for https://agent.example/mcp (scheme dev) has expired and there is no refresh token\n" +
			"agentauth: not authenticated to {TARGET} (dev)\nTo log in, run: agentauth login --scheme dev {TARGET}\n",
	}, {
		name:   "a token from stdin wins over the store",
		setup:  func(fx *authFixture) { fx.seed("at-unknown", time.Hour, nil) },
		stdin:  "at-3",
		args:   []string{"call", "--json", "--token-stdin", "{TARGET}", "whoami"},
		stdout: `"subject":"alice"`,
	}, {
		name: "nothing stored: the challenge and the login command",
		args: []string{"call", "{TARGET}", "whoami"},
		code: ExitAuth,
		stderr: "dev: invalid_request — No access token was provided (needs scope agent:use)\n" +
			"    get a token from: https://as.example\n    resource: https://agent.example/mcp\n" +
			"agentauth: whoami needs authentication\nTo log in, run: agentauth login --allow-resource https://agent.example/mcp --scheme dev {TARGET}\n",
	}, {
		name:   "a token from stdin the host rejects",
		stdin:  "at-unknown",
		args:   []string{"call", "--token-stdin", "{TARGET}", "whoami"},
		code:   ExitAuth,
		stderr: "agentauth: the host rejected the token\nTo log in, run: agentauth login --allow-resource https://agent.example/mcp --scheme dev {TARGET}\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newAuthFixture(t, host.AuthScopeConnection)
			if tt.setup != nil {
				tt.setup(fx)
			}
			code, stdout, stderr := fx.run(tt.stdin, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout, tt.stdout)
			}
			if !strings.Contains(stderr, fx.expand(tt.stderr)) {
				t.Errorf("stderr %q lacks %q", stderr, fx.expand(tt.stderr))
			}
			if len(fx.refreshForms) != tt.refreshes {
				t.Errorf("%d refreshes, want %d", len(fx.refreshForms), tt.refreshes)
			}
		})
	}
}

func TestCallRenewsAfterInvalidToken(t *testing.T) {
	fx := newAuthFixture(t, host.AuthScopeConnection)
	fx.seed("at-1", time.Hour, nil)
	fx.next = []string{"at-2"}
	r := fx.factory("")
	ctx := context.Background()
	sess, err := r.f.Client().OpenHost(ctx, fx.target, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	refused := func(res client.SchemeResult) { t.Errorf("refused: %+v", res) }
	if err := sess.AuthenticateStoredAll(ctx, refused); err != nil {
		t.Fatal(err)
	}
	expired := wire.NewAuthRequiredError(wire.AuthRequiredData{Challenges: []wire.Challenge{
		{SchemeID: "dev", Resource: testResource, Error: wire.ErrInvalidToken, ErrorDescription: "The access token expired"}}})

	retry, err := sess.Renew(ctx, expired, refused)
	if err != nil || !retry {
		t.Fatalf("renew = %v, %v; want a retry", retry, err)
	}
	if fx.stored().AccessToken != "at-2" {
		t.Errorf("stored %q; want the refreshed at-2", fx.stored().AccessToken)
	}
	var who map[string][]wire.WhoamiScheme
	if err := sess.Client.Call(ctx, wire.MethodWhoami, nil, &who); err != nil || who["schemes"][0].Subject != "alice" {
		t.Errorf("whoami after renew = %v, %v", who, err)
	}

	for _, other := range []error{nil, wire.Errorf(wire.CodeMethodNotFound, "nope"),
		wire.NewAuthRequiredError(wire.AuthRequiredData{Challenges: []wire.Challenge{{SchemeID: "dev", Error: wire.ErrInsufficientScope}}})} {
		if retry, err := sess.Renew(ctx, other, refused); retry || err != nil {
			t.Errorf("renew(%v) = %v, %v; want no retry", other, retry, err)
		}
	}
	if len(fx.refreshForms) != 1 {
		t.Errorf("%d refreshes, want 1", len(fx.refreshForms))
	}
}
