package issuer_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// web is a confidential client with a non-loopback redirect on a port.
var web = issuer.Client{ID: "web", Secret: "web-secret", RedirectURIs: []string{"https://app.example:8443/cb"}}

func TestAuthorizeErrorsGoToTheRedirectURI(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	for _, tc := range []struct {
		name   string
		change func(url.Values)
		want   string
	}{
		{"missing PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		{"method missing means plain", func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
		{"malformed challenge", func(q url.Values) { q.Set("code_challenge", "short") }, "invalid_request"},
		{"no response_type", func(q url.Values) { q.Del("response_type") }, "invalid_request"},
		{"implicit grant", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"repeated scope", func(q url.Values) { q["scope"] = []string{"a", "b"} }, "invalid_request"},
		{"relative resource", func(q url.Values) { q.Set("resource", "/mcp") }, "invalid_target"},
		{"resource with fragment", func(q url.Values) { q.Set("resource", "https://rs.example/mcp#part") }, "invalid_target"},
		{"two resources", func(q url.Values) { q["resource"] = []string{"https://a.example/", "https://b.example/"} }, "invalid_target"},
		{"malformed scope", func(q url.Values) { q.Set("scope", `agent:use bad"scope`) }, "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthz(issuer.CLIClientID, cliRedirect)
			tc.change(a.query)
			r := s.authorize(a)
			if r.status != http.StatusFound {
				t.Fatalf("status %d, want 302; body %s", r.status, r.body)
			}
			q := s.callback(r, a)
			if q.Get("error") != tc.want || q.Get("code") != "" {
				t.Errorf("error %q code %q, want error %q and no code", q.Get("error"), q.Get("code"), tc.want)
			}
			checkDescription(t, q.Get("error_description"))
		})
	}
}

func TestAuthorizeErrorsAboutClientOrRedirectAreShownOnAPage(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{web}, AllowedRedirectOrigins: appOrigins})
	for _, tc := range []struct{ name, client, redirect string }{
		{"unknown client", "nobody", cliRedirect},
		{"unknown client named like markup", "<script>alert(1)</script>", cliRedirect},
		{"no client_id", "", cliRedirect},
		{"other path", issuer.CLIClientID, "http://127.0.0.1:49152/other"},
		{"other loopback host", issuer.CLIClientID, "http://[::1]:49152/callback"},
		{"https instead of loopback http", issuer.CLIClientID, "https://127.0.0.1:49152/callback"},
		{"extra query", issuer.CLIClientID, cliRedirect + "?x=1"},
		{"non-loopback host, other port", "web", "https://app.example:9443/cb"},
		{"non-loopback host, no port", "web", "https://app.example/cb"},
		{"non-loopback host, http", "web", "http://app.example:8443/cb"},
		{"javascript", "web", "javascript:alert(1)"},
		{"no redirect_uri for a loopback client", issuer.CLIClientID, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthz(tc.client, tc.redirect)
			if tc.client == "" {
				a.query.Del("client_id")
			}
			if tc.redirect == "" {
				a.query.Del("redirect_uri")
			}
			body := wantPage(t, s.authorize(a), http.StatusBadRequest)
			if strings.Contains(body, "<script>") {
				t.Errorf("the error page carries unescaped markup:\n%s", body)
			}
		})
	}
}

func TestAuthorizeAcceptsRegisteredRedirects(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{web}, AllowedRedirectOrigins: appOrigins})
	for _, redirect := range []string{
		"http://127.0.0.1:1234/callback", "http://localhost:65000/callback", "http://127.0.0.1/callback",
	} {
		s.code(newAuthz(issuer.CLIClientID, redirect))
	}
	a := newAuthz("web", "https://app.example:8443/cb")
	wantOK(t, s.exchange(a, s.code(a), "web", "web-secret"))

	// A single registered non-loopback redirect may be left out (RFC 6749 §3.1.2.3).
	a = newAuthz("web", "https://app.example:8443/cb")
	a.query.Del("redirect_uri")
	loc, _ := url.Parse(s.authorize(a).header.Get("Location"))
	if !strings.HasPrefix(loc.String(), "https://app.example:8443/cb?") {
		t.Fatalf("redirected to %q, want the registered redirect", loc)
	}
	wantOK(t, s.post("/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {a.verifier}}, "web", "web-secret"))
}

// evil is a client whose name, like the request's state and scope, is markup.
// The state is not shown at all.
var evil = issuer.Client{ID: "evil", Secret: "evil-secret", Name: "<script>name</script>", RedirectURIs: []string{"https://app.example/cb"}}

func TestConsentPage(t *testing.T) {
	s := start(t, issuer.Options{Clients: []issuer.Client{evil}, AllowedRedirectOrigins: appOrigins})
	a := newAuthz("evil", "https://app.example/cb")
	a.query.Set("state", "<script>state</script>")
	a.query.Set("scope", "agent:use <script>scope</script>")
	a.query.Set("resource", "https://rs.example/mcp")
	r := s.authorize(a)
	body := wantPage(t, r, http.StatusOK)
	nonce := pageNonce(t, r)
	if strings.Contains(body, "<script>") {
		t.Errorf("the consent page carries unescaped markup:\n%s", body)
	}
	if strings.Contains(body, "&lt;script&gt;state") || strings.Contains(body, ">State<") {
		t.Errorf("the consent page shows the OAuth state:\n%s", body)
	}
	for _, want := range []string{
		"&lt;script&gt;name&lt;/script&gt;", "&lt;script&gt;scope&lt;/script&gt;",
		"agent:use", "https://rs.example/mcp", "https://app.example/cb", `value="alice"`, "Approve", "Deny",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the consent page lacks %q:\n%s", want, body)
		}
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q lets the page be framed", csp)
	}

	// A cross-site post is refused and leaves the page answerable.
	form := url.Values{"nonce": {nonce}, "decision": {"approve"}, "subject": {"bob"}}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/consent", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := s.do(req); r.status != http.StatusForbidden {
		t.Errorf("cross-site consent: status %d, want 403", r.status)
	}

	r = s.post("/consent", form)
	if r.status != http.StatusSeeOther {
		t.Fatalf("approve: status %d, want 303; body %s", r.status, r.body)
	}
	q := s.callback(r, a)
	tok := wantOK(t, s.exchange(a, q.Get("code"), "evil", "evil-secret"))
	c := s.verify(tok["access_token"].(string))
	if c.Subject != "bob" || c.Scope != "agent:use <script>scope</script>" {
		t.Errorf("sub %q scope %q, want bob and the approved scope", c.Subject, c.Scope)
	}

	// The nonce is single-use.
	wantPage(t, s.post("/consent", form), http.StatusBadRequest)
}

func TestConsentDenyAndBadAnswers(t *testing.T) {
	s := start(t, issuer.Options{})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	nonce := pageNonce(t, s.authorize(a))

	wantPage(t, s.post("/consent", url.Values{"nonce": {"forged"}, "decision": {"approve"}, "subject": {"bob"}}), http.StatusBadRequest)
	wantPage(t, s.post("/consent", url.Values{"nonce": {nonce}, "decision": {"maybe"}}), http.StatusBadRequest)
	wantPage(t, s.post("/consent", url.Values{"nonce": {nonce}, "decision": {"approve"}, "subject": {""}}), http.StatusBadRequest)

	q := s.callback(s.post("/consent", url.Values{"nonce": {nonce}, "decision": {"deny"}}), a)
	if q.Get("error") != "access_denied" || q.Get("code") != "" {
		t.Errorf("deny: error %q code %q, want access_denied and no code", q.Get("error"), q.Get("code"))
	}

	// An unanswered page expires.
	nonce = pageNonce(t, s.authorize(newAuthz(issuer.CLIClientID, cliRedirect)))
	s.advance(11 * time.Minute)
	wantPage(t, s.post("/consent", url.Values{"nonce": {nonce}, "decision": {"approve"}, "subject": {"bob"}}), http.StatusBadRequest)
}
