package flows

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentauth/agentauth/wire"
)

// ClientName is the client_name agentauth registers under.
const ClientName = "agentauth"

// LoopbackRedirectURIs are the port-less loopback redirect URIs a native
// client registers: the authorization server must accept them with any port
// (RFC 8252 §7.3), so one registration serves every --callback-port.
var LoopbackRedirectURIs = []string{"http://127.0.0.1/callback", "http://localhost/callback"}

// RegistrationRequest describes the public native client to register.
type RegistrationRequest struct {
	// ClientName defaults to ClientName.
	ClientName string
	// RedirectURIs default to LoopbackRedirectURIs.
	RedirectURIs []string
	// Device also asks for the device code grant (RFC 8628).
	Device bool
}

// Registration is the authorization server's answer (RFC 7591 §3.2.1).
type Registration struct {
	ClientID string `json:"client_id"`
	// ClientSecret is set when the AS made the client confidential anyway.
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientSecretExpiresAt is a Unix time; 0 means never.
	ClientSecretExpiresAt int64 `json:"client_secret_expires_at,omitempty"`
	// TokenEndpointAuthMethod is what the AS registered; Register fills it
	// when the AS leaves it out (client_secret_basic with a secret, RFC 7591
	// §2; none without).
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	RedirectURIs            []string `json:"redirect_uris,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
}

// Client returns the registered client.
func (r *Registration) Client() Client {
	return Client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.TokenEndpointAuthMethod}
}

// Register registers agentauth as a public native client (RFC 7591 §3.1):
// token_endpoint_auth_method none, the authorization code and refresh token
// grants (and the device code grant when asked), loopback redirect URIs.
// A refusal wraps ErrRegistrationRefused and the AS's *wire.OAuthError
// (RFC 7591 §3.2.2).
func Register(ctx context.Context, hc *http.Client, registrationEndpoint string, req RegistrationRequest) (*Registration, error) {
	if registrationEndpoint == "" {
		return nil, fmt.Errorf("cannot register a client: the authorization server has no registration_endpoint")
	}
	if _, err := checkURL("registration_endpoint", registrationEndpoint); err != nil {
		return nil, fmt.Errorf("cannot register a client: %w", err)
	}
	// Our own POST: x/oauth2 does not implement RFC 7591 registration.
	grants := []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken}
	if req.Device {
		grants = append(grants, wire.GrantDeviceCode)
	}
	redirects := req.RedirectURIs
	if len(redirects) == 0 {
		redirects = LoopbackRedirectURIs
	}
	body, _ := json.Marshal(struct {
		ClientName              string   `json:"client_name"`
		RedirectURIs            []string `json:"redirect_uris"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		ApplicationType         string   `json:"application_type"` // OpenID Connect Dynamic Registration §2
	}{cmp.Or(req.ClientName, ClientName), redirects, grants, []string{"code"}, AuthMethodNone, "native"})
	hreq, err := http.NewRequest(http.MethodPost, registrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, respBody, err := do(ctx, guard(hc), hreq, DefaultFetchTimeout)
	if err != nil {
		return nil, fmt.Errorf("cannot register a client: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("cannot register a client: %w: %w", ErrRegistrationRefused, oauthError(resp, respBody))
	}
	var r Registration
	if err := json.Unmarshal(respBody, &r); err != nil {
		return nil, fmt.Errorf("cannot read the registration from %s: %w", registrationEndpoint, err)
	}
	if r.ClientID == "" {
		return nil, fmt.Errorf("cannot register a client: the answer of %s has no client_id", registrationEndpoint)
	}
	if r.TokenEndpointAuthMethod == "" {
		r.TokenEndpointAuthMethod = AuthMethodNone
		if r.ClientSecret != "" {
			r.TokenEndpointAuthMethod = AuthMethodClientSecretBasic
		}
	}
	return &r, nil
}
