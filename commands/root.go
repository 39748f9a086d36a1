// Package commands is the CLI, and only wiring: one file per subcommand
// (an Action copies flags into an Options struct; run calls the client
// core, renders text or --json and returns errors that exitCode maps), the
// Factory, and ui.go with the terminal things every command uses (the
// core's UI on stderr, spinner, browser openers, safe text). It is the only
// package that knows about flags, colour and exit codes; it holds no OAuth
// or credential logic (package client does) and opens the store only to
// hand it to the core.
// It sits on top: it may import every other agentauth package (serve's
// flags become server.Options, and package server assembles the rest),
// and none imports it.
//
// Not meant for import by other modules: commands is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package commands

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Version is the version a release build stamps with
// -ldflags "-X github.com/agentauth/agentauth/commands.Version=v1.2.3"
// (GoReleaser); empty otherwise. What agentauth reports is buildVersion's
// answer (version.go).
var Version string

// Commit and Date are the commit and its date, stamped at build time like
// Version (-X …commands.Commit=… -X …commands.Date=…) where the build has
// no VCS information of its own; --version shows them.
var Commit, Date string

// ACP's clientInfo names this version (wire.NewInitializeParams), worked
// out when an initialize request is first built: reading the build
// information at init cost every command (docs/performance.md).
func init() { wire.ClientVersion = serverVersion }

// Main runs agentauth with the process's arguments and returns the exit
// code. The first SIGINT or SIGTERM cancels the command's context (the
// command ends cleanly, exit 130 when it had not finished); a second one
// kills the process the default way (interruptContext).
func Main() int {
	ctx := &interruptContext{}
	defer ctx.stop()
	return RunContext(ctx, NewFactory(), os.Args)
}

// interruptContext is Main's context: cancelled by the first SIGINT or
// SIGTERM, after which the signals get their default action again. It
// starts listening for them (signal.NotifyContext) the first time Done is
// called: by listenForInterrupts as a command starts, or by whatever
// waits on the context (context.WithCancel, a network call, a file lock).
// An offline command (offlineCommands; status without TARGET; --version
// and help) finishes in milliseconds without waiting for anything and
// keeps the default action, so that an interrupt ends it with the shell's
// 130 as before and its start-up saves the goroutine and the locked OS
// thread signal handling costs (docs/performance.md).
type interruptContext struct {
	once     sync.Once
	ctx      atomic.Pointer[context.Context] // nil until the first Done
	stopFunc context.CancelFunc
}

// listen returns the signal context, made on the first call.
func (c *interruptContext) listen() context.Context {
	c.once.Do(func() {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() {
			<-ctx.Done()
			stop()
		}()
		c.stopFunc = stop
		c.ctx.Store(&ctx)
	})
	return *c.ctx.Load()
}

// started is the signal context, or nil when nothing waited yet.
func (c *interruptContext) started() context.Context {
	if p := c.ctx.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *interruptContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *interruptContext) Done() <-chan struct{}       { return c.listen().Done() }

func (c *interruptContext) Err() error {
	if ctx := c.started(); ctx != nil {
		return ctx.Err()
	}
	return nil
}

// Value asks the signal context once it exists, so that a child context
// finds its cancelCtx (no goroutine per context.WithCancel).
func (c *interruptContext) Value(key any) any {
	if ctx := c.started(); ctx != nil {
		return ctx.Value(key)
	}
	return nil
}

// stop stops listening, when Done ever started it.
func (c *interruptContext) stop() {
	if c.started() != nil {
		c.stopFunc()
	}
}

// listenForInterrupts makes ctx, Main's interruptContext or a context
// made from it, listen for SIGINT and SIGTERM now, before the command
// waits on anything (a server's first request must not find the default
// action). Done does it; on any other context it does nothing.
func listenForInterrupts(ctx context.Context) { ctx.Done() }

// offlineCommands finish without the network or waiting for anything, so
// they do not listen for interrupts (interruptContext); status does only
// with a TARGET.
var offlineCommands = map[string]bool{"status": true, "completion": true, "complete": true}

// Run runs the CLI with args (args[0] is the program name).
func Run(f *Factory, args []string) int { return RunContext(context.Background(), f, args) }

// RunContext runs the CLI with args until ctx ends; an error after ctx
// ended (an interrupt) exits 130.
func RunContext(ctx context.Context, f *Factory, args []string) int {
	out := &countingWriter{w: f.IO.Out}
	f.IO.Out = out
	if len(args) == 3 && args[1] == "help" && printHelpTopic(f.IO.Out, args[2]) {
		return ExitOK
	}
	args = expandHelp(args)
	app := newApp(f, args)
	args, cmdName := reorderArgs(app, args)
	err := app.RunContext(ctx, args)
	if f.ui != nil {
		f.ui.stopWaiting()
	}
	if err != nil && ctx.Err() != nil {
		err = errInterrupted
	}
	if err != nil {
		// With --jq, stdout holds the expression's results only: the
		// error goes to stderr (as in gh).
		if wantsJSON(app, cmdName, args) && out.n == 0 && !hasFlag(args, "jq") {
			printJSONError(out, err, cmdName)
		}
		printError(f.IO.ErrOut, err, cmdName)
	}
	return exitCode(err)
}

// countingWriter counts what a command wrote to stdout, so that an error
// of a --json command becomes a JSON document only when no document was
// written yet.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// expandHelp turns `help [CMD]` into `[CMD] --help`, like git and gh.
func expandHelp(args []string) []string {
	if len(args) < 2 || args[1] != "help" {
		return args
	}
	out := []string{args[0]}
	if len(args) > 2 {
		out = append(out, args[2])
	}
	return append(out, "--help")
}

// wantsJSON says whether the command line asked command name for --json.
func wantsJSON(app *cli.App, name string, args []string) bool {
	cmd := app.Command(name)
	if cmd == nil || !hasFlagNamed(cmd.Flags, "json") {
		return false
	}
	for _, a := range args[1:] {
		if a == "--" {
			return false
		}
		if isFlag(a) && flagName(a) == "json" && !strings.HasSuffix(a, "=false") {
			return true
		}
	}
	return false
}

// hasFlag says whether the command line gives flag --name (before "--").
func hasFlag(args []string, name string) bool {
	for _, a := range args[1:] {
		if a == "--" {
			return false
		}
		if isFlag(a) && flagName(a) == name {
			return true
		}
	}
	return false
}

// NewApp builds the urfave/cli application, with every command.
func NewApp(f *Factory) *cli.App { return newApp(f, nil) }

// newApp builds the application for the command line args: when args
// name a command that needs no other (all but the completions, which list
// the others), that command alone, so that its start-up builds none of
// the other commands and their flags (docs/performance.md); else, and
// with no args, every command. Its Version is worked out when printed
// (lazyVersion).
func newApp(f *Factory, args []string) *cli.App {
	app := &cli.App{
		Name:                   "agentauth",
		Usage:                  "standards-based authentication for agent protocols (agent hosts, ACP agents, MCP servers)",
		Version:                lazyVersion,
		Reader:                 f.IO.In,
		Writer:                 f.IO.Out,
		ErrWriter:              f.IO.ErrOut,
		HideHelpCommand:        true,
		UseShortOptionHandling: false,
		CustomAppHelpTemplate:  cli.AppHelpTemplate + appHelpExtra,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "verbose", Usage: "trace every HTTP request and response line and JSON-RPC method on stderr (secrets masked); also AGENTAUTH_DEBUG=api", Destination: &f.Verbose},
			&cli.BoolFlag{Name: "loopback-ip", Usage: "treat a TARGET on localhost as 127.0.0.1 (the same machine, and the credentials of 127.0.0.1); without it the two are distinct origins"},
			&cli.StringFlag{Name: "store", Usage: "credential store: `keyring` or file (default: $AGENTAUTH_STORE, else the last login's choice, else keyring); remembered by login", Destination: &f.StoreKind},
		},
		Before: func(c *cli.Context) error {
			if f.StoreKind != "" && f.StoreKind != store.KindKeyring && f.StoreKind != store.KindFile {
				return usageErrorf("--store must be keyring or file, not %q", f.StoreKind)
			}
			if debugWanted() {
				f.Verbose = true
			}
			if f.Verbose {
				t := &tracer{w: f.IO.ErrOut}
				f.HTTPClient = t.traceHTTP(f.HTTPClient)
				c.Context = wire.WithTrace(c.Context, t.traceRPC)
			}
			return nil
		},
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    onUsageError,
		CommandNotFound: func(c *cli.Context, name string) {},
	}
	only := ""
	if i := commandIndex(app, args); i > 0 {
		only = args[i]
	}
	app.Commands = commandList(f, only)
	app.Action = func(c *cli.Context) error {
		if c.Args().Len() > 0 {
			return unknownCommand(app, c.Args().First())
		}
		return cli.ShowAppHelp(c)
	}
	for _, cmd := range app.Commands {
		if hasFlagNamed(cmd.Flags, "json") && cmd.Action != nil {
			cmd.Flags = append(cmd.Flags, jqFlag)
			cmd.Action = withJQ(f, cmd.Action)
		}
		if action := cmd.Action; action != nil && !offlineCommands[cmd.Name] {
			cmd.Action = func(c *cli.Context) error {
				listenForInterrupts(c.Context)
				return action(c)
			}
		}
		cmd.OnUsageError = app.OnUsageError
		if cmd.CustomHelpTemplate == "" {
			// printHelp adds the command's EXAMPLES and EXIT CODES.
			cmd.CustomHelpTemplate = cli.CommandHelpTemplate
		}
	}
	return app
}

// onUsageError words urfave's flag errors the way agentauth words usage
// errors: "flag provided but not defined: -bogus" becomes "unknown flag
// --bogus".
func onUsageError(_ *cli.Context, err error, _ bool) error {
	const undefined = "flag provided but not defined: "
	if msg := err.Error(); strings.HasPrefix(msg, undefined) {
		return usageErrorf("unknown flag -%s", strings.TrimPrefix(msg, undefined))
	}
	return &UsageError{Err: err}
}

// commandTable is every working command's name and constructor, in help
// order.
var commandTable = []struct {
	name string
	make func(*Factory) *cli.Command
}{
	{"serve", newServeCommand},
	{"call", newCallCommand},
	{"proxy", newProxyCommand},
	{"discover", newDiscoverCommand},
	{"login", newLoginCommand},
	{"token", newTokenCommand},
	{"authenticate", newAuthenticateCommand},
	{"status", newStatusCommand},
	{"token-revoke", newRevokeCommand},
	{"logout", newLogoutCommand},
	{"healthcheck", newHealthcheckCommand},
	{"completion", func(*Factory) *cli.Command { return newCompletionCommand() }},
	{"__complete", func(*Factory) *cli.Command { return newCompleteCommand() }},
}

// commandList is every working command, in help order; or, when only
// names a command other than the completions (which list the others),
// that command alone.
func commandList(f *Factory, only string) []*cli.Command {
	if only != "completion" && only != "__complete" {
		for _, c := range commandTable {
			if c.name == only {
				return []*cli.Command{c.make(f)}
			}
		}
	}
	cmds := make([]*cli.Command, len(commandTable))
	for i, c := range commandTable {
		cmds[i] = c.make(f)
	}
	return cmds
}

// targetArg returns the command's one positional argument, TARGET, checked
// by checkTarget.
func targetArg(c *cli.Context) (string, error) {
	if c.Args().Len() != 1 {
		if c.Args().Len() == 0 {
			return "", usageErrorf("%s expects TARGET", c.Command.Name)
		}
		return "", usageErrorf("%s expects TARGET (one argument), not %d: %s", c.Command.Name, c.Args().Len(), strings.Join(redactAll(c.Args().Slice()), " "))
	}
	return normalTarget(c, c.Args().First())
}

// normalTarget checks target (checkTarget) and returns its one spelling
// (client.NormalizeTarget), localhost written 127.0.0.1 when the user
// opted in with --loopback-ip.
func normalTarget(c *cli.Context, target string) (string, error) {
	if err := checkTarget(target); err != nil {
		return "", err
	}
	if c.Bool("loopback-ip") {
		target = client.LoopbackIP(target)
	}
	return client.NormalizeTarget(target), nil
}

func redactAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = wire.RedactTarget(a)
	}
	return out
}

// checkTarget refuses a TARGET of no supported kind: an agent host
// (ws://, wss://, stdio:) or an MCP server / protected resource
// (http(s)://; whether plain http is allowed is checked where it is used).
func checkTarget(target string) error {
	return client.CheckTarget(target)
}
