package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// callClientID is the clientId call sends with initialize.
const callClientID = "agentauth-call"

// CallOptions are call's inputs.
type CallOptions struct {
	IO *IOStreams
	// Client is the client core: the stored credentials, logins.
	Client *client.Client

	Target string
	Method string
	// Params is PARAMS_JSON, nil when not given.
	Params     json.RawMessage
	TokenStdin bool
	// EnvToken is $AGENTAUTH_TOKEN when neither --token-stdin nor
	// --login is given (envtoken.go).
	EnvToken         string
	SetAuthToken     bool
	SchemeID         string
	Watch            bool
	MaxNotifications int
	JSON             bool
	Dialect          wire.Dialect
	// DialectAuto: --dialect was not given, so a host that answers the
	// design dialect's initialize with -32005 is asked again in AHP's.
	DialectAuto bool
	// Login holds --login and its flags (MCP servers over HTTP).
	Login CallLoginOptions
	// SignIn holds --no-wait and --wait-timeout (upstream sign-ins).
	SignIn client.SignInOptions
	// REST is --rest: TARGET serves plain HTTP tools.
	REST bool
	// MCPVersion is --mcp-version: the only MCP revision to speak ("":
	// negotiate).
	MCPVersion string
}

func newCallCommand(f *Factory) *cli.Command { return callCommand(f, runCallTarget) }

// runCallTarget calls a plain HTTP tool (--rest), an MCP server over
// HTTP, or an agent host.
func runCallTarget(ctx context.Context, opts *CallOptions) error {
	switch {
	case opts.REST:
		return opts.reportSignIn(runCallREST(ctx, opts))
	case client.IsHTTPTarget(opts.Target):
		return opts.reportSignIn(runCallHTTP(ctx, opts))
	}
	return opts.reportSignIn(runCall(ctx, opts))
}

// callCommand builds the command; run is runCallTarget except in the flag
// tests.
func callCommand(f *Factory, run func(context.Context, *CallOptions) error) *cli.Command {
	opts := &CallOptions{}
	var dialect string
	return &cli.Command{
		Name:      "call",
		Usage:     "call a method on an agent host or an MCP server (initialize, authorization, then METHOD)",
		ArgsUsage: "TARGET METHOD [PARAMS_JSON]",
		Description: `TARGET is ws://HOST:PORT[/ws][?tkn=CONNECTION_TOKEN], wss://… or stdio:COMMAND LINE
(run as a child process; its stderr is passed through).

call runs initialize, authenticates with the token read from stdin when
--token-stdin is given (else with $AGENTAUTH_TOKEN when set, sent to TARGET
only; else with the credentials stored for TARGET by login, refreshed when they expire within 60 s, and refreshed and sent once
more when the host answers invalid_token), calls METHOD with PARAMS_JSON and
prints the result JSON on stdout. METHOD initialize prints the initialize
result (PARAMS_JSON, if given, replaces the default initialize params).

A -32007 answer prints each challenge on stderr (scheme, error, description,
scope, where to get a token) and exits 4; other JSON-RPC errors exit 1.
Without --dialect, a host that supports no design version (-32005) is asked
again in AHP's published dialect, offering AHP 1.1.0, 1.0.0 and 0.9.0.
--dialect acp initializes as an ACP client (clientCapabilities, clientInfo).

` + callHTTPHelp + "\n\n" + callSignInHelp,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "token-stdin", Usage: "read a bearer token from stdin and authenticate with it", Destination: &opts.TokenStdin},
			&cli.BoolFlag{Name: "set-auth-token", Usage: "hand the token over with the deprecated setAuthToken notification instead of authenticate", Destination: &opts.SetAuthToken},
			&cli.StringFlag{Name: "scheme", Usage: "scheme `ID` to authenticate (default: the only required one)", Destination: &opts.SchemeID},
			&cli.BoolFlag{Name: "watch", Usage: "after the call, print every notification as one JSON line until the connection closes or Ctrl-C", Destination: &opts.Watch},
			&cli.IntFlag{Name: "max-notifications", Usage: "with --watch, stop after `N` notifications", Destination: &opts.MaxNotifications},
			&cli.BoolFlag{Name: "json", Usage: "print compact JSON; on a JSON-RPC error, print the error object on stdout too", Destination: &opts.JSON},
			&cli.StringFlag{Name: "mcp-version", Usage: "MCP servers over HTTP: speak MCP `VERSION` only (" + strings.Join(wire.MCPClientVersions(), ", ") + ") instead of the newest both sides speak", Destination: &opts.MCPVersion},
			&cli.StringFlag{Name: "dialect", Value: "design", Usage: "protocol dialect to initialize with: `design` (protocolVersion 1), published (AHP 1.1, 1.0, 0.9) or acp (Agent Client Protocol)", Destination: &dialect},
		}, append(callLoginFlags(&opts.Login), signInFlags(opts)...)...),
		Action: func(c *cli.Context) error {
			if n := c.Args().Len(); n < 2 || n > 3 {
				return usageErrorf("call expects TARGET METHOD [PARAMS_JSON]")
			}
			opts.Target, opts.Method = c.Args().Get(0), c.Args().Get(1)
			if err := checkTarget(opts.Target); err != nil {
				return err
			}
			if c.Args().Len() == 3 {
				p := []byte(strings.TrimSpace(c.Args().Get(2)))
				if !json.Valid(p) || (p[0] != '{' && p[0] != '[') {
					return usageErrorf("PARAMS_JSON must be a JSON object or array")
				}
				opts.Params = p
			}
			if !opts.TokenStdin && !opts.Login.Enabled {
				opts.EnvToken = envToken()
			}
			opts.DialectAuto = !c.IsSet("dialect")
			switch dialect {
			case "design":
				opts.Dialect = wire.DialectDesign
			case "published":
				opts.Dialect = wire.DialectPublished
			case "acp":
				opts.Dialect = wire.DialectACP
			default:
				return usageErrorf("--dialect must be design, published or acp, not %q", dialect)
			}
			if err := opts.checkSignIn(c.IsSet("wait-timeout")); err != nil {
				return err
			}
			if err := opts.checkMCPVersion(); err != nil {
				return err
			}
			if err := opts.Login.check(c, client.IsHTTPTarget(opts.Target)); err != nil {
				return err
			}
			if client.IsHTTPTarget(opts.Target) {
				if err := opts.checkHTTP(); err != nil {
					return err
				}
			} else if err := opts.checkHost(); err != nil {
				return err
			}
			f.RememberStore = opts.Login.Enabled
			opts.IO, opts.Client = f.IO, f.Client()
			return withTarget(opts.Target, run(c.Context, opts))
		},
	}
}

// checkHost rejects flag combinations an agent host cannot use.
func (opts *CallOptions) checkHost() error {
	switch {
	case opts.SchemeID != "" && !opts.hasToken():
		return usageErrorf("--scheme needs --token-stdin (or AGENTAUTH_TOKEN)")
	case opts.SetAuthToken && (!opts.hasToken() || opts.SchemeID != ""):
		return usageErrorf("--set-auth-token needs --token-stdin (or AGENTAUTH_TOKEN) and takes no --scheme (setAuthToken has no scheme)")
	case opts.MaxNotifications < 0 || (opts.MaxNotifications > 0 && !opts.Watch):
		return usageErrorf("--max-notifications needs --watch and a positive count")
	}
	return nil
}

func runCall(ctx context.Context, opts *CallOptions) error {
	token, err := opts.bearer()
	if err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, client.CallTimeout)
	defer cancel()
	// Stored credentials are used when no token comes from stdin, unless
	// the call is initialize alone (which needs none).
	noStore := token != "" || (opts.Method == wire.MethodInitialize && !opts.Watch)
	var params any = wire.NewInitializeParams(opts.Dialect, callClientID)
	if opts.Method == wire.MethodInitialize && opts.Params != nil {
		params = opts.Params
	}
	sess, raw, err := opts.Client.OpenHostWith(callCtx, opts.Target, noStore, params)
	var failed *client.CallError
	var rpc *wire.Error
	if opts.DialectAuto && opts.Dialect == wire.DialectDesign && errors.As(err, &failed) && errors.As(failed.Err, &rpc) &&
		rpc.Code == wire.CodeUnsupportedVersion && !(opts.Method == wire.MethodInitialize && opts.Params != nil) {
		// A host that speaks no design version: AHP as published, as
		// discover and authenticate work it out.
		opts.Dialect = wire.DialectPublished
		sess, raw, err = opts.Client.OpenHostWith(callCtx, opts.Target, noStore, wire.NewInitializeParams(opts.Dialect, callClientID))
	}
	if errors.As(err, &failed) {
		return opts.rpcFailure(failed.Method, failed.Err, nil, nil)
	}
	if err != nil {
		return err
	}
	defer sess.Close()
	reqs := sess.Reqs

	switch {
	case token != "" && opts.SetAuthToken:
		// Deprecated, fire-and-forget: a rejection arrives as a push and
		// the call below then answers -32007.
		if err := sess.Client.Notify(callCtx, wire.MethodSetAuthToken, wire.SetAuthTokenParams{Token: token}); err != nil {
			return fmt.Errorf("cannot send setAuthToken: %w", err)
		}
	case token != "":
		req, err := client.PickRequirement(reqs, opts.SchemeID)
		if err != nil {
			return err
		}
		if err := wire.Authenticate(callCtx, sess.Client, sess.Dialect, req, token); err != nil {
			return opts.rpcFailure(wire.MethodAuthenticate, err, reqs, sess.Init)
		}
	}
	refused := func(res client.SchemeResult) {
		fmt.Fprintln(opts.IO.ErrOut, schemeLine(&res, opts.IO.ErrPainter(), "accepted"))
	}
	if err := sess.AuthenticateStoredAll(callCtx, refused); err != nil {
		return err
	}
	if opts.Method != wire.MethodInitialize {
		var p any
		if opts.Params != nil {
			p = opts.Params
		}
		raw = nil
		err := sess.Client.Call(callCtx, opts.Method, p, &raw)
		retry, rerr := sess.Renew(callCtx, err, refused)
		if rerr != nil {
			return rerr
		}
		if retry {
			raw = nil
			err = sess.Client.Call(callCtx, opts.Method, p, &raw)
		}
		// An upstream sign-in: the wait has its own bound, the call
		// sent again a new CallTimeout.
		if retry, rerr = sess.FollowSignIn(ctx, opts.Method, err, opts.SignIn, token); rerr != nil {
			return rerr
		}
		if retry {
			raw = nil
			err = withCallTimeout(ctx, func(ctx context.Context) error { return sess.Client.Call(ctx, opts.Method, p, &raw) })
			if serr := client.StillNeedsSignIn(opts.Method, err); serr != nil {
				return serr
			}
		}
		if err != nil {
			return opts.rpcFailure(opts.Method, err, reqs, sess.Init)
		}
	}
	if err := opts.printJSON(raw); err != nil {
		return err
	}
	if opts.Watch {
		return opts.watch(ctx, sess.Client)
	}
	return nil
}

// rpcFailure reports a failed call: a -32007 prints its challenges and
// becomes an AuthError (exit 4) whose hint is the login command, and so
// does an ACP agent's -32000 (init, the initialize result, says it is
// one; nil before it); any other JSON-RPC error exits 1.
func (opts *CallOptions) rpcFailure(method string, err error, reqs []wire.Requirement, init *wire.InitializeResult) error {
	var rpc *wire.Error
	if errors.Is(err, wire.ErrTokenNotAccepted) {
		return &AuthError{Err: err, Hint: client.LoginCommand(opts.Target, "")}
	}
	if !errors.As(err, &rpc) {
		return fmt.Errorf("cannot call %s: %w", method, err)
	}
	if opts.JSON {
		if b, merr := json.Marshal(rpc); merr == nil {
			fmt.Fprintln(opts.IO.Out, string(b))
		}
	}
	if init != nil && init.IsACPAgent() && rpc.Code == wire.CodeACPAuthRequired {
		return opts.acpAuthRequired(method, rpc, init.AuthMethods)
	}
	data, ok := rpc.AuthRequired()
	if !ok {
		if len(rpc.Data) > 0 {
			return fmt.Errorf("%s failed: %w (data: %s)", method, rpc, rpc.Data)
		}
		return fmt.Errorf("%s failed: %w", method, rpc)
	}
	printChallenges(opts.IO, method, data, reqs)
	what := method + " needs authentication"
	if method == wire.MethodAuthenticate {
		what = "the host rejected the token"
	}
	var id, resource string
	if len(data.Challenges) == 1 {
		id, resource = client.SchemeHint(reqs, data.Challenges[0].SchemeID), data.Challenges[0].Resource
	}
	hint := client.LoginHint(opts.Target, id, resource)
	if len(data.Challenges) == 1 && data.Challenges[0].Error == wire.ErrInsufficientScope {
		// A plain login would ask for the scope the token already has.
		if scope := wire.JoinScope(strings.Fields(data.Challenges[0].Scope)); scope != "" {
			what = method + " needs more scope: " + scope
			hint = client.WithScope(hint, scope)
		}
	}
	return &AuthError{Err: errors.New(what), Hint: hint}
}

// printChallenges writes each -32007 challenge for people: scheme, error,
// description, scope and where to get a token.
func printChallenges(s *IOStreams, method string, data wire.AuthRequiredData, reqs []wire.Requirement) {
	p := s.ErrPainter()
	fmt.Fprintf(s.ErrOut, "%s answered %s:\n", method, p.Bold("authentication required (-32007)"))
	for _, ch := range data.Challenges {
		fmt.Fprintf(s.ErrOut, "  %s\n", p.Yellow(safeText(ch.String())))
		if servers := serversFor(ch, data, reqs); len(servers) > 0 {
			fmt.Fprintf(s.ErrOut, "    get a token from: %s\n", safeText(strings.Join(servers, ", ")))
		}
		fmt.Fprintf(s.ErrOut, "    resource: %s\n", safeText(ch.Resource))
	}
}

func serversFor(ch wire.Challenge, data wire.AuthRequiredData, reqs []wire.Requirement) []string {
	for _, r := range data.Resources {
		if r.SchemeID == ch.SchemeID || (r.SchemeID == "" && r.Resource == ch.Resource) {
			return r.AuthorizationServers
		}
	}
	for _, r := range reqs {
		if r.SchemeID == ch.SchemeID {
			return r.AuthorizationServers
		}
	}
	return nil
}

func (opts *CallOptions) printJSON(raw json.RawMessage) error {
	var buf bytes.Buffer
	var err error
	if opts.JSON {
		err = json.Compact(&buf, raw)
	} else {
		err = json.Indent(&buf, raw, "", "  ")
	}
	if err != nil {
		return fmt.Errorf("cannot print the result: %w", err)
	}
	buf.WriteByte('\n')
	_, err = opts.IO.Out.Write(buf.Bytes())
	return err
}

// watch prints every notification as one JSON line until the connection
// closes, ctx ends (Ctrl-C) or --max-notifications is reached.
func (opts *CallOptions) watch(ctx context.Context, client *wire.Client) error {
	if opts.IO.StderrTTY {
		fmt.Fprintln(opts.IO.ErrOut, "Watching notifications; press Ctrl-C to stop.")
	}
	for n := 0; opts.MaxNotifications == 0 || n < opts.MaxNotifications; n++ {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-client.Notifications():
			if !ok {
				return nil
			}
			b, err := wire.Encode(m)
			if err != nil {
				return fmt.Errorf("cannot print a notification: %w", err)
			}
			fmt.Fprintln(opts.IO.Out, string(b))
		}
	}
	return nil
}

// acpAuthRequired is an ACP agent's auth_required (-32000, ACP schema
// 1.7.0 ErrorCode): exit 4, with the authenticate command that signs in
// with the agent's one method, or that lists its methods.
func (opts *CallOptions) acpAuthRequired(method string, rpc *wire.Error, methods []wire.AuthMethod) error {
	cmd := "agentauth authenticate "
	if len(methods) == 1 {
		cmd += "--method " + client.ShellQuote(methods[0].ID) + " "
	}
	return &AuthError{Err: fmt.Errorf("%s failed: the agent requires authentication: %s", method, client.RPCText(rpc)),
		Hint: cmd + client.ShellQuote(wire.RedactTarget(opts.Target))}
}
