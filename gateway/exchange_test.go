package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/flows"
)

// exchangeAS is a loopback authorization server with an RFC 8693 token
// endpoint: serve-gw (secret gw-s3cret, client_secret_basic) exchanges
// the access tokens in subjects for tokens of the resource it names.
// refuse makes it answer that error code; gate, when set, holds each
// exchange until closed.
type exchangeAS struct {
	srv *httptest.Server

	mu        sync.Mutex
	subjects  map[string]string // access token → subject
	refuse    string
	expiresIn int
	gate      chan struct{}
	arrived   chan struct{}
	forms     []url.Values
}

func newExchangeAS(t *testing.T) *exchangeAS {
	as := &exchangeAS{expiresIn: 300, subjects: map[string]string{
		"tok-alice-at-0123456789": "alice", "tok-bob-at-000123456789": "bob"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": as.srv.URL, "token_endpoint": as.srv.URL + "/token",
			"authorization_endpoint": as.srv.URL + "/authorize", "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported": []string{flows.GrantTokenExchange}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		as.mu.Lock()
		as.forms = append(as.forms, r.PostForm)
		n, refuse, gate, arrived, exp := len(as.forms), as.refuse, as.gate, as.arrived, as.expiresIn
		sub, known := as.subjects[r.PostForm.Get("subject_token")]
		as.mu.Unlock()
		if gate != nil {
			arrived <- struct{}{}
			<-gate
		}
		fail := func(status int, code string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			// A careless server quoting the subject token in its description.
			fmt.Fprintf(w, `{"error":%q,"error_description":"the AS says %s to %s"}`, code, code, r.PostForm.Get("subject_token"))
		}
		id, secret, ok := r.BasicAuth()
		f := r.PostForm
		switch {
		case !ok || id != "serve-gw" || secret != "gw-s3cret":
			fail(http.StatusUnauthorized, "invalid_client")
		case refuse != "":
			fail(http.StatusBadRequest, refuse)
		case f.Get("grant_type") != flows.GrantTokenExchange || f.Get("subject_token_type") != flows.TokenTypeAccessToken ||
			f.Get("requested_token_type") != flows.TokenTypeAccessToken || f.Get("resource") == "":
			fail(http.StatusBadRequest, "invalid_request")
		case !known:
			fail(http.StatusBadRequest, "invalid_grant")
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("xt-%d-%s-for-backend", n, sub),
				"issued_token_type": flows.TokenTypeAccessToken, "token_type": "Bearer", "expires_in": exp, "scope": f.Get("scope")})
		}
	})
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

func (as *exchangeAS) exchanges() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.forms)
}

// issuedCaller is a caller whose token the AS at iss issued, expiring at exp.
type issuedCaller struct {
	testCaller
	iss string
	exp time.Time
}

func (c issuedCaller) Issuer() string    { return c.iss }
func (c issuedCaller) Expiry() time.Time { return c.exp }

func exchangeBackend(url string, as *exchangeAS) Backend {
	return Backend{Name: "rally", URL: url, Identity: IdentityExchange,
		TokenExchange: &TokenExchange{Issuer: as.srv.URL, ClientID: "serve-gw", ClientSecret: "gw-s3cret"}}
}

// exchangeFront mounts b behind a fake token check whose callers' tokens
// are the AS's (and one of another issuer).
func exchangeFront(t *testing.T, b Backend, iss string) (*httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	g, err := New(Options{Backends: []Backend{b}, Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	m := g.Mounts()[0]
	m.SetResourceMetadata("http://serve.test/.well-known/oauth-protected-resource/mcp")
	callers := map[string]issuedCaller{
		"tok-alice-at-0123456789": {testCaller{sub: "alice", client: "cli", scopes: []string{"rally:read"}}, iss, time.Now().Add(time.Hour)},
		"tok-bob-at-000123456789": {testCaller{sub: "bob", client: "cli", scopes: []string{"rally:read", "rally:write"}}, iss + "/", time.Now().Add(time.Hour)},
		"tok-eve-other-issuer-01": {testCaller{sub: "eve", client: "cli", scopes: []string{"rally:read"}}, "http://other.example", time.Now().Add(time.Hour)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := callers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		m.Serve(w, r, c)
	}))
	t.Cleanup(srv.Close)
	return srv, logs
}

// TestExchangeIdentity: through the MCP Go SDK, every request of a
// caller reaches the backend with the token the AS issued for the
// backend (resource = its URL, scope = the caller's, serve
// authenticated with client_secret_basic, token endpoint discovered from
// RFC 8414 metadata), never the caller's; one exchange serves the whole
// session (cached); another caller gets its own token.
func TestExchangeIdentity(t *testing.T) {
	be, log := httpBackend(t)
	as := newExchangeAS(t)
	srv, logs := exchangeFront(t, exchangeBackend(be.URL, as), as.srv.URL)

	cs := connect(t, srv.URL, "tok-alice-at-0123456789", nil)
	for i := range 3 {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint("hi ", i)}})
		if err != nil || resultText(t, r) != fmt.Sprint("hi ", i) {
			t.Fatalf("echo: %v %v", r, err)
		}
	}
	if n := as.exchanges(); n != 1 {
		t.Errorf("%d exchanges for one caller's session, want 1 (cached)", n)
	}
	f := as.forms[0]
	if f.Get("subject_token") != "tok-alice-at-0123456789" || f.Get("resource") != be.URL || f.Get("scope") != "rally:read" || f.Get("audience") != "" {
		t.Errorf("exchange request %v", f)
	}
	bob := connect(t, srv.URL, "tok-bob-at-000123456789", nil)
	if _, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "bob"}}); err != nil {
		t.Fatal(err)
	}
	if n := as.exchanges(); n != 2 {
		t.Errorf("%d exchanges after bob's call, want 2", n)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	seen := map[string]int{}
	for _, h := range log.headers {
		seen[h.Get("Authorization")]++
		for k, v := range h {
			if strings.Contains(strings.Join(v, " "), "-at-0") {
				t.Errorf("the backend got a caller's token in %s", k)
			}
		}
	}
	if seen["Bearer xt-1-alice-for-backend"] < 4 || seen["Bearer xt-2-bob-for-backend"] < 2 || len(seen) != 2 {
		t.Errorf("the backend's Authorization headers: %v", seen)
	}
	if s := logs.String(); strings.Contains(s, "xt-1") || strings.Contains(s, "-at-0") || strings.Contains(s, "gw-s3cret") {
		t.Errorf("a token or secret in the log:\n%s", s)
	}
}

// TestExchangeSingleFlight: concurrent first calls with one caller token
// make one exchange; a token kept is reused until shortly before it
// expires, and never past the caller token's expiry.
func TestExchangeSingleFlight(t *testing.T) {
	as := newExchangeAS(t)
	x, err := newExchanger(exchangeBackend("http://backend.test/mcp", as), "backends[0]")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	x.now = func() time.Time { return now }
	alice := issuedCaller{testCaller{sub: "alice", client: "cli"}, as.srv.URL, now.Add(time.Hour)}

	as.gate, as.arrived = make(chan struct{}), make(chan struct{}, 16)
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			tok, err := x.token(context.Background(), alice, "tok-alice-at-0123456789")
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		})
	}
	<-as.arrived // the first exchange is at the AS
	close(as.gate)
	wg.Wait()
	if n := as.exchanges(); n != 1 {
		t.Errorf("%d exchanges for 16 concurrent calls, want 1", n)
	}
	if slices.ContainsFunc(got, func(s string) bool { return s != "xt-1-alice-for-backend" }) {
		t.Errorf("tokens %v", got)
	}

	// expires_in 300: kept until 30 s before.
	now = now.Add(269 * time.Second)
	if tok, _ := x.token(context.Background(), alice, "tok-alice-at-0123456789"); tok != "xt-1-alice-for-backend" || as.exchanges() != 1 {
		t.Errorf("at 269 s: %s after %d exchanges, want the kept token", tok, as.exchanges())
	}
	now = now.Add(2 * time.Second) // flows dates expires_in by the real clock, a little after now
	if tok, _ := x.token(context.Background(), alice, "tok-alice-at-0123456789"); tok != "xt-2-alice-for-backend" {
		t.Errorf("at 271 s: %s, want a new exchange", tok)
	}

	// The caller's token expires in 10 s: the kept token goes with it.
	short := alice
	short.exp = now.Add(10 * time.Second)
	x.token(context.Background(), short, "tok-bob-at-000123456789")
	now = now.Add(10 * time.Second)
	x.token(context.Background(), short, "tok-bob-at-000123456789")
	if n := as.exchanges(); n != 4 {
		t.Errorf("%d exchanges, want 4: a token kept past its caller token's expiry", n)
	}

	// A token without expires_in is not kept.
	as.expiresIn = 0
	as.mu.Lock()
	as.subjects["tok-carol-at-0123456789"] = "carol"
	as.mu.Unlock()
	x.token(context.Background(), alice, "tok-carol-at-0123456789")
	x.token(context.Background(), alice, "tok-carol-at-0123456789")
	if n := as.exchanges(); n != 6 {
		t.Errorf("%d exchanges, want 6: a token without expiry was kept", n)
	}
}

// TestExchangeBound: at MaxExchangedTokens a new token is used and not
// kept (nothing unexpired is evicted); expired entries make room.
func TestExchangeBound(t *testing.T) {
	as := newExchangeAS(t)
	x, err := newExchanger(exchangeBackend("http://backend.test/mcp", as), "backends[0]")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	x.now = func() time.Time { return now }
	for i := range MaxExchangedTokens {
		x.entries[[32]byte{byte(i), byte(i >> 8), 1}] = exchanged{token: "old", until: now.Add(time.Minute)}
	}
	alice := issuedCaller{testCaller{sub: "alice", client: "cli"}, as.srv.URL, now.Add(time.Hour)}
	x.token(context.Background(), alice, "tok-alice-at-0123456789")
	x.token(context.Background(), alice, "tok-alice-at-0123456789")
	if n, l := as.exchanges(), len(x.entries); n != 2 || l != MaxExchangedTokens {
		t.Errorf("at the bound: %d exchanges, %d entries; want 2 and %d", n, l, MaxExchangedTokens)
	}
	now = now.Add(2 * time.Minute)
	x.token(context.Background(), alice, "tok-alice-at-0123456789")
	x.token(context.Background(), alice, "tok-alice-at-0123456789")
	if n, l := as.exchanges(), len(x.entries); n != 3 || l != 1 {
		t.Errorf("after expiry: %d exchanges, %d entries; want 3 and 1", n, l)
	}
}

// TestExchangeRefused: the AS refusing the exchange, being unreachable,
// or the caller's token being another issuer's gives the caller an HTTP
// 502 JSON-RPC error naming the backend and the AS (and the AS's error
// code), the backend sees nothing, the audit record says why, and no
// token appears in the answer or the log.
func TestExchangeRefused(t *testing.T) {
	be, log := httpBackend(t)
	as := newExchangeAS(t)
	b := exchangeBackend(be.URL, as)
	srv, logs := exchangeFront(t, b, as.srv.URL)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	as.refuse = "invalid_grant"
	status, _, body := post(t, srv.URL, "tok-alice-at-0123456789", "", init)
	if status != http.StatusBadGateway || !strings.Contains(body, "backend rally: the authorization server "+as.srv.URL+" refused the token exchange for it: invalid_grant") {
		t.Errorf("refused: %d %s", status, body)
	}
	if !strings.Contains(logs.String(), `"decision":"denied","redactions":0,"latency_ms"`) || !strings.Contains(logs.String(), `"reason":"token exchange refused: invalid_grant"`) {
		t.Errorf("audit of the refusal:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "the AS says invalid_grant to [redacted]") {
		t.Errorf("the AS's description, its quote of the caller's token redacted, is not logged:\n%s", logs)
	}

	// Another issuer's token never goes to the AS.
	as.refuse = ""
	n := as.exchanges()
	status, _, body = post(t, srv.URL, "tok-eve-other-issuer-01", "", init)
	if status != http.StatusBadGateway || !strings.Contains(body, `the caller's token was issued by \"http://other.example\"`) || as.exchanges() != n {
		t.Errorf("other issuer: %d %s (%d exchanges, were %d)", status, body, as.exchanges(), n)
	}

	// The AS is down.
	as.srv.Close()
	status, _, body = post(t, srv.URL, "tok-alice-at-0123456789", "", init)
	if status != http.StatusBadGateway || !strings.Contains(body, "backend rally: cannot get a token for it from the authorization server "+as.srv.URL) {
		t.Errorf("AS down: %d %s", status, body)
	}
	if !strings.Contains(logs.String(), `"decision":"error"`) || !strings.Contains(logs.String(), `"reason":"token exchange failed"`) {
		t.Errorf("audit of the failure:\n%s", logs)
	}

	log.mu.Lock()
	if len(log.headers) != 0 {
		t.Errorf("the backend got %d requests", len(log.headers))
	}
	log.mu.Unlock()
	if s := logs.String() + body; strings.Contains(s, "-at-0") || strings.Contains(s, "gw-s3cret") {
		t.Errorf("a token or secret in the log or answer:\n%s", s)
	}
}
