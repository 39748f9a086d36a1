package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// machineClient is the pre-registered client of a login without a user
// (client credentials, JWT bearer): a private key signs client assertions
// (private_key_jwt, RFC 7523 §2.2), else a secret goes the way the server
// accepts (flows.ChooseAuthMethod), else (public, allowed for the JWT
// bearer grant only) the client_id goes alone.
func machineClient(md *wire.AuthServerMetadata, req LoginRequest, public bool) (*store.ClientRegistration, error) {
	reg := &store.ClientRegistration{ClientID: req.ClientID, Source: clientSourcePreregistered}
	switch {
	case req.ClientID == "":
		return nil, Usagef("a login without a user needs --client-id")
	case req.PrivateKey == "" && req.ClientSecret == "" && public:
		reg.AuthMethod = flows.AuthMethodNone
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
	reg, err := machineClient(md, req, false)
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
	cs.Logger.Debug("renewing the access token by running its grant again", "grant", c.Grant, "resource", c.Resource, "issuer", c.Issuer)
	var tok *flows.Token
	var err error
	switch c.Grant {
	case GrantEnterprise:
		var subject string
		if subject, err = ReadAssertion(c.AssertionSource); err != nil {
			return nil, &AuthError{Err: fmt.Errorf("cannot renew the token for %s: %w", DescribeKey(c.Key), err), Hint: hint}
		}
		idp := IdP{TokenEndpoint: c.IdPTokenEndpoint, ClientID: c.IdPClientID}
		tok, err = enterpriseToken(ctx, cs.HTTPClient, idp, subject, c.Issuer, c.TokenEndpoint, client, c.Scopes, resource)
	case flows.GrantJWTBearer:
		var assertion string
		if assertion, err = ReadAssertion(c.AssertionSource); err != nil {
			return nil, &AuthError{Err: fmt.Errorf("cannot renew the token for %s: %w", DescribeKey(c.Key), err), Hint: hint}
		}
		tok, err = flows.JWTBearer(ctx, cs.HTTPClient, flows.JWTBearerRequest{
			TokenEndpoint: c.TokenEndpoint, Client: client, Assertion: assertion, Scopes: c.Scopes, Resource: resource,
		})
	default:
		tok, err = flows.ClientCredentials(ctx, cs.HTTPClient, flows.ClientCredentialsRequest{
			TokenEndpoint: c.TokenEndpoint, Client: client, Scopes: c.Scopes, Resource: resource,
		})
	}
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

// Assertion sources (login --assertion-file, --assertion-env), stored with
// the credential so that a renewal reads the platform's current token.
const (
	assertionFromFile = "file:"
	assertionFromEnv  = "env:"
	// maxAssertionBytes bounds an assertion read from a file.
	maxAssertionBytes = 64 << 10
)

// AssertionFromFile and AssertionFromEnv name where a JWT bearer
// assertion is read.
func AssertionFromFile(path string) string { return assertionFromFile + path }
func AssertionFromEnv(name string) string  { return assertionFromEnv + name }

// ReadAssertion reads the assertion of source: a file's content or an
// environment variable's value, trimmed. An empty source is an assertion
// given on stdin at login, which cannot be read again.
func ReadAssertion(source string) (string, error) {
	var raw string
	switch {
	case source == "":
		return "", errors.New("the identity assertion was read from stdin at login and cannot be read again: log in again")
	case strings.HasPrefix(source, assertionFromFile):
		path := strings.TrimPrefix(source, assertionFromFile)
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("cannot read the assertion: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxAssertionBytes+1))
		if err != nil {
			return "", fmt.Errorf("cannot read the assertion: %w", err)
		}
		if len(b) > maxAssertionBytes {
			return "", fmt.Errorf("cannot read the assertion: %s is larger than %d bytes", path, maxAssertionBytes)
		}
		raw = string(b)
	case strings.HasPrefix(source, assertionFromEnv):
		name := strings.TrimPrefix(source, assertionFromEnv)
		raw = os.Getenv(name)
		if raw == "" {
			return "", fmt.Errorf("cannot read the assertion: $%s is empty\nRun agentauth where the platform sets it, or log in again with --assertion-file.", name)
		}
	default:
		return "", fmt.Errorf("cannot read the assertion: unknown source %q", source)
	}
	a := strings.TrimSpace(raw)
	if a == "" {
		return "", errors.New("cannot read the assertion: it is empty")
	}
	return a, nil
}

// jwtBearerGrant runs the JWT bearer grant (RFC 7523 §2.1) with a
// platform's workload token (login --assertion-file, --assertion-env).
func (cl *Client) jwtBearerGrant(ctx context.Context, md *wire.AuthServerMetadata, req LoginRequest, scopes []string, resource string) (*flows.Token, *store.ClientRegistration, error) {
	reg, err := machineClient(md, req, true)
	if err != nil {
		return nil, nil, err
	}
	c := clientOf(*reg)
	c.Audience, c.DPoP = md.Issuer, req.dpop
	assertion := req.Assertion
	if assertion == "" {
		if assertion, err = ReadAssertion(req.AssertionSource); err != nil {
			return nil, nil, err
		}
	}
	var tok *flows.Token
	if req.IdP.TokenEndpoint != "" {
		tok, err = enterpriseToken(ctx, cl.HTTPClient, req.IdP, assertion, md.Issuer, md.TokenEndpoint, c, scopes, resource)
	} else {
		tok, err = flows.JWTBearer(ctx, cl.HTTPClient, flows.JWTBearerRequest{
			TokenEndpoint: md.TokenEndpoint, Client: c, Assertion: assertion, Scopes: scopes, Resource: resource,
		})
	}
	if err != nil {
		return nil, nil, loginError(err, req.Target, req.Requirement.SchemeID)
	}
	return tok, reg, nil
}

// GrantEnterprise marks a credential of enterprise-managed authorization:
// renewed by exchanging the identity assertion again.
const GrantEnterprise = "enterprise-managed"

// IdP is the enterprise identity provider of enterprise-managed
// authorization (login --idp-token-endpoint, --idp-client-id).
type IdP struct {
	TokenEndpoint string
	ClientID      string
}

// enterpriseToken exchanges the user's identity assertion (an ID token from
// the enterprise IdP) at the IdP for an ID-JAG for the
// issuer and resource (RFC 8693), then the ID-JAG at the authorization
// server's token endpoint with the JWT bearer grant (RFC 7523 §2.1), as the
// MCP extension enterprise-managed-authorization defines it.
func enterpriseToken(ctx context.Context, hc *http.Client, idp IdP, subject, issuer, tokenEndpoint string, c flows.Client, scopes []string, resource string) (*flows.Token, error) {
	jag, err := flows.TokenExchange(ctx, hc, flows.TokenExchangeRequest{
		TokenEndpoint: idp.TokenEndpoint, Client: flows.Client{ID: idp.ClientID},
		SubjectToken: subject, SubjectTokenType: flows.TokenTypeIDToken, RequestedTokenType: flows.TokenTypeIDJAG,
		Audience: issuer, Resource: resource, Scopes: scopes,
	})
	if err != nil {
		return nil, err
	}
	return flows.JWTBearer(ctx, hc, flows.JWTBearerRequest{TokenEndpoint: tokenEndpoint, Client: c, Assertion: jag, Scopes: scopes, Resource: resource})
}
