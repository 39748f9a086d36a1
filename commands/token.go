package commands

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// TokenOptions are token's inputs.
type TokenOptions struct {
	IO          *IOStreams
	Credentials func() (*credentialSource, error)

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
usable credential, token exits 4 and prints the login command to run.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "the scheme `ID`, when TARGET has credentials for several", Destination: &opts.SchemeID},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			opts.IO, opts.Credentials = f.IO, f.credentials
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, opts)
		},
	}
}

func runToken(ctx context.Context, opts *TokenOptions) error {
	cs, err := opts.Credentials()
	if err != nil {
		return err
	}
	key, err := pickCredential(ctx, cs, opts.Target, opts.SchemeID)
	if err != nil {
		return err
	}
	c, err := cs.Usable(ctx, key, opts.Target)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.IO.Out, c.AccessToken)
	return err
}

// pickCredential finds the one stored credential for target (and schemeID):
// none is an *AuthError with the login command; several schemes need
// --scheme; several issuers for one scheme: the latest login wins.
func pickCredential(ctx context.Context, cs *credentialSource, target, schemeID string) (store.Key, error) {
	creds, err := cs.ForTarget(ctx, target, schemeID)
	if err != nil {
		return store.Key{}, err
	}
	if len(creds) == 0 {
		what := target
		if schemeID != "" {
			what += " (scheme " + schemeID + ")"
		}
		return store.Key{}, &AuthError{Err: fmt.Errorf("no stored credential for %s", wire.RedactTarget(what)), Hint: loginCommand(target, schemeID)}
	}
	// Credentials target may receive come first (a refused one is kept
	// only so that using it says why); then logins made through target
	// itself, before those of another target with the same resource (a
	// ws:// host and its /mcp face).
	if ok := receivable(creds, target); len(ok) > 0 {
		creds = ok
	}
	creds = loggedInThrough(creds, target)
	best := creds[0]
	var schemes []string
	for _, c := range creds {
		if id := cmp.Or(c.SchemeID, "(no scheme)"); !slices.Contains(schemes, id) {
			schemes = append(schemes, id)
		}
		if c.UpdatedAt.After(best.UpdatedAt) {
			best = c
		}
	}
	if len(schemes) > 1 {
		return store.Key{}, usageErrorf("%s has credentials for several schemes (%s): choose one with --scheme",
			wire.RedactTarget(target), strings.Join(schemes, ", "))
	}
	return best.Key, nil
}
