package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// ErrNoHostSignOut: the agent host or ACP agent offers no way to sign
// out (an ACP agent without logout; an AHP 0.9 host, whose credentials
// live only as long as each connection).
var ErrNoHostSignOut = errors.New("offers no sign-out")

// StoredFor lists the credentials stored for target (LoggedInThrough),
// or only scheme schemeID's: what logout deletes.
func (cl *Client) StoredFor(ctx context.Context, target, schemeID string) ([]*store.Credential, error) {
	cs, err := cl.Credentials()
	if err != nil {
		return nil, err
	}
	creds, err := cs.ForTarget(ctx, target, schemeID)
	if err != nil {
		return nil, err
	}
	return LoggedInThrough(creds, target), nil
}

// SignOutAtHost asks an agent host or ACP agent to forget what it holds:
// an ACP agent's logout (schema 1.7.0, agentCapabilities.auth.logout; or
// auth/logout in the v2 draft); for an AHP 1.x host that advertises
// accountRevocation, one auth/revoked {channel, resource, account}
// (types/authentication.test.ts) per credential of creds with an issuer
// and a subject for a resource the host declares, followed by a ping so
// that they are read before the connection closes. It returns what was
// sent, one line each, or an error wrapping ErrNoHostSignOut.
func (cl *Client) SignOutAtHost(ctx context.Context, target string, creds []*store.Credential) ([]string, error) {
	hc, err := DialHost(ctx, target, cl.HTTPClient, cl.Stderr)
	if err != nil {
		return nil, err
	}
	defer hc.Client.Close()
	switch {
	case hc.Dialect == wire.DialectACP:
		a := &ACPAgent{Target: target, Client: hc.Client, Init: hc.Init}
		method, err := a.Logout(ctx)
		switch {
		case err != nil:
			return nil, fmt.Errorf("cannot sign out at %s: %s", wire.RedactTarget(target), RPCText(err))
		case method == "":
			return nil, fmt.Errorf("%s %w: it advertises no logout", wire.RedactTarget(target), ErrNoHostSignOut)
		}
		return []string{"the agent signed out (" + method + ")"}, nil
	case hc.Dialect == wire.DialectPublished && hc.Init.TakesRevocation():
		var done []string
		for _, c := range creds {
			declared := false
			for _, r := range hc.Reqs {
				declared = declared || r.Resource == c.Resource
			}
			if !declared || c.Issuer == "" || c.Subject == "" {
				continue
			}
			p := wire.AuthRevokedParams{Channel: wire.RootChannel, Resource: c.Resource, Account: wire.AuthenticationAccount{Authority: c.Issuer, ID: c.Subject}}
			if err := hc.Client.Notify(ctx, wire.MethodAuthRevoked, p); err != nil {
				return done, fmt.Errorf("cannot send auth/revoked: %w", err)
			}
			done = append(done, fmt.Sprintf("auth/revoked sent for %s (account %s at %s)", c.Resource, c.Subject, c.Issuer))
		}
		if err := hc.Client.Call(ctx, wire.MethodPing, nil, nil); err != nil {
			return done, fmt.Errorf("cannot confirm auth/revoked with a ping: %w", err)
		}
		return done, nil
	}
	return nil, fmt.Errorf("%s %w: its credentials live only as long as each connection (AHP before 1.0, or no accountRevocation)", wire.RedactTarget(target), ErrNoHostSignOut)
}
