package issuer_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/issuer"
)

// fakeOP is an OpenID Provider of our own, backing up the real one of
// testdata/oidc: discovery, JWKS, and a token endpoint that answers each
// code with an ID token for the user and nonce the test chose.
type fakeOP struct {
	srv  *httptest.Server
	key  *ecdsa.PrivateKey
	mu   sync.Mutex
	code map[string]map[string]any // code → ID token claims
	now  func() time.Time
}

func newFakeOP(t testing.TB, now func() time.Time) *fakeOP {
	op := &fakeOP{code: map[string]map[string]any{}, now: now}
	op.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mux := http.NewServeMux()
	op.srv = httptest.NewServer(mux)
	t.Cleanup(op.srv.Close)
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": op.srv.URL + "/", "authorization_endpoint": op.srv.URL + "/auth",
			"token_endpoint": op.srv.URL + "/token", "jwks_uri": op.srv.URL + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: op.key.Public(), KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		op.mu.Lock()
		claims := op.code[r.PostForm.Get("code")]
		delete(op.code, r.PostForm.Get("code"))
		op.mu.Unlock()
		if id, secret, _ := r.BasicAuth(); claims == nil || id != "serve" || secret != "s3cret" || r.PostForm.Get("code_verifier") == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: op.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		payload, _ := json.Marshal(claims)
		jws, _ := s.Sign(payload)
		idt, _ := jws.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 60, "id_token": idt})
	})
	return op
}

// approve plays the provider's authorization endpoint for redirect (from
// serve's issuer): it returns the callback query for user, with claims
// changed by change.
func (op *fakeOP) approve(t *testing.T, redirect, user string, change func(map[string]any)) url.Values {
	t.Helper()
	u, err := url.Parse(redirect)
	if err != nil || !strings.HasPrefix(redirect, op.srv.URL+"/auth?") {
		t.Fatalf("redirect %q is not to the provider", redirect)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || !strings.Contains(q.Get("scope"), "openid") {
		t.Fatalf("authorization request %v lacks PKCE, nonce or openid", q)
	}
	claims := map[string]any{"iss": op.srv.URL + "/", "sub": user, "aud": "serve", "nonce": q.Get("nonce"),
		"exp": op.now().Add(time.Minute).Unix(), "iat": op.now().Unix(), "email": user + "@example.com", "email_verified": true}
	if change != nil {
		change(claims)
	}
	code := "code-" + user + "-" + q.Get("state")[:8]
	op.mu.Lock()
	op.code[code] = claims
	op.mu.Unlock()
	return url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {op.srv.URL + "/"}}
}

// cookies returns the cookies a reply sets.
func cookies(r reply) []*http.Cookie { return (&http.Response{Header: r.header}).Cookies() }

func TestLoginAtProvider(t *testing.T) {
	clock := time.Now
	op := newFakeOP(t, clock)
	s := start(t, issuer.Options{Login: &issuer.LoginOptions{Issuer: op.srv.URL, ClientID: "serve", ClientSecret: "s3cret",
		AllowEmailDomains: []string{"example.com"}}})
	// The issuer's fake clock is far from the provider's: the ID token's
	// exp and iat are judged by the issuer's clock.
	op.now = s.clock.Now

	// login begins one sign-in; finish completes it in a browser with jar.
	login := func(returnTo string) (reply, []*http.Cookie) {
		r := s.get("/login?return_to=" + url.QueryEscape(returnTo))
		if r.status != http.StatusFound {
			t.Fatalf("GET /login: %d %s", r.status, r.body)
		}
		return r, cookies(r)
	}
	finish := func(q url.Values, jar []*http.Cookie) reply {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/login/callback?"+q.Encode(), nil)
		for _, c := range jar {
			req.AddCookie(c)
		}
		return s.do(req)
	}

	r, jar := login("/device")
	q := op.approve(t, r.header.Get("Location"), "alice", nil)
	// Refused callbacks: another browser (without the login's cookie), and
	// in the owner's browser an iss that is not the provider's, a
	// provider error and a code the provider never issued. None of them
	// spends the owner's pending sign-in or clears its cookie.
	with := func(change func(url.Values)) url.Values {
		c := url.Values{}
		for k, v := range q {
			c[k] = append([]string(nil), v...)
		}
		change(c)
		return c
	}
	for _, refused := range []struct {
		name   string
		q      url.Values
		jar    []*http.Cookie
		status int
		page   string
	}{
		{"another browser", q, nil, http.StatusBadRequest, "another browser"},
		{"another iss", with(func(c url.Values) { c.Set("iss", "https://evil.example/") }), jar, http.StatusBadRequest, "another server"},
		{"a forged error", with(func(c url.Values) { c.Del("code"); c.Set("error", "access_denied") }), jar, http.StatusForbidden, "access_denied"},
		{"a forged code", with(func(c url.Values) { c.Set("code", "forged") }), jar, http.StatusBadGateway, "did not complete"},
	} {
		got := finish(refused.q, refused.jar)
		if got.status != refused.status || !strings.Contains(string(got.body), refused.page) {
			t.Fatalf("callback with %s: %d %s", refused.name, got.status, got.body)
		}
		if len(cookies(got)) != 0 {
			t.Fatalf("callback with %s set or cleared cookies: %v", refused.name, got.header["Set-Cookie"])
		}
	}
	// The owner's real callback still completes.
	done := finish(q, jar)
	if done.status != http.StatusFound || done.header.Get("Location") != "/device" {
		t.Fatalf("callback: %d %q %s", done.status, done.header.Get("Location"), done.body)
	}
	// And then the state is spent.
	if got := finish(q, jar); got.status != http.StatusBadRequest || !strings.Contains(string(got.body), "unknown, expired") {
		t.Fatalf("replayed callback: %d %s", got.status, got.body)
	}
	var session *http.Cookie
	for _, c := range cookies(done) {
		if c.Name == issuer.BrowserSessionCookie {
			session = c
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if session != nil {
		req.AddCookie(session)
	}
	if sub, ok := s.iss.SignedIn(req); !ok || sub != op.srv.URL+"/#alice" {
		t.Fatalf("signed in as %q, %v; want the provider's iss#sub", sub, ok)
	}

	for _, tc := range []struct {
		name   string
		user   string
		change func(map[string]any)
		query  func(url.Values)
		status int
		page   string
	}{
		{"outside the allow-list", "mallory", func(c map[string]any) { c["email"] = "mallory@evil.example" }, nil, http.StatusForbidden, "does not let that account in"},
		{"unverified e-mail", "eve", func(c map[string]any) { c["email_verified"] = false }, nil, http.StatusForbidden, "does not let that account in"},
		{"wrong nonce", "alice", func(c map[string]any) { c["nonce"] = "other" }, nil, http.StatusBadGateway, "did not check out"},
		{"expired ID token", "alice", func(c map[string]any) { c["exp"] = s.clock.Now().Add(-time.Hour).Unix() }, nil, http.StatusBadGateway, "did not check out"},
		{"provider error", "alice", nil, func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") }, http.StatusForbidden, "answered &#39;access_denied&#39;"},
		{"another iss (RFC 9207)", "alice", nil, func(q url.Values) { q.Set("iss", "https://evil.example/") }, http.StatusBadRequest, "another server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, jar := login("/")
			q := op.approve(t, r.header.Get("Location"), tc.user, tc.change)
			if tc.query != nil {
				tc.query(q)
			}
			got := finish(q, jar)
			if got.status != tc.status || !strings.Contains(string(got.body), tc.page) {
				t.Fatalf("%d %s", got.status, got.body)
			}
			for _, c := range cookies(got) {
				if c.Name == issuer.BrowserSessionCookie {
					t.Fatal("a refused login set the session cookie")
				}
			}
		})
	}
}

// signInAt signs a browser in at the issuer through op as user and
// returns its session cookie.
func signInAt(t *testing.T, s *testServer, op *fakeOP, user string) *http.Cookie {
	t.Helper()
	r := s.get("/login")
	q := op.approve(t, r.header.Get("Location"), user, nil)
	req, _ := http.NewRequest(http.MethodGet, s.url+"/login/callback?"+q.Encode(), nil)
	for _, c := range cookies(r) {
		req.AddCookie(c)
	}
	done := s.do(req)
	for _, c := range cookies(done) {
		if c.Name == issuer.BrowserSessionCookie {
			return c
		}
	}
	t.Fatalf("no session after the login: %d %s", done.status, done.body)
	return nil
}

// With a login provider, /authorize sends a browser that is not signed in
// to the provider; the consent page shows the signed-in user (no "Sign in
// as" box), and only that user's browser may answer it.
func TestConsentWithLogin(t *testing.T) {
	op := newFakeOP(t, time.Now)
	s := start(t, issuer.Options{Clients: []issuer.Client{rs}, Login: &issuer.LoginOptions{Issuer: op.srv.URL + "/", ClientID: "serve", ClientSecret: "s3cret"}})
	op.now = s.clock.Now
	a := newAuthz(issuer.CLIClientID, "http://127.0.0.1:5555/callback")
	if r := s.authorize(a); r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), op.srv.URL+"/auth?") {
		t.Fatalf("authorize without a session: %d %q", r.status, r.header.Get("Location"))
	}
	// The development box is gone: its form post signs nobody in.
	if r := s.post("/login", url.Values{"subject": {"mallory"}}); r.status != http.StatusMethodNotAllowed || len(cookies(r)) != 0 {
		t.Fatalf("POST /login with a provider: %d %v", r.status, cookies(r))
	}
	alice, bob := signInAt(t, s, op, "alice"), signInAt(t, s, op, "bob")
	as := func(c *http.Cookie, req *http.Request) reply {
		req.AddCookie(c)
		return s.do(req)
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/authorize?"+a.query.Encode(), nil)
	page := as(alice, req)
	body := wantPage(t, page, http.StatusOK)
	if !strings.Contains(body, "Signed in as <strong>"+op.srv.URL+"/#alice</strong>") || strings.Contains(body, `name="subject"`) || strings.Contains(body, "no password") {
		t.Fatalf("consent page:\n%s", body)
	}
	form := url.Values{"nonce": {pageNonce(t, page)}, "decision": {"approve"}, "subject": {"mallory"}}
	post := func(c *http.Cookie) reply {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/consent", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return as(c, req)
	}
	if r := post(bob); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "another signed-in user") {
		t.Fatalf("bob answers alice's consent page: %d %s", r.status, r.body)
	}
	// bob's attempt leaves the page to alice, whose approval issues a code
	// for her, not for the name in the form.
	q := s.callback(post(alice), a)
	tok := wantOK(t, s.exchange(a, q.Get("code")))
	claims := s.introspect(tok["access_token"].(string))
	if claims["sub"] != op.srv.URL+"/#alice" {
		t.Fatalf("token subject %v, want alice's iss#sub", claims["sub"])
	}
}

// Logins under way at the provider are bounded like consent pages: past
// MaxPendingConsents the one that expires first is evicted.
func TestPendingLoginsAreBounded(t *testing.T) {
	op := newFakeOP(t, time.Now)
	s := start(t, issuer.Options{Login: &issuer.LoginOptions{Issuer: op.srv.URL, ClientID: "serve", ClientSecret: "s3cret"}})
	op.now = s.clock.Now
	begin := func() (url.Values, []*http.Cookie) {
		r := s.get("/login")
		return op.approve(t, r.header.Get("Location"), "alice", nil), cookies(r)
	}
	finish := func(q url.Values, jar []*http.Cookie) reply {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/login/callback?"+q.Encode(), nil)
		for _, c := range jar {
			req.AddCookie(c)
		}
		return s.do(req)
	}
	firstQ, firstJar := begin()
	var lastQ url.Values
	var lastJar []*http.Cookie
	for range issuer.MaxPendingConsents {
		s.advance(time.Millisecond)
		lastQ, lastJar = begin()
	}
	if r := finish(firstQ, firstJar); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "unknown, expired") {
		t.Fatalf("the evicted login: %d %s", r.status, r.body)
	}
	if r := finish(lastQ, lastJar); r.status != http.StatusOK || !strings.Contains(string(r.body), "You are signed in as") {
		t.Fatalf("the newest login: %d %s", r.status, r.body)
	}
}
