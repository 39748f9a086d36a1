package commands

import (
	"github.com/urfave/cli/v2"
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
Output as token-revoke's, --json included.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "forget only the credential of scheme `ID`", Destination: &opts.SchemeID},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout", Destination: &opts.JSON},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			opts.IO, opts.Client = f.IO, f.Client()
			return runRevoke(c.Context, opts)
		},
	}
}
