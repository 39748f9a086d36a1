package issuer

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"

	"github.com/agentauth/agentauth/wire"
)

const (
	pathMetadata            = "/.well-known/oauth-authorization-server"
	pathOpenIDConfiguration = "/.well-known/openid-configuration"
	pathAuthorize           = "/authorize"
	pathConsent             = "/consent"
	pathToken               = "/token"
	pathDeviceAuthorization = "/device_authorization"
	pathDevice              = "/device"
	pathRevoke              = "/revoke"
	pathIntrospect          = "/introspect"
	pathRegister            = "/register"
	pathJWKS                = "/jwks.json"
)

var allPaths = []string{
	pathMetadata, pathOpenIDConfiguration, pathAuthorize, pathConsent, pathToken,
	pathDeviceAuthorization, pathDevice, pathRevoke, pathIntrospect, pathRegister, pathJWKS,
	pathLogin, pathLoginCallback, pathLogout,
}

var supportedGrants = []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken, wire.GrantDeviceCode, wire.GrantClientCredentials, GrantJWTBearer}

var supportedAuthMethods = []string{AuthNone, AuthClientSecretBasic, AuthClientSecretPost, AuthPrivateKeyJWT}

// maxBodyBytes bounds every request body the issuer reads.
const maxBodyBytes = 64 << 10

func (i *Issuer) routes() http.Handler {
	mux := http.NewServeMux()
	// The metadata documents and the JWKS are public and readable from
	// any origin (CORS), so that browser-based tools can discover the
	// issuer. The other endpoints send no Access-Control-Allow-Origin: a
	// web page must not register clients, mint or inspect tokens through
	// a user's browser.
	public := func(path string, h http.HandlerFunc) {
		mux.Handle("GET "+path, cors(h))
		mux.Handle("OPTIONS "+path, cors(http.HandlerFunc(preflight)))
	}
	public(pathMetadata, i.serveMetadata)
	public(pathOpenIDConfiguration, i.serveMetadata)
	public(pathJWKS, i.serveJWKS)
	mux.HandleFunc("POST "+pathToken, i.serveToken)
	mux.HandleFunc("POST "+pathDeviceAuthorization, i.serveDeviceAuthorization)
	mux.HandleFunc("POST "+pathRevoke, i.serveRevoke)
	mux.HandleFunc("POST "+pathIntrospect, i.serveIntrospect)
	mux.HandleFunc("POST "+pathRegister, i.serveRegister)

	// HTML forms refuse cross-origin posts (CSRF), on top of their
	// single-use nonce.
	csrf := http.NewCrossOriginProtection()
	mux.HandleFunc("GET "+pathAuthorize, i.serveAuthorize)
	mux.Handle("POST "+pathConsent, csrf.Handler(http.HandlerFunc(i.serveConsent)))
	mux.HandleFunc("GET "+pathDevice, i.serveDevicePage)
	mux.Handle("POST "+pathDevice, csrf.Handler(http.HandlerFunc(i.serveDeviceDecision)))
	mux.HandleFunc("GET "+pathLogin, i.serveLogin)
	mux.Handle("POST "+pathLogin, csrf.Handler(http.HandlerFunc(i.serveDevLogin)))
	mux.HandleFunc("GET "+pathLoginCallback, i.serveLoginCallback)
	mux.Handle("POST "+pathLogout, csrf.Handler(http.HandlerFunc(i.serveLogout)))
	return mux
}

func cors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		h.ServeHTTP(w, r)
	})
}

func preflight(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Methods", "GET")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

func (i *Issuer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, i.Metadata())
}

// serveJWKS publishes every signing key whose tokens may still live: the
// current one and those rotated out less than a token lifetime ago.
func (i *Issuer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	keys, err := i.publicKeys(r.Context())
	if err != nil {
		writeError(w, i.storeFailed(err))
		return
	}
	writeJSON(w, http.StatusOK, keys)
}

// oauthError is an RFC 6749 §5.2 error response with its HTTP status.
type oauthError struct {
	status int
	body   wire.OAuthError
	basic  bool // the client tried HTTP Basic: answer with a challenge
	// nonce is sent as DPoP-Nonce (RFC 9449 §8).
	nonce string
	// retryAfter, in seconds, is sent as Retry-After.
	retryAfter string
}

func badRequest(code, desc string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, body: wire.OAuthError{Code: code, Description: wire.ErrorDescription(desc)}}
}

// writeJSON writes v with Cache-Control: no-store (RFC 6749 §5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError writes an RFC 6749 §5.2 error; a failed Basic client
// authentication gets 401 with a WWW-Authenticate challenge.
func writeError(w http.ResponseWriter, e *oauthError) {
	if e.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="agentauth"`)
	}
	if e.nonce != "" {
		w.Header().Set(wire.HeaderDPoPNonce, e.nonce)
	}
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	writeJSON(w, e.status, e.body)
}

// parseForm reads an application/x-www-form-urlencoded POST body (never the
// query string) and refuses a repeated parameter (RFC 6749 §3.2). resource
// may repeat (RFC 8707 §2) and is checked by its reader.
func parseForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		return nil, badRequest("invalid_request", "the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, badRequest("invalid_request", "the request body is too large")
		}
		return nil, badRequest("invalid_request", "cannot parse the request body")
	}
	if e := checkRepeats(r.PostForm); e != nil {
		return nil, e
	}
	return r.PostForm, nil
}

func checkRepeats(v url.Values) *oauthError {
	for k, vs := range v {
		if len(vs) > 1 && k != "resource" {
			return badRequest("invalid_request", fmt.Sprintf("parameter %q is repeated", k))
		}
	}
	return nil
}

// randomToken returns 256 random bits, base64url: codes, refresh tokens,
// device codes, client secrets and page nonces.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// randomID returns 128 random bits, base64url: jti and client_id.
func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
