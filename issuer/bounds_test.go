package issuer_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// Redirect URIs are loopback http only (RFC 8252 §7.3), with or without
// AutoApprove, unless their https origin is allowed; the refusal names
// the serve flag that allows it.
func TestRedirectURIsAreLoopbackUnlessAllowed(t *testing.T) {
	for _, auto := range []bool{false, true} {
		s := start(t, issuer.Options{AutoApprove: auto})
		for _, uri := range []string{"https://evil.example/cb", "http://evil.example/cb", "https://app.example:8443/cb", "http://127.0.0.1.evil.example/cb"} {
			r := s.postJSON("/register", `{"redirect_uris":["`+uri+`"],"token_endpoint_auth_method":"none"}`)
			wantError(t, r, http.StatusBadRequest, "invalid_redirect_uri")
			if desc := r.str(t, "error_description"); !strings.Contains(desc, "loopback") {
				t.Errorf("%s: description %q does not say why", uri, desc)
			}
		}
		r := s.postJSON("/register", `{"redirect_uris":["https://evil.example/cb"]}`)
		if desc := r.str(t, "error_description"); !strings.Contains(desc, "--allow-redirect-origin https://evil.example") {
			t.Errorf("description %q does not name the fix", desc)
		}
		for _, uri := range []string{"http://127.0.0.1/cb", "http://[::1]:8080/cb", "http://localhost:1/cb"} {
			if r := s.postJSON("/register", `{"redirect_uris":["`+uri+`"],"token_endpoint_auth_method":"none"}`); r.status != http.StatusCreated {
				t.Errorf("%s: status %d; body %s", uri, r.status, r.body)
			}
		}
	}

	s := start(t, issuer.Options{AutoApprove: true, AllowedRedirectOrigins: []string{"https://app.example:8443"}})
	r := s.postJSON("/register", `{"redirect_uris":["https://app.example:8443/cb"],"token_endpoint_auth_method":"none"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("allowed origin: status %d; body %s", r.status, r.body)
	}
	a := newAuthz(r.str(t, "client_id"), "https://app.example:8443/cb")
	s.code(a)
	// The origin is exact: another port or host is refused.
	for _, uri := range []string{"https://app.example/cb", "https://app.example:9443/cb", "https://evil.example:8443/cb", "http://app.example:8443/cb"} {
		wantError(t, s.postJSON("/register", `{"redirect_uris":["`+uri+`"]}`), http.StatusBadRequest, "invalid_redirect_uri")
	}

	// A pre-registered client is held to the same rule.
	c := issuer.Client{ID: "web", RedirectURIs: []string{"https://app.example/cb"}}
	if _, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:7777", Clients: []issuer.Client{c}}); err == nil || !strings.Contains(err.Error(), "--allow-redirect-origin https://app.example") {
		t.Errorf("New with a non-loopback client: %v", err)
	}
	for _, o := range []string{"http://app.example", "https://app.example/cb", "https://APP.example", "app.example", "https://app.example?x"} {
		if _, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:7777", AllowedRedirectOrigins: []string{o}}); err == nil {
			t.Errorf("New accepted the allowed origin %q", o)
		}
	}
}

func TestAuthorizeParameterBounds(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	for _, tc := range []struct {
		param string
		n     int
	}{
		{"state", issuer.MaxStateBytes},
		{"scope", issuer.MaxScopeBytes},
		{"resource", issuer.MaxURIBytes},
		{"code_challenge", issuer.MaxParamBytes},
		{"code_challenge_method", issuer.MaxParamBytes},
	} {
		a := newAuthz(issuer.CLIClientID, cliRedirect)
		a.query.Set(tc.param, "https://x.example/"+strings.Repeat("a", tc.n))
		r := s.authorize(a)
		if r.status != http.StatusFound {
			t.Fatalf("%s: status %d, want a redirect; body %s", tc.param, r.status, r.body)
		}
		loc, _ := url.Parse(r.header.Get("Location"))
		q := loc.Query()
		if q.Get("error") != "invalid_request" || q.Get("code") != "" || !strings.Contains(q.Get("error_description"), fmt.Sprintf("%s is longer than %d bytes", tc.param, tc.n)) {
			t.Errorf("%s: %v, want invalid_request naming the bound", tc.param, q)
		}
		if q.Has("state") && tc.param == "state" {
			t.Errorf("the oversize state is echoed")
		}
	}
	// The largest state is accepted and echoed; a parameter the issuer
	// does not read is ignored, whatever its length (RFC 6749 §3.1).
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	a.query.Set("state", strings.Repeat("s", issuer.MaxStateBytes))
	a.query.Set("login_hint", strings.Repeat("h", 4096))
	s.code(a)

	for name, q := range map[string]url.Values{
		"client_id":    {"client_id": {strings.Repeat("c", issuer.MaxParamBytes+1)}, "redirect_uri": {cliRedirect}},
		"redirect_uri": {"client_id": {issuer.CLIClientID}, "redirect_uri": {cliRedirect + "?" + strings.Repeat("r", issuer.MaxURIBytes)}},
	} {
		body := wantPage(t, s.get("/authorize?"+q.Encode()), http.StatusBadRequest)
		if !strings.Contains(body, "too long") || strings.Contains(body, "rrrrrrrrrr") || strings.Contains(body, "cccccccccc") {
			t.Errorf("%s: page:\n%s", name, body)
		}
	}

	// The device endpoint bounds scope and resource too.
	wantError(t, s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}, "scope": {strings.Repeat("a", issuer.MaxScopeBytes+1)}}), http.StatusBadRequest, "invalid_request")
	wantError(t, s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}, "resource": {"https://x.example/" + strings.Repeat("a", issuer.MaxURIBytes)}}), http.StatusBadRequest, "invalid_target")
}

// Pending consent pages are bounded: the oldest is evicted.
func TestPendingConsentsEvictTheOldest(t *testing.T) {
	s := start(t, issuer.Options{})
	first := pageNonce(t, s.authorize(newAuthz(issuer.CLIClientID, cliRedirect)))
	var last string
	var lastAuthz *authz
	for range issuer.MaxPendingConsents {
		s.advance(time.Millisecond)
		lastAuthz = newAuthz(issuer.CLIClientID, cliRedirect)
		last = pageNonce(t, s.authorize(lastAuthz))
	}
	wantPage(t, s.post("/consent", url.Values{"nonce": {first}, "decision": {"approve"}, "subject": {"bob"}}), http.StatusBadRequest)
	q := s.callback(s.post("/consent", url.Values{"nonce": {last}, "decision": {"approve"}, "subject": {"bob"}}), lastAuthz)
	if q.Get("code") == "" {
		t.Errorf("the newest consent gave no code: %v", q)
	}
}

func TestDeviceAuthorizationsAreBounded(t *testing.T) {
	s := start(t, issuer.Options{})
	for range issuer.MaxDeviceAuthorizations {
		s.startDevice(nil)
	}
	r := s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}})
	wantError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
	if desc := r.str(t, "error_description"); !strings.Contains(desc, "try again") {
		t.Errorf("description %q", desc)
	}
	// Expired ones make room.
	s.advance(11 * time.Minute)
	s.startDevice(nil)
}

func TestRegistrationsAreBounded(t *testing.T) {
	const max = 20
	s := start(t, issuer.Options{AutoApprove: true, Limits: issuer.Limits{Clients: max}})
	big := `{"redirect_uris":["http://127.0.0.1/cb"],"client_name":"` + strings.Repeat("n", issuer.MaxRegistrationBytes) + `"}`
	wantError(t, s.postJSON("/register", big), http.StatusBadRequest, "invalid_client_metadata")

	register := func() reply {
		return s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`)
	}
	used := register().str(t, "client_id")
	a := newAuthz(used, "http://127.0.0.1:5000/cb")
	wantOK(t, s.exchange(a, s.code(a)))
	for range max - 1 {
		if r := register(); r.status != http.StatusCreated {
			t.Fatalf("status %d; body %s", r.status, r.body)
		}
	}
	r := register()
	wantError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
	if desc := r.str(t, "error_description"); !strings.Contains(desc, "Reuse a registered client, or wait for unused ones to expire") {
		t.Errorf("description %q does not name the fix", desc)
	}

	// Registrations never issued a token expire; the used one stays.
	s.advance(issuer.UnusedClientTTL + time.Minute)
	if r := register(); r.status != http.StatusCreated {
		t.Fatalf("after expiry: status %d; body %s", r.status, r.body)
	}
	a = newAuthz(used, "http://127.0.0.1:5000/cb")
	wantOK(t, s.exchange(a, s.code(a)))
}

// Wrong user codes are rate limited issuer-wide (RFC 8628 §5.1): answered
// at first, then refused when typed too fast, then the page locks, the
// right code included, until the lockout ends.
func TestUserCodeGuessingIsLimited(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	dev := s.startDevice(nil)
	wrong := func() reply { return s.get("/device?user_code=BBBB-BBBB") }
	for range issuer.UserCodeFreeFailures {
		wantPage(t, wrong(), http.StatusBadRequest)
	}
	// Too fast: refused without looking at the code.
	r := wrong()
	if body := wantPage(t, r, http.StatusTooManyRequests); !strings.Contains(body, "wait 2s between two codes") || r.header.Get("Retry-After") != "2" {
		t.Errorf("retry-after %q, page:\n%s", r.header.Get("Retry-After"), body)
	}
	// Slow enough: checked, and still counted.
	s.advance(issuer.UserCodeRetryInterval)
	wantPage(t, wrong(), http.StatusBadRequest)
	for range issuer.UserCodeMaxFailures - issuer.UserCodeFreeFailures - 2 {
		wantPage(t, wrong(), http.StatusTooManyRequests)
	}
	// Locked: even the right code is refused.
	s.advance(issuer.UserCodeRetryInterval)
	r = s.get(dev["verification_uri_complete"].(string))
	if body := wantPage(t, r, http.StatusTooManyRequests); !strings.Contains(body, "the code page is locked for 4m58s") {
		t.Errorf("page:\n%s", body)
	}
	s.advance(issuer.UserCodeLockout - issuer.UserCodeRetryInterval - time.Second)
	wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusTooManyRequests)
	wantError(t, s.poll(dev), http.StatusBadRequest, "authorization_pending")

	s.advance(2 * time.Second)
	if body := wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusOK); !strings.Contains(body, "Device approved") {
		t.Errorf("after the lockout: %s", body)
	}
}
