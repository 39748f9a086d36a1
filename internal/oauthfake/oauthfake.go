// Package oauthfake is a fake MCP-style protected resource and its OAuth
// authorization server for tests. It is a normal package so that the tests of
// several packages (client, commands) and the testscripts' programs
// (internal/testprog/mcp) can share it; only tests and those programs
// import it: nothing the agentauth binary runs depends on it.
//
// The fake is written from agentauth's own wire types; it backs up, and never
// replaces, the tests against real peers.
package oauthfake

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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Server is an MCP-style protected resource (/mcp answering 401 with a
// Bearer challenge, RFC 9728 metadata) and its authorization server on one
// httptest server: RFC 8414 metadata, /authorize redirecting at once (or with
// AuthError), /token with PKCE checks and refresh token rotation, /register,
// /device. Access tokens are JWT-shaped (sub alice, aud the resource).
// Knobs are set before a command runs; what it saw is read after, holding
// the lock while a request may still run.
type Server struct {
	// URL is the server's base URL, also the issuer.
	URL string
	// Metadata is what /.well-known/oauth-authorization-server serves.
	Metadata wire.AuthServerMetadata

	// ChallengeScope is the scope of /mcp's challenge.
	ChallengeScope string
	// Clients are the known client ids with their secrets ("" for public).
	Clients map[string]string
	// DCRAuthMethod makes /register answer a confidential client with this
	// token_endpoint_auth_method.
	DCRAuthMethod string
	// AuthError makes /authorize redirect with error=AuthError.
	AuthError string
	// ExpiresIn is every access token's lifetime in seconds.
	ExpiresIn int

	sync.Mutex
	Hits           int // requests of any kind
	Issued         int // tokens issued
	AuthorizeQuery []url.Values
	// Challenges are the code_challenge of each code issued.
	Challenges map[string]string
	TokenForms []url.Values
	TokenAuth  []string
	// PreflightForms are the token requests of login's client check (a
	// made-up code, flows.PreflightCodePrefix), kept apart from
	// TokenForms; Probes counts login's authorization requests sent
	// without a browser (flows.PreflightUserAgent), apart from
	// AuthorizeQuery.
	PreflightForms []url.Values
	Probes         int
	Refreshes      int
	Refresh        string // the one valid refresh token
	DeviceOK       bool
	Registered     int
	// RegisteredGrants are the grant_types of each registration request.
	RegisteredGrants [][]string
}

// New starts a Server that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	f := &Server{Clients: map[string]string{}, Challenges: map[string]string{}, ExpiresIn: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		ch := map[string]string{"resource_metadata": f.URL + "/.well-known/oauth-protected-resource/mcp"}
		if f.ChallengeScope != "" {
			ch["scope"] = f.ChallengeScope
		}
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(ch))
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{Resource: f.Resource(), AuthorizationServers: []string{f.URL},
			ScopesSupported: []string{"agent:use"}, ResourceName: "Fake MCP"})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, f.Metadata)
	})
	mux.HandleFunc("GET /authorize", f.authorize)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /register", f.register)
	mux.HandleFunc("POST /device", f.device)
	mux.HandleFunc("GET /activate", func(w http.ResponseWriter, r *http.Request) {
		f.Lock()
		f.DeviceOK = true
		f.Unlock()
		fmt.Fprintln(w, "approved")
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Lock()
		f.Hits++
		f.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	f.Metadata = wire.AuthServerMetadata{
		Issuer:                            f.URL,
		AuthorizationEndpoint:             f.URL + "/authorize",
		TokenEndpoint:                     f.URL + "/token",
		RegistrationEndpoint:              f.URL + "/register",
		DeviceAuthorizationEndpoint:       f.URL + "/device",
		RevocationEndpoint:                f.URL + "/revoke",
		GrantTypesSupported:               []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken, wire.GrantDeviceCode},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	}
	return f
}

// Resource is the protected resource's URL.
func (f *Server) Resource() string { return f.URL + "/mcp" }

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteOAuthError answers an RFC 6749 §5.2 error response.
func WriteOAuthError(w http.ResponseWriter, status int, code string) {
	WriteJSON(w, status, map[string]string{"error": code, "error_description": "fake says " + code})
}

// JWTHeader is the encoded header every fake access token starts with:
// long enough never to appear by chance in a random PKCE challenge.
var JWTHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"at+jwt"}`))

// AccessToken is the n-th JWT-shaped token for aud (unsigned: nothing here
// verifies it).
func AccessToken(n int, aud string) string {
	payload, _ := json.Marshal(map[string]any{"sub": "alice", "aud": aud, "jti": fmt.Sprintf("at-secret-%d", n)})
	return JWTHeader + "." + base64.RawURLEncoding.EncodeToString(payload) + ".c2ln"
}

// authorize approves at once. It leaves client checks to /token, so that a
// forgotten client surfaces as invalid_client there. A probe (no browser)
// is sent to a sign-in page instead, as a server with users would, or
// gets AuthError.
func (f *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.Lock()
	if r.UserAgent() == flows.PreflightUserAgent {
		f.Probes++
		f.Unlock()
		to := f.URL + "/signin"
		if f.AuthError != "" {
			to = q.Get("redirect_uri") + "?" + url.Values{"error": {f.AuthError}, "error_description": {"the user said no"}, "state": {q.Get("state")}}.Encode()
		}
		http.Redirect(w, r, to, http.StatusFound)
		return
	}
	f.AuthorizeQuery = append(f.AuthorizeQuery, q)
	code := fmt.Sprintf("good-code-%d", len(f.AuthorizeQuery))
	f.Challenges[code] = q.Get("code_challenge")
	f.Unlock()
	resp := url.Values{"code": {code}, "state": {q.Get("state")}}
	if f.AuthError != "" {
		resp = url.Values{"error": {f.AuthError}, "error_description": {"the user said no"}, "state": {q.Get("state")}}
	}
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+resp.Encode(), http.StatusFound)
}

// clientOK checks the client authentication of a token or device request
// (RFC 6749 §2.3.1).
func (f *Server) clientOK(r *http.Request, form url.Values) bool {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	f.Lock()
	defer f.Unlock()
	want, ok := f.Clients[id]
	return ok && want == secret
}

func (f *Server) token(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	if strings.HasPrefix(form.Get("code"), flows.PreflightCodePrefix) {
		f.Lock()
		f.PreflightForms = append(f.PreflightForms, form)
		f.Unlock()
		if !f.clientOK(r, form) {
			WriteOAuthError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		WriteOAuthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	f.Lock()
	f.TokenForms = append(f.TokenForms, form)
	f.TokenAuth = append(f.TokenAuth, r.Header.Get("Authorization"))
	f.Unlock()
	if !f.clientOK(r, form) {
		WriteOAuthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	f.Lock()
	defer f.Unlock()
	switch form.Get("grant_type") {
	case wire.GrantAuthorizationCode:
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		challenge, ok := f.Challenges[form.Get("code")]
		delete(f.Challenges, form.Get("code"))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			WriteOAuthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
	case wire.GrantRefreshToken:
		if form.Get("refresh_token") == "" || form.Get("refresh_token") != f.Refresh {
			WriteOAuthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		f.Refreshes++
	case wire.GrantDeviceCode:
		if !f.DeviceOK {
			WriteOAuthError(w, http.StatusBadRequest, "authorization_pending")
			return
		}
	default:
		WriteOAuthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	f.Issued++
	f.Refresh = fmt.Sprintf("rt-secret-%d", f.Issued)
	aud := form.Get("resource")
	if aud == "" {
		aud = f.Resource()
	}
	WriteJSON(w, http.StatusOK, map[string]any{"access_token": AccessToken(f.Issued, aud), "token_type": "Bearer",
		"expires_in": f.ExpiresIn, "refresh_token": f.Refresh, "scope": "agent:use"})
}

func (f *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		GrantTypes []string `json:"grant_types"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.Lock()
	defer f.Unlock()
	f.Registered++
	f.RegisteredGrants = append(f.RegisteredGrants, req.GrantTypes)
	id := fmt.Sprintf("dcr-%d", f.Registered)
	resp := map[string]any{"client_id": id, "grant_types": req.GrantTypes}
	f.Clients[id] = ""
	if f.DCRAuthMethod != "" {
		f.Clients[id] = "dcr-secret-" + id
		resp["client_secret"], resp["token_endpoint_auth_method"] = f.Clients[id], f.DCRAuthMethod
	}
	WriteJSON(w, http.StatusCreated, resp)
}

func (f *Server) device(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	if !f.clientOK(r, form) {
		WriteOAuthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"device_code": "dev-code-secret", "user_code": "WDJB-MJHT",
		"verification_uri": f.URL + "/activate", "verification_uri_complete": f.URL + "/activate?user_code=WDJB-MJHT",
		"expires_in": 600, "interval": 1})
}

// FetchBrowser is a browser opener that behaves like a browser: it GETs the
// URL and follows the redirects (to the loopback callback).
func FetchBrowser(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// FormsWith returns the token requests of one grant type.
func (f *Server) FormsWith(grant string) []url.Values {
	f.Lock()
	defer f.Unlock()
	var out []url.Values
	for _, form := range f.TokenForms {
		if form.Get("grant_type") == grant {
			out = append(out, form)
		}
	}
	return out
}

// Authorizations is how many times the browser was sent to /authorize.
func (f *Server) Authorizations() int {
	f.Lock()
	defer f.Unlock()
	return len(f.AuthorizeQuery)
}

// Seed stores a credential issued by the fake (its current refresh token),
// expiring at expiry; mutate, if given, changes it before it is stored.
func (f *Server) Seed(t testing.TB, st store.Store, expiry time.Time, mutate func(c *store.Credential)) *store.Credential {
	t.Helper()
	f.Lock()
	f.Issued++
	f.Refresh = "rt-secret-seed"
	f.Clients["pub"] = ""
	c := &store.Credential{
		Key:    store.Key{Resource: f.Resource(), Issuer: f.URL, SchemeID: "dev"},
		Target: "ws://host.example",
		// host.example is not the resource's origin: the user allowed it
		// explicitly (login --allow-resource).
		AllowedTargets: []string{"http://host.example"},
		AccessToken:    AccessToken(f.Issued, f.Resource()),
		RefreshToken:   f.Refresh,
		TokenType:      "Bearer",
		Expiry:         expiry,
		Scopes:         []string{"agent:use"},
		Client:         store.ClientRegistration{ClientID: "pub", AuthMethod: "none", Source: "dcr"},
		TokenEndpoint:  f.Metadata.TokenEndpoint,
	}
	f.Unlock()
	if mutate != nil {
		mutate(c)
	}
	if err := st.Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}
