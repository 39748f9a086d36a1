package flows

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentauth/agentauth/wire"
)

// ClientCredentialsRequest is a client credentials grant (RFC 6749 §4.4):
// a confidential client asks for a token for itself, with no user and no
// browser.
type ClientCredentialsRequest struct {
	TokenEndpoint string
	// Client must authenticate: client_secret_basic, client_secret_post
	// or private_key_jwt.
	Client Client
	Scopes []string
	// Resource is sent as the RFC 8707 resource indicator when not empty.
	Resource string
}

// ClientCredentials runs the client credentials grant (RFC 6749 §4.4.2).
// Its token has no refresh token (§4.4.3): the grant is run again instead.
func ClientCredentials(ctx context.Context, hc *http.Client, req ClientCredentialsRequest) (*Token, error) {
	if req.Client.method() == AuthMethodNone {
		return nil, fmt.Errorf("cannot run the client credentials grant: client %s has no secret or private key (RFC 6749 §4.4 needs a confidential client)", req.Client.ID)
	}
	form := url.Values{"grant_type": {wire.GrantClientCredentials}}
	if len(req.Scopes) > 0 {
		form.Set("scope", wire.JoinScope(req.Scopes))
	}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	t, err := requestToken(ctx, hc, req.TokenEndpoint, req.Client, form, req.Scopes)
	if err != nil {
		return nil, fmt.Errorf("cannot get a token with the client credentials grant: %w", err)
	}
	t.RefreshToken = ""
	return t, nil
}
