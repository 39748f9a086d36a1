package commands

import (
	"cmp"
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
	// Remaining are the credentials TARGET still uses: its HTTP face's
	// logins, for an agent host (remainingFor).
	Remaining []remainingCredential `json:"remaining,omitempty"`
}

// remainingCredential is a stored credential that TARGET still uses after
// logout or token-revoke, and the command that removes it.
type remainingCredential struct {
	Resource      string `json:"resource"`
	Through       string `json:"loggedInThrough"`
	SchemeID      string `json:"schemeId,omitempty"`
	LogoutCommand string `json:"logoutCommand"`
}

// forResource is " for resource R" when R is not the login's target itself.
func forResource(through, resource string) string {
	if client.NormalizeTarget(through) == client.NormalizeTarget(resource) {
		return ""
	}
	return " for resource " + resource
}

// remainingFor lists what target still uses once its own credentials are
// gone (client.StoredFor: an agent host falls back to the logins of its
// HTTP face, the resource on its own origin), and says so on stderr with
// the logout that removes each: token TARGET would print it otherwise.
func (opts *RevokeOptions) remainingFor(ctx context.Context) []remainingCredential {
	rest, err := opts.Client.StoredFor(ctx, opts.Target, opts.SchemeID)
	if err != nil {
		return nil
	}
	var out []remainingCredential
	p := opts.IO.ErrPainter()
	for _, c := range rest {
		through := wire.RedactTarget(cmp.Or(c.Target, c.Resource))
		r := remainingCredential{Resource: c.Resource, Through: through, SchemeID: c.SchemeID, LogoutCommand: client.CommandLine("agentauth", "logout", through)}
		out = append(out, r)
		fmt.Fprintf(opts.IO.ErrOut, "%s %s still has a credential: the login through %s%s, which it uses when it has none of its own.\nTo remove it too, run: %s\n",
			p.Yellow("!"), safeText(wire.RedactTarget(opts.Target)), safeText(through), safeText(forResource(through, c.Resource)), safeText(r.LogoutCommand))
	}
	return out
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
	var remaining []remainingCredential
	if failed == 0 {
		remaining = opts.remainingFor(ctx)
	}
	if opts.JSON {
		doc := revokeDoc{Target: wire.RedactTarget(opts.Target), Credentials: results, Remaining: remaining}
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
