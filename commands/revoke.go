package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// RevokeOptions are token-revoke's inputs.
type RevokeOptions struct {
	IO     *IOStreams
	Client *client.Client

	Target    string
	SchemeID  string
	LocalOnly bool
	JSON      bool
	// Agent: logout --agent also signs out at the agent.
	Agent bool
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
			opts.IO, opts.Client = f.IO, f.Client()
			return withTarget(opts.Target, run(c.Context, opts))
		},
	}
}

// revokeDoc is token-revoke --json's document.
type revokeDoc struct {
	Target      string                `json:"target"`
	Credentials []client.RevokeResult `json:"credentials"`
}

func runRevoke(ctx context.Context, opts *RevokeOptions) error {
	results, err := opts.Client.Revoke(ctx, opts.Target, opts.SchemeID, opts.LocalOnly)
	p := opts.IO.ErrPainter()
	failed := 0
	for _, res := range results {
		mark := p.Green("✓")
		switch res.Server {
		case client.RevokeFailed:
			mark = p.Red("X")
			failed++
		case client.RevokeNoEndpoint:
			mark = p.Yellow("!")
		}
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", mark, safeText(res.Name+": "+res.Message))
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		doc := revokeDoc{Target: wire.RedactTarget(opts.Target), Credentials: results}
		if err := writeJSONIndent(opts.IO.Out, doc); err != nil {
			return err
		}
	}
	if failed > 0 {
		for _, res := range results {
			if res.ClientRefused {
				return fmt.Errorf("the credential that could not be revoked is kept: the authorization server refuses this client (invalid_client), so trying again cannot help\n"+
					"Delete the local copy with: agentauth logout %s (the token stays valid until it expires)", client.ShellQuote(wire.RedactTarget(opts.Target)))
			}
		}
		return errors.New("the credential that could not be revoked is kept: run token-revoke again once the authorization server is reachable, or delete it with --local-only")
	}
	return nil
}
