// Package commands is the CLI, and only wiring: one file per subcommand
// (an Action copies flags into an Options struct; run calls the client
// core, renders text or --json and returns errors that exitCode maps), the
// Factory, and ui.go with the terminal things every command uses (the
// core's UI on stderr, spinner, browser openers, safe text). It is the only
// package that knows about flags, colour and exit codes; it holds no OAuth
// or credential logic (package client does) and opens the store only to
// hand it to the core.
package commands

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Version is the agentauth version, set at build time with
// -ldflags "-X github.com/agentauth/agentauth/commands.Version=…".
var Version = "0.1.0-dev"

const exitCodesHelp = `EXIT CODES:
   0  success
   1  failure
   2  usage error (bad flags or arguments)
   4  authentication needed (no token, a rejected or unrefreshable token, a 401/403/-32007)`

// Main runs agentauth with the process's arguments and returns the exit code.
func Main() int {
	return Run(NewFactory(), os.Args)
}

// Run runs the CLI with args (args[0] is the program name).
func Run(f *Factory, args []string) int {
	app := NewApp(f)
	err := app.Run(args)
	if err != nil {
		printError(f.IO.ErrOut, err)
	}
	return exitCode(err)
}

// NewApp builds the urfave/cli application.
func NewApp(f *Factory) *cli.App {
	app := &cli.App{
		Name:                   "agentauth",
		Usage:                  "standards-based authentication for agent protocols (agent hosts, ACP agents, MCP servers)",
		Version:                Version,
		Reader:                 f.IO.In,
		Writer:                 f.IO.Out,
		ErrWriter:              f.IO.ErrOut,
		HideHelpCommand:        true,
		UseShortOptionHandling: false,
		CustomAppHelpTemplate:  cli.AppHelpTemplate + "\n" + exitCodesHelp + "\n",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "verbose", Usage: "print diagnostic detail on stderr (never secrets)", Destination: &f.Verbose},
			&cli.StringFlag{Name: "store", Usage: "credential store: `keyring` or file (default: $AGENTAUTH_STORE, else the last choice, else keyring); remembered once chosen", Destination: &f.StoreKind},
		},
		Before: func(*cli.Context) error {
			if f.StoreKind != "" && f.StoreKind != store.KindKeyring && f.StoreKind != store.KindFile {
				return usageErrorf("--store must be keyring or file, not %q", f.StoreKind)
			}
			return nil
		},
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &UsageError{Err: err}
		},
		CommandNotFound: func(c *cli.Context, name string) {},
		Commands:        commandList(f),
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Len() > 0 {
			return usageErrorf("unknown command %q", c.Args().First())
		}
		return cli.ShowAppHelp(c)
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
		if cmd.CustomHelpTemplate == "" {
			cmd.CustomHelpTemplate = cli.CommandHelpTemplate + "\n" + exitCodesHelp + "\n"
		}
	}
	return app
}

// commandList is every working command, in help order.
func commandList(f *Factory) []*cli.Command {
	return []*cli.Command{
		newServeCommand(f),
		newCallCommand(f),
		newDiscoverCommand(f),
		newLoginCommand(f),
		newTokenCommand(f),
		newAuthenticateCommand(f),
		newStatusCommand(f),
		newRevokeCommand(f),
	}
}

// targetArg returns the command's one positional argument, TARGET, checked
// by checkTarget.
func targetArg(c *cli.Context) (string, error) {
	if c.Args().Len() != 1 {
		return "", usageErrorf("%s expects TARGET", c.Command.Name)
	}
	target := c.Args().First()
	return target, checkTarget(target)
}

// checkTarget refuses a TARGET of no supported kind: an agent host
// (ws://, wss://, stdio:) or an MCP server / protected resource
// (http(s)://; whether plain http is allowed is checked where it is used).
func checkTarget(target string) error {
	for _, prefix := range []string{"ws://", "wss://", "stdio:"} {
		if strings.HasPrefix(target, prefix) {
			return nil
		}
	}
	if client.IsHTTPTarget(target) {
		return nil
	}
	return usageErrorf("unsupported target %q: use ws://HOST:PORT, wss://HOST:PORT, stdio:COMMAND LINE or an MCP server's https:// URL", wire.RedactTarget(target))
}
