package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
)

// newLogoutCommand is `token-revoke --local-only` under the name people
// type (gh auth logout also only forgets the local credential): it
// deletes what is stored for TARGET and contacts no server.
func newLogoutCommand(f *Factory) *cli.Command {
	opts := &RevokeOptions{LocalOnly: true}
	return &cli.Command{
		Name:      "logout",
		Usage:     "delete the stored credentials for a target (token-revoke --local-only)",
		ArgsUsage: "TARGET",
		Description: `Deletes every credential stored for TARGET (or only --scheme's) from the
store, without contacting the authorization server: the tokens stay valid at
the server until they expire. To revoke them there too, use token-revoke.
Output as token-revoke's, --json included.

What is deleted is what TARGET uses: the credentials logged in through it;
for an agent host (ws://H) with none of its own, the logins of its HTTP face
(the resource on its own origin, login http://H/mcp), which it falls back
on. When TARGET still has a credential afterwards (logout ws://H while a
login through http://H/mcp remains, which token ws://H would print), each is
named with the logout that removes it (--json: "remaining": [{"resource",
"loggedInThrough", "schemeId", "logoutCommand"}]); token ws://H, using it,
says so on stderr.

--agent (agent hosts and ACP agents: ws://, wss://, stdio:) first asks the
agent to sign out too: an ACP agent's logout, or, to an AHP 1.x host that
advertises accountRevocation, auth/revoked for each stored credential's
account. An agent that offers neither is reported (exit 1) and the local
credentials are deleted all the same.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "forget only the credential of scheme `ID`", Destination: &opts.SchemeID},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout", Destination: &opts.JSON},
			&cli.BoolFlag{Name: "agent", Usage: "also sign out at the agent host or ACP agent (ACP logout, AHP auth/revoked)", Destination: &opts.Agent},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			if opts.Agent && client.IsHTTPTarget(opts.Target) {
				return usageErrorf("--agent applies to agent hosts and ACP agents (ws://, wss://, stdio:)")
			}
			opts.IO, opts.Client = f.IO, f.Client()
			return runLogout(c.Context, opts)
		},
	}
}

// runLogout signs out at the agent first with --agent (client.SignOutAtHost),
// then deletes the stored credentials (runRevoke --local-only); with
// --agent, having nothing stored is not an error.
func runLogout(ctx context.Context, opts *RevokeOptions) error {
	if !opts.Agent {
		return runRevoke(ctx, opts)
	}
	creds, err := opts.Client.StoredFor(ctx, opts.Target, opts.SchemeID)
	if err != nil {
		return err
	}
	signCtx, cancel := context.WithTimeout(ctx, client.AuthTimeout)
	lines, signErr := opts.Client.SignOutAtHost(signCtx, opts.Target, creds)
	cancel()
	p := opts.IO.ErrPainter()
	for _, l := range lines {
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", p.Green("✓"), safeText(l))
	}
	if signErr != nil && !errors.Is(signErr, client.ErrNoHostSignOut) {
		return signErr
	}
	if signErr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", p.Yellow("!"), safeText(signErr.Error()))
	}
	if len(creds) > 0 {
		if err := runRevoke(ctx, opts); err != nil {
			return err
		}
	}
	if signErr != nil {
		return &SilentError{Code: ExitError}
	}
	return nil
}
