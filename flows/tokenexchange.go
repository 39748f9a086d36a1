package flows

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// Token exchange (RFC 8693) and the identity assertion authorization
// grant of enterprise-managed authorization (MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization, SEP-990).
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeAccessToken is an OAuth 2.0 access token (RFC 8693 §3).
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	// TokenTypeIDToken is an OpenID Connect ID token (RFC 8693 §3).
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	// TokenTypeIDJAG is an identity assertion JWT authorization grant.
	TokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
)

// TokenExchangeRequest is one RFC 8693 §2.1 request: an enterprise IdP
// asked for an ID-JAG for the MCP authorization server (Audience) and
// resource, or an authorization server asked by a gateway for an access
// token for a backend (Resource, RFC 8707) in exchange for its caller's.
type TokenExchangeRequest struct {
	TokenEndpoint string
	// Client is the client at the token endpoint.
	Client           Client
	SubjectToken     string
	SubjectTokenType string
	// RequestedTokenType is what is asked for (TokenTypeIDJAG,
	// TokenTypeAccessToken).
	RequestedTokenType string
	Audience, Resource string
	Scopes             []string
	// Party names the token endpoint's server in errors (default "the
	// identity provider").
	Party string
}

// TokenExchange runs the token exchange grant (RFC 8693 §2.1) and returns
// the issued token, which must be of the requested type (§2.2.1).
func TokenExchange(ctx context.Context, hc *http.Client, req TokenExchangeRequest) (string, error) {
	t, err := ExchangeToken(ctx, hc, req)
	if err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

// ExchangeToken runs the token exchange grant (RFC 8693 §2.1) and returns
// the issued token with its lifetime and scopes. The issued token must be
// of the requested type (§2.2.1); an access token asked for is checked as
// every token response is (RFC 6749 §5.1: Bearer, a positive expires_in),
// while another type's token_type may be "N_A" (§2.2.1). Errors of the
// server wrap *wire.OAuthError (§2.2.2); the subject token never appears
// in them.
func ExchangeToken(ctx context.Context, hc *http.Client, req TokenExchangeRequest) (*Token, error) {
	party := req.Party
	if party == "" {
		party = "the identity provider"
	}
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"subject_token":        {req.SubjectToken},
		"subject_token_type":   {req.SubjectTokenType},
		"requested_token_type": {req.RequestedTokenType},
	}
	if req.Audience != "" {
		form.Set("audience", req.Audience)
	}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	if len(req.Scopes) > 0 {
		form.Set("scope", wire.JoinScope(req.Scopes))
	}
	resp, body, err := postForm(ctx, hc, "token_endpoint", req.TokenEndpoint, req.Client, form)
	if err != nil {
		return nil, fmt.Errorf("cannot exchange the token at %s: %w", party, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot exchange the token at %s: %w", party, grantError(oauthError(resp, body)))
	}
	var tr struct {
		tokenResponse
		IssuedTokenType string `json:"issued_token_type"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return nil, fmt.Errorf("cannot read the token exchange response of %s: %w", req.TokenEndpoint, err)
	}
	switch {
	case tr.AccessToken == "":
		return nil, fmt.Errorf("%s's token exchange response has no access_token", party)
	case tr.IssuedTokenType != req.RequestedTokenType:
		return nil, fmt.Errorf("%s issued a %s, not the %s asked for", party, quote(tr.IssuedTokenType), req.RequestedTokenType)
	}
	if req.RequestedTokenType != TokenTypeAccessToken {
		return &Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType, Scopes: req.Scopes}, nil
	}
	t, err := tr.token(time.Now(), req.Scopes, false)
	if err != nil {
		return nil, fmt.Errorf("the token exchange response of %s is invalid: %w", req.TokenEndpoint, err)
	}
	return t, nil
}
