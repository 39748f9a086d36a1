package client

import (
	"fmt"

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
