package client

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/wire"
)

// Endpoints are an authorization server's endpoints given by the user
// (login --authorization-endpoint …), for a server that publishes no RFC
// 8414 or OpenID Connect metadata.
type Endpoints struct {
	Authorization, Token, DeviceAuthorization, Revocation string
}

// Set reports whether any endpoint was given.
func (e Endpoints) Set() bool {
	return e != Endpoints{}
}

// legacyMetadata stands in for the metadata of r's authorization server,
// which discovery did not find, with the given endpoints: issuer is the
// server r names, so that the credential is found for r like any other.
// Nothing in it could be verified; PKCE S256 is still sent (a server that
// does not know it ignores it, RFC 7636 §5).
func legacyMetadata(r *RequirementInfo, e Endpoints) (*wire.AuthServerMetadata, string) {
	issuer := e.Authorization
	if len(r.AuthorizationServers) > 0 {
		issuer = r.AuthorizationServers[0]
	}
	warning := fmt.Sprintf("%s publishes no authorization server metadata: using the endpoints given on the command line; nothing about this server could be verified (issuer, PKCE support, client authentication).", issuer)
	return &wire.AuthServerMetadata{Issuer: issuer, AuthorizationEndpoint: e.Authorization, TokenEndpoint: e.Token,
		DeviceAuthorizationEndpoint: e.DeviceAuthorization, RevocationEndpoint: e.Revocation,
		CodeChallengeMethodsSupported: []string{"S256"}}, warning
}

// guessedRegistrationError is a failed registration at the MCP 2025-03-26
// default /register of a server without metadata: most such servers have
// no OAuth at that path at all, so it says so (status only, never their
// HTML) and is an ErrNoAuthServerMetadata, whose hint names the endpoint
// flags and --client-id (NextSteps).
func guessedRegistrationError(md *wire.AuthServerMetadata, err error) error {
	why := err.Error()
	var se *flows.HTTPStatusError
	if errors.As(err, &se) {
		why = fmt.Sprintf("HTTP %d", se.StatusCode)
	}
	return fmt.Errorf("cannot log in: %s publishes no OAuth metadata, and the MCP 2025-03-26 default registration endpoint %s did not register a client (%s): %w",
		md.Issuer, md.RegistrationEndpoint, why, flows.ErrNoAuthServerMetadata)
}

// guessedEndpointError is a failed login at the MCP 2025-03-26 default
// endpoints of a server without metadata: when they do not answer as
// OAuth endpoints (checked before the browser opens), it says so and is an
// ErrNoAuthServerMetadata, whose hint names the endpoint flags; any other
// failure is loginError's.
func guessedEndpointError(md *wire.AuthServerMetadata, err error, target, schemeID string) error {
	var se *flows.HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound && se.StatusCode != http.StatusMethodNotAllowed {
		return loginError(err, target, schemeID)
	}
	return fmt.Errorf("cannot log in: %s publishes no OAuth metadata, and the MCP 2025-03-26 default endpoints are not there (HTTP %d from %s): %w",
		md.Issuer, se.StatusCode, se.URL, flows.ErrNoAuthServerMetadata)
}
