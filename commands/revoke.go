package commands

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// What token-revoke did at the authorization server.
const (
	revokedAtServer = "revoked"
	// revokeNoEndpoint: the issuer has no revocation_endpoint.
	revokeNoEndpoint = "no_endpoint"
	// revokeSkipped: --local-only.
	revokeSkipped = "skipped"
	revokeFailed  = "failed"
)

// RevokeOptions are token-revoke's inputs.
type RevokeOptions struct {
	IO          *IOStreams
	HTTPClient  *http.Client
	Now         func() time.Time
	Credentials func() (*credentialSource, error)

	Target    string
	SchemeID  string
	LocalOnly bool
	JSON      bool
}

func newRevokeCommand(f *Factory) *cli.Command {
	return revokeCommand(f, runRevoke)
}

// revokeCommand builds the command around run, so tests can check what the
// flags become.
func revokeCommand(f *Factory, run func(context.Context, *RevokeOptions) error) *cli.Command {
	opts := &RevokeOptions{}
	return &cli.Command{
		Name:      "token-revoke",
		Usage:     "revoke the stored tokens for a target at the authorization server, then delete them",
		ArgsUsage: "TARGET",
		Description: `For each credential stored for TARGET (or only --scheme's): RFC 7009
revocation of the refresh token, then of the access token, at the issuer's
revocation_endpoint with the client authentication the registration uses;
then the credential is deleted from the store.

When the issuer has no revocation endpoint, the credential is deleted and a
warning says the token stays valid until it expires (exit 0). When
revocation fails (network, 5xx, an error answer), the credential is kept
and token-revoke exits 1: run it again, or use --local-only, which deletes
the credential without contacting the server.

One line per credential on stderr; --json prints {"target", "credentials":
[{"resource", "issuer", "schemeId", "revocationEndpoint", "server"
("revoked"|"no_endpoint"|"skipped"|"failed"), "deleted", "message"}]}.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "revoke only the credential of scheme `ID`", Destination: &opts.SchemeID},
			&cli.BoolFlag{Name: "local-only", Usage: "delete the stored credential without revoking it at the server", Destination: &opts.LocalOnly},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout", Destination: &opts.JSON},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			opts.IO, opts.HTTPClient, opts.Now, opts.Credentials = f.IO, f.HTTPClient, f.Now, f.credentials
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, opts)
		},
	}
}

// revokeResult is what happened to one credential.
type revokeResult struct {
	Resource           string `json:"resource"`
	Issuer             string `json:"issuer"`
	SchemeID           string `json:"schemeId,omitempty"`
	RevocationEndpoint string `json:"revocationEndpoint,omitempty"`
	Server             string `json:"server"`
	Deleted            bool   `json:"deleted"`
	Message            string `json:"message,omitempty"`
}

// revokeDoc is token-revoke --json's document.
type revokeDoc struct {
	Target      string         `json:"target"`
	Credentials []revokeResult `json:"credentials"`
}

func runRevoke(ctx context.Context, opts *RevokeOptions) error {
	cs, err := opts.Credentials()
	if err != nil {
		return err
	}
	creds, err := cs.ForTarget(ctx, opts.Target, opts.SchemeID)
	if err != nil {
		return err
	}
	// An MCP URL is also the resource of the agent host credentials logged
	// in through ws:// or stdio:; only those logged in through the URL go,
	// when there are any.
	creds = loggedInThrough(creds, opts.Target)
	if len(creds) == 0 {
		what := wire.RedactTarget(opts.Target)
		if opts.SchemeID != "" {
			what += " (scheme " + opts.SchemeID + ")"
		}
		return fmt.Errorf("cannot revoke: no stored credential for %s", what)
	}
	doc := revokeDoc{Target: wire.RedactTarget(opts.Target), Credentials: []revokeResult{}}
	p := opts.IO.ErrPainter()
	failed := 0
	for _, c := range creds {
		res, err := opts.revoke(ctx, cs, c)
		if err != nil {
			return err
		}
		mark := p.Green("✓")
		switch res.Server {
		case revokeFailed:
			mark = p.Red("X")
			failed++
		case revokeNoEndpoint:
			mark = p.Yellow("!")
		}
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", mark, safeText(nameOf(c.Key)+": "+res.Message))
		doc.Credentials = append(doc.Credentials, res)
	}
	if opts.JSON {
		if err := writeJSONIndent(opts.IO.Out, doc); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errors.New("the credential that could not be revoked is kept: run token-revoke again once the authorization server is reachable, or delete it with --local-only")
	}
	return nil
}

// revoke revokes one credential (RFC 7009 §2.1: the refresh token first,
// which at most servers ends the whole grant, then the access token) and
// deletes it, all under the credential's store lock so that no refresh
// running meanwhile can put it back. A revocation that fails keeps the
// credential; only store errors are returned.
func (opts *RevokeOptions) revoke(ctx context.Context, cs *credentialSource, stale *store.Credential) (revokeResult, error) {
	res := revokeResult{Resource: stale.Resource, Issuer: stale.Issuer, SchemeID: stale.SchemeID}
	unlock, err := cs.Store.Lock(ctx, stale.Key)
	if err != nil {
		return res, fmt.Errorf("cannot lock the credential for %s: %w", describeKey(stale.Key), err)
	}
	defer unlock()
	c, err := cs.Store.Get(ctx, stale.Key)
	if errors.Is(err, store.ErrNotFound) {
		res.Server, res.Deleted, res.Message = revokeSkipped, true, "already deleted"
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("cannot read the credential for %s: %w", describeKey(stale.Key), err)
	}
	res.RevocationEndpoint = c.RevocationEndpoint
	where := "from the " + cs.Store.Kind() + " store"
	switch {
	case opts.LocalOnly:
		res.Server = revokeSkipped
		res.Message = "deleted " + where + " (not revoked: " + stillValid(c, opts.Now()) + ")"
	case c.RevocationEndpoint == "":
		res.Server = revokeNoEndpoint
		res.Message = "deleted " + where + "; " + c.Issuer + " has no revocation endpoint, so " + stillValid(c, opts.Now())
	default:
		client := clientOf(c.Client)
		for _, t := range []struct{ token, hint string }{
			{c.RefreshToken, flows.HintRefreshToken},
			{c.AccessToken, flows.HintAccessToken},
		} {
			if t.token == "" {
				continue
			}
			err := flows.Revoke(ctx, opts.HTTPClient, flows.RevokeRequest{Endpoint: c.RevocationEndpoint, Client: client, Token: t.token, TokenTypeHint: t.hint})
			if err != nil {
				res.Server, res.Message = revokeFailed, err.Error()+"; the credential is kept"
				return res, nil
			}
		}
		res.Server = revokedAtServer
		res.Message = "revoked at " + c.RevocationEndpoint + " and deleted " + where
	}
	if err := cs.Store.Delete(ctx, c.Key); err != nil {
		return res, fmt.Errorf("cannot delete the credential for %s: %w", describeKey(c.Key), err)
	}
	res.Deleted = true
	return res, nil
}

// stillValid says for how long the tokens of a credential that was not
// revoked stay usable by whoever holds a copy.
func stillValid(c *store.Credential, now time.Time) string {
	s := "the access token stays valid until it expires"
	if left := c.Expiry.Sub(now); !c.Expiry.IsZero() && left > 0 {
		s += " (in " + roughDuration(left) + ")"
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
