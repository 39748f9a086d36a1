package flows

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentauth/agentauth/wire"
)

// CodeExchange is the token request of an authorization code grant run by
// a server for its own redirect URI (RFC 6749 §4.1.3), as serve's broker
// does for an upstream API; AuthorizationCode runs the whole grant for a
// loopback client instead.
type CodeExchange struct {
	TokenEndpoint string
	Client        Client
	Code          string
	RedirectURI   string
	// Verifier is the PKCE code_verifier (RFC 7636 §4.5); empty for an
	// authorization server without PKCE.
	Verifier string
	// Resource is sent as the RFC 8707 resource indicator when not empty.
	Resource string
	// Scopes were requested: they are kept when the answer has no scope.
	Scopes []string
}

// ExchangeCode redeems an authorization code, checking the answer exactly
// as every other grant's (requestToken).
func ExchangeCode(ctx context.Context, hc *http.Client, req CodeExchange) (*Token, error) {
	form := url.Values{"grant_type": {wire.GrantAuthorizationCode}, "code": {req.Code}, "redirect_uri": {req.RedirectURI}}
	if req.Verifier != "" {
		form.Set("code_verifier", req.Verifier)
	}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	t, err := requestToken(ctx, hc, req.TokenEndpoint, req.Client, form, req.Scopes)
	if err != nil {
		return nil, fmt.Errorf("cannot exchange the authorization code: %w", err)
	}
	return t, nil
}
