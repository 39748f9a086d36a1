package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// What Revoke did at the authorization server.
const (
	RevokedAtServer = "revoked"
	// RevokeNoEndpoint: the issuer has no revocation_endpoint.
	RevokeNoEndpoint = "no_endpoint"
	// RevokeSkipped: local only, or already deleted.
	RevokeSkipped = "skipped"
	RevokeFailed  = "failed"
)

// errUnsupportedTokenType is the RFC 7009 §2.2.1 answer of a server that
// does not revoke tokens of the given type.
const errUnsupportedTokenType = "unsupported_token_type"

// RevokeResult is what happened to one credential.
type RevokeResult struct {
	Resource           string `json:"resource"`
	Issuer             string `json:"issuer"`
	SchemeID           string `json:"schemeId,omitempty"`
	RevocationEndpoint string `json:"revocationEndpoint,omitempty"`
	Server             string `json:"server"`
	Deleted            bool   `json:"deleted"`
	Message            string `json:"message,omitempty"`
	// Name labels the credential: its scheme id, else its resource.
	Name string `json:"-"`
	// ClientRefused: the server refused the client itself
	// (invalid_client, RFC 6749 §5.2): trying again cannot help.
	ClientRefused bool `json:"-"`
}

// Revoke revokes and deletes the credentials stored for target (only
// schemeID's when not empty; only those logged in through target when
// there are any: an MCP URL is also the resource of the agent host
// credentials logged in through ws:// or stdio:). With localOnly nothing
// is sent. A revocation that fails keeps its credential (Server is
// RevokeFailed); only store errors and an empty selection are errors, with
// the results so far.
func (cl *Client) Revoke(ctx context.Context, target, schemeID string, localOnly bool) ([]RevokeResult, error) {
	cs, err := cl.Credentials()
	if err != nil {
		return nil, err
	}
	creds, err := cs.ForTarget(ctx, target, schemeID)
	if err != nil {
		return nil, err
	}
	creds = LoggedInThrough(creds, target)
	if len(creds) == 0 {
		what := wire.RedactTarget(target)
		if schemeID != "" {
			what += " (scheme " + schemeID + ")"
		}
		// The same exit as token's for the same situation (4: nothing
		// usable stored), without a login hint: nothing is to be undone.
		return nil, &AuthError{Err: fmt.Errorf("cannot revoke: no stored credential for %s", what)}
	}
	var out []RevokeResult
	for _, c := range creds {
		res, err := cl.revoke(ctx, cs, c, localOnly)
		if err != nil {
			return out, err
		}
		res.Name = nameOf(c.Key)
		out = append(out, res)
	}
	return out, nil
}

// revoke revokes one credential (RFC 7009 §2.1: the refresh token first,
// which at most servers ends the whole grant, then the access token) and
// deletes it, all under the credential's store lock so that no refresh
// running meanwhile can put it back. A revocation that fails keeps the
// credential; only store errors are returned.
func (cl *Client) revoke(ctx context.Context, cs *Credentials, stale *store.Credential, localOnly bool) (RevokeResult, error) {
	res := RevokeResult{Resource: stale.Resource, Issuer: stale.Issuer, SchemeID: stale.SchemeID}
	unlock, err := cs.Store.Lock(ctx, stale.Key)
	if err != nil {
		return res, fmt.Errorf("cannot lock the credential for %s: %w", DescribeKey(stale.Key), err)
	}
	defer unlock()
	c, err := cs.Store.Get(ctx, stale.Key)
	if errors.Is(err, store.ErrNotFound) {
		res.Server, res.Deleted, res.Message = RevokeSkipped, true, "already deleted"
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("cannot read the credential for %s: %w", DescribeKey(stale.Key), err)
	}
	res.RevocationEndpoint = c.RevocationEndpoint
	where := "from the " + cs.Store.Kind() + " store"
	switch {
	case localOnly:
		res.Server = RevokeSkipped
		res.Message = "deleted " + where + " (not revoked: " + stillValid(c, cl.Now()) + ")"
	case c.RevocationEndpoint == "":
		res.Server = RevokeNoEndpoint
		res.Message = "deleted " + where + "; " + c.Issuer + " has no revocation endpoint, so " + stillValid(c, cl.Now())
	default:
		client := clientOf(c.Client)
		res.Server = RevokedAtServer
		res.Message = "revoked at " + c.RevocationEndpoint + " and deleted " + where
		for _, t := range []struct{ token, hint string }{
			{c.RefreshToken, flows.HintRefreshToken},
			{c.AccessToken, flows.HintAccessToken},
		} {
			if t.token == "" {
				continue
			}
			err := flows.Revoke(ctx, cl.HTTPClient, flows.RevokeRequest{Endpoint: c.RevocationEndpoint, Client: client, Token: t.token, TokenTypeHint: t.hint})
			var oe *wire.OAuthError
			if t.hint == flows.HintAccessToken && errors.As(err, &oe) && oe.Code == errUnsupportedTokenType {
				// RFC 7009 §2.2.1: the server does not revoke access
				// tokens (JWTs, typically); asking again cannot help.
				res.Message = "deleted " + where + "; " + c.Issuer + " does not revoke access tokens (unsupported_token_type), so the access token stays valid until it expires"
				if left := c.Expiry.Sub(cl.Now()); !c.Expiry.IsZero() && left > 0 {
					res.Message += " (in " + RoughDuration(left) + ")"
				}
				if c.RefreshToken != "" {
					res.Message = "refresh token revoked at " + c.RevocationEndpoint + "; " + res.Message
				}
				cl.UI.Warn(res.Message)
				break
			}
			if err != nil {
				res.Server, res.Message = RevokeFailed, err.Error()+"; the credential is kept"
				res.ClientRefused = errors.Is(err, flows.ErrInvalidClient) || errors.As(err, &oe) && oe.Code == "invalid_client"
				return res, nil
			}
		}
	}
	if err := cs.Store.Delete(ctx, c.Key); err != nil {
		return res, fmt.Errorf("cannot delete the credential for %s: %w", DescribeKey(c.Key), err)
	}
	res.Deleted = true
	return res, nil
}

// stillValid says for how long the tokens of a credential that was not
// revoked stay usable by whoever holds a copy.
func stillValid(c *store.Credential, now time.Time) string {
	s := "the access token stays valid until it expires"
	if left := c.Expiry.Sub(now); !c.Expiry.IsZero() && left > 0 {
		s += " (in " + RoughDuration(left) + ")"
	}
	if c.RefreshToken != "" {
		s += ", the refresh token until the authorization server drops it"
	}
	return s
}

// nameOf labels a credential in one-line results: its scheme id, else its
// resource.
func nameOf(k store.Key) string {
	if k.SchemeID != "" {
		return k.SchemeID
	}
	return k.Resource
}
