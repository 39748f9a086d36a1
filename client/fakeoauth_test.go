package client

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// oauthFake is an MCP-style protected resource (/mcp answering 401 with a
// Bearer challenge, RFC 9728 metadata) and its authorization server on one
// httptest server: RFC 8414 metadata, /authorize redirecting at once (or with
// authError), /token with PKCE checks and refresh token rotation, /register,
// /device. Access tokens are JWT-shaped (sub alice, aud the resource).
// Knobs are set before a command runs; what it saw is read after.
type oauthFake struct {
	t   *testing.T
	srv *httptest.Server
	md  wire.AuthServerMetadata

	// challengeScope is the scope of /mcp's challenge.
	challengeScope string
	// clients are the known client ids with their secrets ("" for public).
	clients map[string]string
	// dcrAuthMethod makes /register answer a confidential client with this
	// token_endpoint_auth_method.
	dcrAuthMethod string
	// authError makes /authorize redirect with error=authError.
	authError string
	// expiresIn is every access token's lifetime in seconds.
	expiresIn int

	mu         sync.Mutex
	hits       int // requests of any kind
	n          int // tokens issued
	authorizeQ []url.Values
	// challenges are the code_challenge of each code issued.
	challenges map[string]string
	tokenForms []url.Values
	tokenAuth  []string
	refreshes  int
	refresh    string // the one valid refresh token
	deviceOK   bool
	registered int
	// registeredGrants are the grant_types of each registration request.
	registeredGrants [][]string
}

func newOAuthFake(t *testing.T) *oauthFake {
	t.Helper()
	f := &oauthFake{t: t, clients: map[string]string{}, challenges: map[string]string{}, expiresIn: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		ch := map[string]string{"resource_metadata": f.srv.URL + "/.well-known/oauth-protected-resource/mcp"}
		if f.challengeScope != "" {
			ch["scope"] = f.challengeScope
		}
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(ch))
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		fakeJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{Resource: f.resource(), AuthorizationServers: []string{f.srv.URL},
			ScopesSupported: []string{"agent:use"}, ResourceName: "Fake MCP"})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		fakeJSON(w, http.StatusOK, f.md)
	})
	mux.HandleFunc("GET /authorize", f.authorize)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /register", f.register)
	mux.HandleFunc("POST /device", f.device)
	mux.HandleFunc("GET /activate", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.deviceOK = true
		f.mu.Unlock()
		fmt.Fprintln(w, "approved")
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits++
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	f.md = wire.AuthServerMetadata{
		Issuer:                            f.srv.URL,
		AuthorizationEndpoint:             f.srv.URL + "/authorize",
		TokenEndpoint:                     f.srv.URL + "/token",
		RegistrationEndpoint:              f.srv.URL + "/register",
		DeviceAuthorizationEndpoint:       f.srv.URL + "/device",
		RevocationEndpoint:                f.srv.URL + "/revoke",
		GrantTypesSupported:               []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken, wire.GrantDeviceCode},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	}
	return f
}

func (f *oauthFake) resource() string { return f.srv.URL + "/mcp" }

func fakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fakeOAuthError(w http.ResponseWriter, status int, code string) {
	fakeJSON(w, status, map[string]string{"error": code, "error_description": "fake says " + code})
}

// fakeJWTHeader is the encoded header every fake access token starts with:
// long enough never to appear by chance in a random PKCE challenge.
var fakeJWTHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"at+jwt"}`))

// fakeAccessToken is a JWT-shaped token (unsigned: nothing here verifies it).
func fakeAccessToken(n int, aud string) string {
	payload, _ := json.Marshal(map[string]any{"sub": "alice", "aud": aud, "jti": fmt.Sprintf("at-secret-%d", n)})
	return fakeJWTHeader + "." + base64.RawURLEncoding.EncodeToString(payload) + ".c2ln"
}

// authorize approves at once. It leaves client checks to /token, so that a
// forgotten client surfaces as invalid_client there.
func (f *oauthFake) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.authorizeQ = append(f.authorizeQ, q)
	code := fmt.Sprintf("good-code-%d", len(f.authorizeQ))
	f.challenges[code] = q.Get("code_challenge")
	f.mu.Unlock()
	resp := url.Values{"code": {code}, "state": {q.Get("state")}}
	if f.authError != "" {
		resp = url.Values{"error": {f.authError}, "error_description": {"the user said no"}, "state": {q.Get("state")}}
	}
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+resp.Encode(), http.StatusFound)
}

// clientOK checks the client authentication of a token or device request
// (RFC 6749 §2.3.1).
func (f *oauthFake) clientOK(r *http.Request, form url.Values) bool {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want, ok := f.clients[id]
	return ok && want == secret
}

func (f *oauthFake) token(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	f.mu.Lock()
	f.tokenForms = append(f.tokenForms, form)
	f.tokenAuth = append(f.tokenAuth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if !f.clientOK(r, form) {
		fakeOAuthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch form.Get("grant_type") {
	case wire.GrantAuthorizationCode:
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		challenge, ok := f.challenges[form.Get("code")]
		delete(f.challenges, form.Get("code"))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			fakeOAuthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
	case wire.GrantRefreshToken:
		if form.Get("refresh_token") == "" || form.Get("refresh_token") != f.refresh {
			fakeOAuthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		f.refreshes++
	case wire.GrantDeviceCode:
		if !f.deviceOK {
			fakeOAuthError(w, http.StatusBadRequest, "authorization_pending")
			return
		}
	default:
		fakeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	f.n++
	f.refresh = fmt.Sprintf("rt-secret-%d", f.n)
	aud := form.Get("resource")
	if aud == "" {
		aud = f.resource()
	}
	fakeJSON(w, http.StatusOK, map[string]any{"access_token": fakeAccessToken(f.n, aud), "token_type": "Bearer",
		"expires_in": f.expiresIn, "refresh_token": f.refresh, "scope": "agent:use"})
}

func (f *oauthFake) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		GrantTypes []string `json:"grant_types"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registered++
	f.registeredGrants = append(f.registeredGrants, req.GrantTypes)
	id := fmt.Sprintf("dcr-%d", f.registered)
	resp := map[string]any{"client_id": id, "grant_types": req.GrantTypes}
	f.clients[id] = ""
	if f.dcrAuthMethod != "" {
		f.clients[id] = "dcr-secret-" + id
		resp["client_secret"], resp["token_endpoint_auth_method"] = f.clients[id], f.dcrAuthMethod
	}
	fakeJSON(w, http.StatusCreated, resp)
}

func (f *oauthFake) device(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	if !f.clientOK(r, form) {
		fakeOAuthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	fakeJSON(w, http.StatusOK, map[string]any{"device_code": "dev-code-secret", "user_code": "WDJB-MJHT",
		"verification_uri": f.srv.URL + "/activate", "verification_uri_complete": f.srv.URL + "/activate?user_code=WDJB-MJHT",
		"expires_in": 600, "interval": 1})
}

// fetchBrowser is an OpenURL that behaves like a browser: it GETs the URL
// and follows the redirects (to the loopback callback).
func fetchBrowser(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// formsWith returns the token requests of one grant type.
func (f *oauthFake) formsWith(grant string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []url.Values
	for _, form := range f.tokenForms {
		if form.Get("grant_type") == grant {
			out = append(out, form)
		}
	}
	return out
}

// newTestClient is a Client over a memory store with the fetching browser
// and a recording UI; the keyring is never probed.
func newTestClient(t *testing.T) (*Client, store.Store, *recordUI) {
	t.Helper()
	st, ui := store.NewMemory(), &recordUI{}
	cl := &Client{
		HTTPClient:   &http.Client{Timeout: 10 * time.Second},
		Now:          time.Now,
		Store:        func() (store.Store, error) { return st, nil },
		ProbeKeyring: func(context.Context) error { t.Error("the keyring was probed"); return nil },
		Browser:      fetchBrowser,
		UI:           ui,
		Version:      "test",
	}
	return cl, st, ui
}
