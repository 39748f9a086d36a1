package client

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// clientCredentialsClient is the pre-registered confidential client of a
// client credentials login: a private key signs client assertions
// (private_key_jwt, RFC 7523 §2.2), else the secret goes the way the
// server accepts (flows.ChooseAuthMethod).
func clientCredentialsClient(md *wire.AuthServerMetadata, req LoginRequest) (*store.ClientRegistration, error) {
	reg := &store.ClientRegistration{ClientID: req.ClientID, Source: clientSourcePreregistered}
	switch {
	case req.ClientID == "":
		return nil, Usagef("--client-credentials needs --client-id")
	case req.PrivateKey != "":
		if _, _, err := flows.ParsePrivateKey([]byte(req.PrivateKey)); err != nil {
			return nil, Usagef("--private-key: %v", err)
		}
		if ms := md.TokenEndpointAuthMethodsSupported; len(ms) > 0 && !slices.Contains(ms, flows.AuthMethodPrivateKeyJWT) {
			return nil, fmt.Errorf("cannot use client %s with %s: %w: it accepts %v, not %s\nUse --client-secret-stdin with a client secret instead.",
				req.ClientID, md.Issuer, flows.ErrNoAuthMethod, ms, flows.AuthMethodPrivateKeyJWT)
		}
		reg.AuthMethod, reg.PrivateKey = flows.AuthMethodPrivateKeyJWT, req.PrivateKey
	case req.ClientSecret != "":
		method, err := flows.ChooseAuthMethod(md.TokenEndpointAuthMethodsSupported, true)
		if err != nil {
			return nil, fmt.Errorf("cannot use client %s with %s: %w", req.ClientID, md.Issuer, err)
		}
		reg.AuthMethod, reg.ClientSecret = method, req.ClientSecret
	default:
		return nil, Usagef("--client-credentials needs --client-secret-stdin or --private-key")
	}
	return reg, nil
}

// clientCredentialsGrant runs the client credentials grant (RFC 6749
// §4.4) for login --client-credentials: no browser, no user.
func (cl *Client) clientCredentialsGrant(ctx context.Context, md *wire.AuthServerMetadata, req LoginRequest, scopes []string, resource string) (*flows.Token, *store.ClientRegistration, error) {
	reg, err := clientCredentialsClient(md, req)
	if err != nil {
		return nil, nil, err
	}
	c := clientOf(*reg)
	c.Audience, c.DPoP = md.Issuer, req.dpop
	tok, err := flows.ClientCredentials(ctx, cl.HTTPClient, flows.ClientCredentialsRequest{
		TokenEndpoint: md.TokenEndpoint, Client: c, Scopes: scopes, Resource: resource,
	})
	if err != nil {
		return nil, nil, loginError(err, req.Target, req.Requirement.SchemeID)
	}
	return tok, reg, nil
}

// renew gets a new token for a client credentials credential by running
// the grant again (RFC 6749 §4.4.3: no refresh token). A refusal marks the
// credential rejected, as a refused refresh does.
func (cs *Credentials) renew(ctx context.Context, c *store.Credential, hint string) (*store.Credential, error) {
	resource := c.Resource
	if c.NoResource {
		resource = ""
	}
	client := withDPoP(clientOf(c.Client), c)
	client.Audience = c.Issuer
	cs.Logger.Debug("renewing the access token with the client credentials grant", "resource", c.Resource, "issuer", c.Issuer)
	tok, err := flows.ClientCredentials(ctx, cs.HTTPClient, flows.ClientCredentialsRequest{
		TokenEndpoint: c.TokenEndpoint, Client: client, Scopes: c.Scopes, Resource: resource,
	})
	var oe *wire.OAuthError
	if errors.As(err, &oe) {
		rejected := *c
		rejected.Rejected = oe.Code
		if perr := cs.Store.Put(ctx, &rejected); perr != nil {
			cs.Logger.Debug("cannot mark the rejected credential", "resource", c.Resource, "err", perr)
		}
		return nil, &AuthError{Err: fmt.Errorf("cannot renew the token for %s: %w", DescribeKey(c.Key), err), Hint: hint}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot renew the token for %s: %w", DescribeKey(c.Key), err)
	}
	return cs.saveToken(ctx, c, tok)
}
