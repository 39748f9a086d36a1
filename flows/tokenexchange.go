package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentauth/agentauth/wire"
)

// Token exchange (RFC 8693) and the identity assertion authorization
// grant of enterprise-managed authorization (MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization, SEP-990).
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeIDToken is an OpenID Connect ID token (RFC 8693 §3).
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	// TokenTypeIDJAG is an identity assertion JWT authorization grant.
	TokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
)

// TokenExchangeRequest asks an enterprise IdP's token endpoint for an
// ID-JAG for the MCP authorization server (Audience) and resource.
type TokenExchangeRequest struct {
	TokenEndpoint string
	// Client is the client at the IdP.
	Client           Client
	SubjectToken     string
	SubjectTokenType string
	// RequestedTokenType is what is asked for (TokenTypeIDJAG).
	RequestedTokenType string
	Audience, Resource string
	Scopes             []string
}

// TokenExchange runs the token exchange grant (RFC 8693 §2.1) and returns
// the issued token, which must be of the requested type (§2.2.1).
func TokenExchange(ctx context.Context, hc *http.Client, req TokenExchangeRequest) (string, error) {
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
		return "", fmt.Errorf("cannot exchange the token at the identity provider: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("cannot exchange the token at the identity provider: %w", grantError(oauthError(resp, body)))
	}
	var tr struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return "", fmt.Errorf("cannot read the token exchange response of %s: %w", req.TokenEndpoint, err)
	}
	switch {
	case tr.AccessToken == "":
		return "", errors.New("the identity provider's token exchange response has no access_token")
	case tr.IssuedTokenType != req.RequestedTokenType:
		return "", fmt.Errorf("the identity provider issued a %s, not the %s asked for", quote(tr.IssuedTokenType), req.RequestedTokenType)
	}
	return tr.AccessToken, nil
}
