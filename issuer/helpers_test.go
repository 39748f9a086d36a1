package issuer_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/issuer"
)

// epoch is the fake clock's start; tests move time with advance, never sleep.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// cliRedirect is agentauth-cli's loopback redirect on an ephemeral port.
const cliRedirect = "http://127.0.0.1:49152/callback"

// appOrigins are the https origins of the test clients' redirect URIs,
// which Options.AllowedRedirectOrigins must name.
var appOrigins = []string{"https://app.example", "https://app.example:8443", "https://post.example"}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testServer is an Issuer mounted, path by path, on a shared mux behind a
// real loopback HTTP server.
type testServer struct {
	t      *testing.T
	iss    *issuer.Issuer
	url    string
	clock  *fakeClock
	client *http.Client

	mu      sync.Mutex
	revoked []string
}

func start(t *testing.T, opts issuer.Options) *testServer {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	opts.Issuer = "http://" + srv.Listener.Addr().String()
	clock := &fakeClock{now: epoch}
	opts.Now = clock.Now
	iss, err := issuer.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	for _, p := range iss.Paths() {
		mux.Handle(p, iss.Handler())
	}
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	s := &testServer{t: t, iss: iss, url: srv.URL, clock: clock, client: srv.Client()}
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	iss.OnRevoke(func(jtis []string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.revoked = append(s.revoked, jtis...)
	})
	return s
}

func (s *testServer) advance(d time.Duration) { s.clock.advance(d) }

// takeRevoked returns and clears the jtis OnRevoke reported so far.
func (s *testServer) takeRevoked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.revoked
	s.revoked = nil
	return r
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (s *testServer) do(req *http.Request) reply {
	s.t.Helper()
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("read %s: %v", req.URL.Path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// get fetches a path of the issuer, or an absolute URL.
func (s *testServer) get(target string) reply {
	s.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = s.url + target
	}
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	return s.do(req)
}

// post sends a form; basic, when given, is the client id and secret for
// HTTP Basic (form-encoded first, RFC 6749 §2.3.1).
func (s *testServer) post(path string, form url.Values, basic ...string) reply {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return s.do(req)
}

func (s *testServer) postJSON(path, body string) reply {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return s.do(req)
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body %q is not a JSON object: %v", r.status, r.body, err)
	}
	return m
}

func (r reply) str(t *testing.T, key string) string {
	t.Helper()
	v, _ := r.json(t)[key].(string)
	return v
}

// wantOK checks a 200 JSON answer that must not be cached.
func wantOK(t *testing.T, r reply) map[string]any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", r.status, r.body)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	return r.json(t)
}

// wantError checks an RFC 6749 §5.2 error: status, JSON body, no-store.
func wantError(t *testing.T, r reply, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if got := r.str(t, "error"); got != code {
		t.Errorf("error %q, want %q (%s)", got, code, r.str(t, "error_description"))
	}
	checkDescription(t, r.str(t, "error_description"))
}

// descriptionRE is the RFC 6749 §5.2 error_description syntax:
// 1*( %x20-21 / %x23-5B / %x5D-7E ).
var descriptionRE = regexp.MustCompile(`^[\x20-\x21\x23-\x5b\x5d-\x7e]+$`)

func checkDescription(t *testing.T, desc string) {
	t.Helper()
	if desc != "" && !descriptionRE.MatchString(desc) {
		t.Errorf("error_description %q has characters RFC 6749 §5.2 forbids", desc)
	}
}

// authz is one authorization request with its PKCE verifier.
type authz struct {
	query    url.Values
	verifier string
}

func newAuthz(clientID, redirect string) *authz {
	v := oauth2.GenerateVerifier()
	return &authz{verifier: v, query: url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirect},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(v)},
		"code_challenge_method": {"S256"},
		"state":                 {"st-123"},
	}}
}

func (s *testServer) authorize(a *authz) reply {
	s.t.Helper()
	return s.get("/authorize?" + a.query.Encode())
}

// callback checks that r redirects to a's redirect URI, with state and iss
// (RFC 9207), and returns the response parameters.
func (s *testServer) callback(r reply, a *authz) url.Values {
	s.t.Helper()
	if r.status != http.StatusFound && r.status != http.StatusSeeOther {
		s.t.Fatalf("status %d, want a redirect; body %s", r.status, r.body)
	}
	loc, err := url.Parse(r.header.Get("Location"))
	if err != nil {
		s.t.Fatalf("Location: %v", err)
	}
	want, _ := url.Parse(a.query.Get("redirect_uri"))
	if loc.Scheme != want.Scheme || loc.Host != want.Host || loc.Path != want.Path {
		s.t.Fatalf("redirected to %s, want %s", loc, want)
	}
	q := loc.Query()
	if q.Get("state") != a.query.Get("state") {
		s.t.Errorf("state %q, want %q", q.Get("state"), a.query.Get("state"))
	}
	if q.Get("iss") != s.url {
		s.t.Errorf("iss %q, want %q", q.Get("iss"), s.url)
	}
	return q
}

// code runs an authorization request on an AutoApprove server.
func (s *testServer) code(a *authz) string {
	s.t.Helper()
	q := s.callback(s.authorize(a), a)
	if q.Get("code") == "" {
		s.t.Fatalf("no code in the redirect: %v", q)
	}
	return q.Get("code")
}

// exchange redeems a code; without basic the client_id goes in the body.
func (s *testServer) exchange(a *authz, code string, basic ...string) reply {
	s.t.Helper()
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {a.query.Get("redirect_uri")},
		"code_verifier": {a.verifier},
	}
	if len(basic) == 0 {
		form.Set("client_id", a.query.Get("client_id"))
	}
	return s.post("/token", form, basic...)
}

// tokens runs a whole authorization code flow for agentauth-cli.
func (s *testServer) tokens(extra url.Values) map[string]any {
	s.t.Helper()
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	for k, v := range extra {
		a.query[k] = v
	}
	return wantOK(s.t, s.exchange(a, s.code(a)))
}

func (s *testServer) refresh(clientID, token string) reply {
	s.t.Helper()
	return s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {clientID}})
}

// introspect asks as the confidential client rs/rs-secret.
func (s *testServer) introspect(token string) map[string]any {
	s.t.Helper()
	return wantOK(s.t, s.post("/introspect", url.Values{"token": {token}}, "rs", "rs-secret"))
}

// rs is a confidential client that may introspect.
var rs = issuer.Client{ID: "rs", Secret: "rs-secret", Name: "resource server"}

var nonceRE = regexp.MustCompile(`name="nonce" value="([^"]+)"`)

// pageNonce returns the nonce of a rendered consent or device form.
func pageNonce(t *testing.T, r reply) string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", r.status, r.body)
	}
	m := nonceRE.FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("no nonce in the page:\n%s", r.body)
	}
	return string(m[1])
}

// wantPage checks an HTML page answer and returns its text.
func wantPage(t *testing.T, r reply, status int) string {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q, want text/html", ct)
	}
	if loc := r.header.Get("Location"); loc != "" {
		t.Errorf("page redirects to %s", loc)
	}
	return string(r.body)
}

// lockedBuffer collects log output written by server goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
