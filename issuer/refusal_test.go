package issuer_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// A sign-in at the login provider that signs nobody in, started by an
// authorization request, goes back to the client's redirect URI with
// error, error_description, state and iss (RFC 6749 §4.1.2.1), so that the
// waiting client stops at once; one started elsewhere, or whose redirect
// URI is not the client's, gets a page and never a redirect.
func TestSignInRefusalGoesBack(t *testing.T) {
	op := newFakeOP(t, time.Now)
	s := start(t, issuer.Options{Login: &issuer.LoginOptions{Issuer: op.srv.URL, ClientID: "serve", ClientSecret: "s3cret",
		AllowEmailDomains: []string{"example.com"}}})
	op.now = s.clock.Now

	// begin sends a browser without a session to the provider, from
	// /authorize (a) or from /login?return_to=returnTo; refuse finishes
	// it with the provider's answer for user, changed by query.
	begin := func(a *authz, returnTo string) reply {
		t.Helper()
		r := s.get("/login?return_to=" + url.QueryEscape(returnTo))
		if a != nil {
			r = s.authorize(a)
		}
		if r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), op.srv.URL+"/auth?") {
			t.Fatalf("not sent to the provider: %d %q", r.status, r.header.Get("Location"))
		}
		return r
	}
	finish := func(r reply, user string, change func(map[string]any), query func(url.Values)) reply {
		t.Helper()
		q := op.approve(t, r.header.Get("Location"), user, change)
		if query != nil {
			query(q)
		}
		req, _ := http.NewRequest(http.MethodGet, s.url+"/login/callback?"+q.Encode(), nil)
		for _, c := range cookies(r) {
			req.AddCookie(c)
		}
		return s.do(req)
	}
	outside := func(c map[string]any) { c["email"] = "mallory@evil.example" }
	denied := func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") }

	for _, tc := range []struct {
		name   string
		change func(map[string]any)
		query  func(url.Values)
		code   string
		desc   string
	}{
		{"outside the allow-list", outside, nil, "access_denied", "does not let that account in"},
		{"the provider's access_denied", nil, denied, "access_denied", "The login provider answered 'access_denied'"},
		{"the provider's other error", nil, func(q url.Values) { q.Del("code"); q.Set("error", "invalid_scope") }, "server_error", "answered 'invalid_scope'"},
		{"an ID token that does not check out", func(c map[string]any) { c["nonce"] = "other" }, nil, "server_error", "did not check out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthz(issuer.CLIClientID, "http://127.0.0.1:5555/callback")
			got := finish(begin(a, ""), "mallory", tc.change, tc.query)
			q := s.callback(got, a)
			if q.Get("error") != tc.code || !strings.Contains(q.Get("error_description"), tc.desc) || q.Has("code") {
				t.Fatalf("sent back %v, want error=%s and %q", q, tc.code, tc.desc)
			}
			checkDescription(t, q.Get("error_description"))
			for _, c := range cookies(got) {
				if c.Name == issuer.BrowserSessionCookie {
					t.Fatal("a refused sign-in set the session cookie")
				}
			}
		})
	}

	// Not from an authorization request, or to a redirect URI the client
	// did not register: a page.
	unregistered := url.Values{"response_type": {"code"}, "client_id": {issuer.CLIClientID}, "redirect_uri": {"https://evil.example/cb"}, "state": {"s"}}
	for name, returnTo := range map[string]string{
		"the device page":          "/device",
		"an unregistered redirect": "/authorize?" + unregistered.Encode(),
		"an unknown client":        "/authorize?client_id=nobody&redirect_uri=http%3A%2F%2F127.0.0.1%3A5555%2Fcallback",
	} {
		t.Run(name, func(t *testing.T) {
			got := finish(begin(nil, returnTo), "mallory", outside, nil)
			if got.status != http.StatusForbidden || got.header.Get("Location") != "" || !strings.Contains(string(got.body), "does not let that account in") {
				t.Fatalf("%d %q %s", got.status, got.header.Get("Location"), got.body)
			}
		})
	}
}
