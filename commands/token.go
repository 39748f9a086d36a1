package commands

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// TokenOptions are token's inputs.
type TokenOptions struct {
	IO     *IOStreams
	Client *client.Client

	Target   string
	SchemeID string
}

func newTokenCommand(f *Factory) *cli.Command { return tokenCommand(f, runToken) }

// tokenCommand builds the command; run is runToken except in the flag tests.
func tokenCommand(f *Factory, run func(context.Context, *TokenOptions) error) *cli.Command {
	opts := &TokenOptions{}
	return &cli.Command{
		Name:      "token",
		Usage:     "print the stored access token for a target (refreshed first when it expires within 60 s)",
		ArgsUsage: "TARGET",
		Description: `Prints exactly the access token and a newline on stdout, for example:
  curl -H "Authorization: Bearer $(agentauth token https://mcp.example.com/mcp)" …

TARGET is what you logged in to (ws://…, stdio:…, or the resource URL).
A token that expires within 60 s is refreshed first (with the resource
parameter; concurrent refreshes are serialised by the store lock, so a
rotating refresh token is used once). Nothing is logged in by itself: with no
usable credential, token exits 4 and prints the login command to run. An
agent host (ws://H) with no login of its own uses the login of its HTTP face
(login http://H/mcp), and says so on stderr. When $AGENTAUTH_TOKEN is set,
token prints it instead of the stored one.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "the scheme `ID`, when TARGET has credentials for several", Destination: &opts.SchemeID},
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

func runToken(ctx context.Context, opts *TokenOptions) error {
	if t := envToken(); t != "" { // AGENTAUTH_TOKEN wins over the store, as GH_TOKEN in gh auth token
		_, err := fmt.Fprintln(opts.IO.Out, t)
		return err
	}
	c, err := opts.Client.TokenCredential(ctx, opts.Target, opts.SchemeID)
	if err != nil {
		return err
	}
	if through := client.LoggedInElsewhere(c, opts.Target); through != "" {
		// Not silently: after logout TARGET, this is what remains.
		fmt.Fprintf(opts.IO.ErrOut, "Using the login through %s%s: %s has none of its own.\n",
			safeText(wire.RedactTarget(through)), safeText(forResource(through, c.Resource)), safeText(wire.RedactTarget(opts.Target)))
	}
	_, err = fmt.Fprintln(opts.IO.Out, c.AccessToken)
	return err
}
