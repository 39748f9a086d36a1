package flows

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// fakeAS is a small authorization server for the flow tests. Its knobs are
// set before the flow runs; what it saw is read after.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server
	md  wire.AuthServerMetadata

	// redirect edits the authorization response's parameters (code and
	// state are already in).
	redirect func(q url.Values)
	// grantedScope, when set, is the scope of every token response.
	grantedScope string
	// token answers the token endpoint; nil uses the default grants.
	token func(w http.ResponseWriter, form url.Values)
	// probe, when set, answers the authorization requests the flow sends
	// without a browser (PreflightUserAgent) instead of the default.
	probe func(w http.ResponseWriter, r *http.Request)
	// devicePolls are the answers to successive device token polls: an
	// RFC 8628 error code, or "" for a token.
	devicePolls []string
	// deviceInterval is the device authorization response's interval in
	// seconds; 0 leaves it out.
	deviceInterval int

	mu         sync.Mutex
	authorizeQ url.Values
	challenge  string
	tokenForms []url.Values
	tokenAuth  []string
	deviceForm url.Values
	// deviceAt and pollAt are when the device authorization request and
	// each token request arrived.
	deviceAt    time.Time
	pollAt      []time.Time
	revokeForms []url.Values
	// preflightForms are the token requests of checkClient (its made-up
	// code), kept apart from tokenForms; authorizations counts the
	// authorization requests.
	preflightForms []url.Values
	authorizations int
}

func newFakeAS(t *testing.T) *fakeAS {
	t.Helper()
	as := &fakeAS{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, as.md)
	})
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.tokenEndpoint)
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		as.record(r, &as.deviceForm)
		answer := map[string]any{
			"device_code": "dev-code-secret", "user_code": "WDJB-MJHT",
			"verification_uri": as.srv.URL + "/activate", "verification_uri_complete": as.srv.URL + "/activate?user_code=WDJB-MJHT",
			"expires_in": 600,
		}
		if as.deviceInterval != 0 {
			answer["interval"] = as.deviceInterval
		}
		writeJSON(w, http.StatusOK, answer)
	})
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	as.md = wire.AuthServerMetadata{
		Issuer:                        as.srv.URL,
		AuthorizationEndpoint:         as.srv.URL + "/authorize",
		TokenEndpoint:                 as.srv.URL + "/token",
		DeviceAuthorizationEndpoint:   as.srv.URL + "/device",
		RevocationEndpoint:            as.srv.URL + "/revoke",
		CodeChallengeMethodsSupported: []string{"S256"},
	}
	return as
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthErr(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// record parses a form request and keeps its form (and Authorization header).
func (as *fakeAS) record(r *http.Request, into *url.Values) url.Values {
	body, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(body))
	if err != nil {
		as.t.Errorf("%s: body is not a form: %v", r.URL.Path, err)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	*into = form
	if r.URL.Path == "/device" {
		as.deviceAt = time.Now()
	}
	if r.URL.Path == "/token" && strings.HasPrefix(form.Get("code"), PreflightCodePrefix) {
		as.preflightForms = append(as.preflightForms, form)
		return form
	}
	if r.URL.Path == "/token" {
		as.pollAt = append(as.pollAt, time.Now())
		as.tokenForms = append(as.tokenForms, form)
		as.tokenAuth = append(as.tokenAuth, r.Header.Get("Authorization"))
	}
	return form
}

func (as *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	as.authorizations++
	if probe := as.probe; probe != nil && r.UserAgent() == PreflightUserAgent {
		as.mu.Unlock()
		probe(w, r)
		return
	}
	as.authorizeQ = q
	as.challenge = q.Get("code_challenge")
	as.mu.Unlock()
	resp := url.Values{"code": {"good-code"}, "state": {q.Get("state")}}
	if as.redirect != nil {
		as.redirect(resp)
	}
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+resp.Encode(), http.StatusFound)
}

func (as *fakeAS) tokenEndpoint(w http.ResponseWriter, r *http.Request) {
	var form url.Values
	as.record(r, &form)
	if as.token != nil {
		as.token(w, form)
		return
	}
	reply := map[string]any{"access_token": "at-secret-1", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-secret-1"}
	if as.grantedScope != "" {
		reply["scope"] = as.grantedScope
	}
	switch form.Get("grant_type") {
	case wire.GrantAuthorizationCode:
		as.mu.Lock()
		challenge, redirect := as.challenge, as.authorizeQ.Get("redirect_uri")
		as.mu.Unlock()
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		switch {
		case form.Get("code") != "good-code":
			oauthErr(w, 400, "invalid_grant", "unknown code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != challenge:
			oauthErr(w, 400, "invalid_grant", "PKCE verification failed")
			return
		case form.Get("redirect_uri") != redirect:
			oauthErr(w, 400, "invalid_grant", "redirect_uri differs")
			return
		}
	case wire.GrantDeviceCode:
		as.mu.Lock()
		next := "unexpected poll"
		if len(as.devicePolls) > 0 {
			next, as.devicePolls = as.devicePolls[0], as.devicePolls[1:]
		}
		as.mu.Unlock()
		if next != "" {
			oauthErr(w, 400, next, "")
			return
		}
	}
	writeJSON(w, http.StatusOK, reply)
}

// browser returns an OpenURL that behaves like a browser: it follows the
// redirects to the loopback callback and keeps the last page.
type browser struct {
	mu     sync.Mutex
	status int
	page   string
	before func(authURL string) // runs first, e.g. to send a forged callback
}

func (b *browser) open(authURL string) error {
	if b.before != nil {
		b.before(authURL)
	}
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	b.mu.Lock()
	b.status, b.page = resp.StatusCode, string(body)
	b.mu.Unlock()
	return nil
}

// redirectURIOf reads redirect_uri from an authorization URL.
func redirectURIOf(t *testing.T, authURL string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("redirect_uri")
}

// noSecrets fails the test when err's text holds one of the secrets.
func noSecrets(t *testing.T, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range append(secrets, "at-secret-1", "rt-secret-1", "good-code", "dev-code-secret") {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q reveals a secret", err)
		}
	}
}
