package issuer

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// Bounds on one registration.
const (
	// maxRedirectURIs bounds the redirect URIs of one registration.
	maxRedirectURIs = 20
	// maxRegistrationBytes bounds the client metadata document.
	maxRegistrationBytes = 8 << 10
)

// registration is the RFC 7591 §2 client metadata the issuer understands;
// anything else is ignored, as §2 requires.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name,omitempty"`
	// JWKS are a private_key_jwt client's public keys (inline only: a
	// jwks_uri is refused).
	JWKS    json.RawMessage `json:"jwks,omitempty"`
	JWKSURI string          `json:"jwks_uri,omitempty"`
}

// registrationResponse is the RFC 7591 §3.2.1 response.
type registrationResponse struct {
	ClientID              string `json:"client_id"`
	ClientSecret          string `json:"client_secret,omitempty"`
	ClientIDIssuedAt      int64  `json:"client_id_issued_at"`
	ClientSecretExpiresAt *int64 `json:"client_secret_expires_at,omitempty"`
	registration
}

// serveRegister is the open dynamic client registration endpoint
// (RFC 7591 §3). Defaults follow §2: client_secret_basic, the
// authorization_code grant, the code response type. Public clients
// (token_endpoint_auth_method none) get no secret; confidential ones get a
// generated secret that never expires.
func (i *Issuer) serveRegister(w http.ResponseWriter, r *http.Request) {
	resp, e := i.register(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (i *Issuer) register(w http.ResponseWriter, r *http.Request) (*registrationResponse, *oauthError) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return nil, badRequest("invalid_client_metadata", "the body must be application/json")
	}
	// Read through a plain limit rather than http.MaxBytesReader: a
	// refused body then does not close the connection, which net/http
	// holds for half a second, so a flood of large bodies costs little.
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistrationBytes+1))
	if err != nil {
		return nil, badRequest("invalid_client_metadata", "cannot read the client metadata")
	}
	if len(body) > maxRegistrationBytes {
		return nil, badRequest("invalid_client_metadata", fmt.Sprintf("the client metadata is larger than %d bytes", maxRegistrationBytes))
	}
	var m registration
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, badRequest("invalid_client_metadata", "cannot decode the client metadata: "+err.Error())
	}
	if e := i.checkRegistration(&m); e != nil {
		return nil, e
	}
	resp := &registrationResponse{ClientID: randomID(), registration: m}
	c := &client{
		id:           resp.ClientID,
		name:         m.ClientName,
		authMethod:   m.TokenEndpointAuthMethod,
		redirectURIs: m.RedirectURIs,
		grantTypes:   m.GrantTypes,
	}
	if len(m.JWKS) > 0 {
		c.jwks, _ = checkJWKS(m.JWKS) // checked by checkRegistration
	}
	if c.hasSecret() {
		resp.ClientSecret = randomToken()
		c.secretHash = sha256.Sum256([]byte(resp.ClientSecret))
		resp.ClientSecretExpiresAt = new(int64)
	}
	now := i.clock(r.Context())
	c.registered, c.lastActive = true, now
	full := false
	var limited *bounded.FullError
	source := sourceOf(r)
	err = i.store.Update(r.Context(), func(tx state.Tx) error {
		full, limited = false, nil
		limit := i.opts.Limits.Clients
		n, err := tx.Count(kindClient, limit)
		if err == nil && n >= limit {
			_, err = tx.DeleteExpired(kindClient, now, limit)
			if err == nil {
				n, err = tx.Count(kindClient, limit)
			}
		}
		if err != nil {
			return err
		}
		if full = n >= limit; full {
			return nil
		}
		// Registrations are bounded per source and window too, so one
		// source's flood cannot fill the issuer for everyone.
		err = bounded.PutTx(tx, kindRegSource, i.opts.Limits.Registrations, source, c.id, []byte("{}"), now.Add(i.opts.Limits.RegistrationWindow), now)
		if f, ok := errors.AsType[*bounded.FullError](err); ok {
			limited = f
			return nil
		}
		if err != nil {
			return err
		}
		return i.putClientTx(tx, c)
	})
	if err != nil {
		return nil, i.storeFailed(err)
	}
	if limited != nil {
		i.log.Warn("issuer: registration refused, too many from one source", "source", source, "err", limited)
		e := limitError(limited, "registrations")
		e.body.Description = fmt.Sprintf("more than %d clients were registered from %s within %s; reuse a registered client, or retry in %s seconds",
			i.opts.Limits.Registrations.PerOwner, source, i.opts.Limits.RegistrationWindow, limited.RetrySeconds())
		if !limited.Owner {
			e.body.Description = fmt.Sprintf("clients were registered from more than %d sources within %s; reuse a registered client, or retry in %s seconds",
				limited.Limit, i.opts.Limits.RegistrationWindow, limited.RetrySeconds())
		}
		return nil, e
	}
	if full {
		i.log.Warn("issuer: registration refused, too many registered clients", "max", i.opts.Limits.Clients)
		return nil, &oauthError{status: http.StatusServiceUnavailable, body: wire.OAuthError{Code: "temporarily_unavailable", Description: fmt.Sprintf(
			"the issuer already holds %d registered clients; clients never issued a token are dropped %s after their last request. Reuse a registered client, or wait for unused ones to expire", i.opts.Limits.Clients, unusedClientTTL)}}
	}
	resp.ClientIDIssuedAt = now.Unix()
	i.log.Info("issuer: client registered", "client_id", c.id, "auth_method", c.authMethod)
	return resp, nil
}

// checkRegistration applies the RFC 7591 §2 defaults, sets response_types
// from the grant types (§2.1: code for the authorization_code grant only,
// fixing up an inconsistent request) and checks: known auth method, grant
// and response types, and redirect URIs (checkRedirectURI).
func (i *Issuer) checkRegistration(m *registration) *oauthError {
	if m.TokenEndpointAuthMethod == "" {
		m.TokenEndpointAuthMethod = AuthClientSecretBasic
	}
	if !slices.Contains(supportedAuthMethods, m.TokenEndpointAuthMethod) {
		return badRequest("invalid_client_metadata", fmt.Sprintf("token_endpoint_auth_method %q is not supported", m.TokenEndpointAuthMethod))
	}
	switch {
	case m.JWKSURI != "":
		return badRequest("invalid_client_metadata", "jwks_uri is not supported: send the public keys inline as jwks")
	case (m.TokenEndpointAuthMethod == AuthPrivateKeyJWT) != (len(m.JWKS) > 0):
		return badRequest("invalid_client_metadata", "jwks goes with token_endpoint_auth_method private_key_jwt, which needs it")
	case len(m.JWKS) > 0:
		if _, err := checkJWKS(m.JWKS); err != nil {
			return badRequest("invalid_client_metadata", err.Error())
		}
	}
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{wire.GrantAuthorizationCode}
	}
	for _, g := range m.GrantTypes {
		if !slices.Contains(supportedGrants, g) {
			return badRequest("invalid_client_metadata", fmt.Sprintf("grant type %q is not supported", g))
		}
	}
	code := slices.Contains(m.GrantTypes, wire.GrantAuthorizationCode)
	for _, rt := range m.ResponseTypes {
		if rt != "code" {
			return badRequest("invalid_client_metadata", fmt.Sprintf("response type %q is not supported", rt))
		}
	}
	// response_types follows the grant types (RFC 7591 §2.1): code with
	// the authorization_code grant, none without. An inconsistent request
	// (say code with only the device grant) is fixed up rather than
	// refused; §2 lets the server replace values, and the response shows
	// what was registered.
	m.ResponseTypes = []string{}
	if code {
		m.ResponseTypes = []string{"code"}
	}
	if utf8.RuneCountInString(m.ClientName) > maxClientName {
		return badRequest("invalid_client_metadata", fmt.Sprintf("client_name is longer than %d characters", maxClientName))
	}
	if len(m.RedirectURIs) == 0 && code {
		return badRequest("invalid_redirect_uri", "redirect_uris is required for the authorization code grant")
	}
	if len(m.RedirectURIs) > maxRedirectURIs {
		return badRequest("invalid_redirect_uri", fmt.Sprintf("more than %d redirect_uris", maxRedirectURIs))
	}
	for _, u := range m.RedirectURIs {
		if err := i.checkRedirectURI(u); err != nil {
			return badRequest("invalid_redirect_uri", err.Error())
		}
	}
	return nil
}
