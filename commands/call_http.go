package commands

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// callHTTPHelp is call's help for MCP servers over HTTP.
const callHTTPHelp = `An http:// or https:// TARGET is an MCP server (MCP Streamable HTTP):
call sends server/discover (MCP 2026-07-28), or, when the server does not
speak 2026-07-28, initialize and notifications/initialized (2025-11-25 and
earlier), then METHOD; --mcp-version VERSION speaks that revision only, to
try a server's older face. Each request carries the stored access token
(refreshed first when it expires within 60 s) in the Authorization header.
A 401 to a stored token refreshes it once and retries. Otherwise a 401 or 403 prints the server's challenge
(status, error, description, scope, resource_metadata) and exits 4 with the
login command to run, unless --login is given: then a 401 runs discovery and
the login flow (as login does: the same scope and client choice and flags)
and retries once; a 403 insufficient_scope logs in again asking for the
scopes held plus the challenge's scope (a refresh cannot widen a grant) and
retries. A 401 right after a login, or a third authorization still refused,
stops with exit 4.`

// CallLoginOptions are call's flags for logging in by itself (--login):
// the part of login's flags that fits a call.
type CallLoginOptions struct {
	Enabled bool
	LoginChoices
}

// loginFlagNames are the flags that need --login.
var loginFlagNames = []string{"scope", "client-id", "client-secret-stdin", "client-metadata-url", "device", "no-browser", "callback-host", "callback-port"}

// callLoginFlags are call's --login flags, writing into l.
func callLoginFlags(l *CallLoginOptions) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "login", Usage: "MCP servers over HTTP: on a 401 log in (as login does) and retry; on a 403 insufficient_scope log in again with more scope", Destination: &l.Enabled},
	}, loginChoiceFlags(&l.LoginChoices, "with --login, ")...)
}

// check validates the --login flags like login does; they need --login,
// and --login needs an http(s) target.
func (l *CallLoginOptions) check(c *cli.Context, httpTarget bool) error {
	if !l.Enabled {
		for _, name := range loginFlagNames {
			if c.IsSet(name) {
				return usageErrorf("--%s needs --login", name)
			}
		}
		return nil
	}
	if !httpTarget {
		return usageErrorf("--login works with http(s) MCP servers only; for an agent host, run agentauth login TARGET first")
	}
	return l.LoginChoices.check(c.IsSet("client-id"))
}

// checkHTTP rejects the agent-host flags for an MCP server.
func (opts *CallOptions) checkHTTP() error {
	switch {
	case opts.SetAuthToken, opts.SchemeID != "", opts.Watch, opts.MaxNotifications != 0, opts.Dialect != wire.DialectDesign:
		return usageErrorf("--set-auth-token, --scheme, --watch, --max-notifications and --dialect are for agent hosts, not MCP servers over HTTP")
	case opts.Login.Enabled && opts.TokenStdin:
		return usageErrorf("--login and --token-stdin exclude each other")
	case opts.Method == wire.MethodInitialize && opts.Params != nil:
		return usageErrorf("an MCP server over HTTP is initialized with agentauth's own params: give no PARAMS_JSON to initialize")
	}
	return nil
}

// checkMCPVersion: --mcp-version is for MCP servers over HTTP and names
// a revision call speaks.
func (opts *CallOptions) checkMCPVersion() error {
	switch {
	case opts.MCPVersion == "":
		return nil
	case !client.IsHTTPTarget(opts.Target) || opts.REST:
		return usageErrorf("--mcp-version is for MCP servers over HTTP, not for agent hosts or --rest")
	case !slices.Contains(wire.MCPClientVersions(), opts.MCPVersion):
		return usageErrorf("--mcp-version must be one of %s, not %q", strings.Join(wire.MCPClientVersions(), ", "), opts.MCPVersion)
	}
	return nil
}

// runCallHTTP calls METHOD on an MCP server over Streamable HTTP
// (client.Client.CallMCP) and prints the result.
func runCallHTTP(ctx context.Context, opts *CallOptions) error {
	req := client.MCPCall{Target: opts.Target, Method: opts.Method, Params: opts.Params, Login: opts.Login.Enabled, SignIn: opts.SignIn, Version: opts.MCPVersion}
	var secret string
	var err error
	switch {
	case opts.hasToken():
		if req.Token, err = opts.bearer(); err != nil {
			return err
		}
	case opts.Login.ClientSecretStdin:
		if secret, err = readStdinSecret(opts.IO.In, "--client-secret-stdin", "client secret"); err != nil {
			return err
		}
	}
	req.Choices = opts.Login.choices(secret)
	raw, err := opts.Client.CallMCP(ctx, req)
	var failed *client.CallError
	var missing *wire.HTTPStatusError
	if errors.As(err, &failed) && errors.As(failed.Err, &missing) && missing.StatusCode == http.StatusNotFound {
		if hint := opts.Client.EndpointHint(ctx, opts.Target, opts.commandAt); hint != "" {
			return fmt.Errorf("%w\n%s", err, hint)
		}
	}
	if errors.As(err, &failed) {
		return opts.httpFailure(failed)
	}
	if err != nil {
		return err
	}
	return opts.printJSON(raw)
}

// commandAt is this call's command line with endpoint as TARGET: METHOD
// and PARAMS_JSON as given, and --login when it was.
func (opts *CallOptions) commandAt(endpoint string) string {
	args := []string{"agentauth", "call"}
	if opts.Login.Enabled {
		args = append(args, "--login")
	}
	args = append(args, endpoint, opts.Method)
	if opts.Params != nil {
		args = append(args, string(opts.Params))
	}
	return client.CommandLine(args...)
}

// httpFailure reports a failed step: a refusal prints the challenge and
// exits 4 (with the login command when --login was not given); a JSON-RPC
// error is reported like an agent host's.
func (opts *CallOptions) httpFailure(failed *client.CallError) error {
	var refused *client.RefusedError
	var rpc *wire.Error
	switch {
	case errors.As(failed.Err, &refused):
		printRefusal(opts.IO, failed.Method, refused.Refusal)
		var hint string
		if refused.Reason == client.StopNoLogin {
			hint = client.HTTPLoginHint(opts.Target, refused)
		}
		err := fmt.Errorf("cannot call %s: %w", failed.Method, refused)
		if hint != "" {
			err = fmt.Errorf("%w (call --login logs in by itself)", err)
		}
		return &AuthError{Err: err, Hint: hint}
	case errors.As(failed.Err, &rpc):
		return opts.rpcFailure(failed.Method, failed.Err, nil, nil)
	}
	return failed
}

// printRefusal writes a 401/403 for people: the status, then each field of
// the Bearer challenge (RFC 6750 §3, RFC 9728 §5.1) the server sent.
func printRefusal(io *IOStreams, method string, e *wire.HTTPAuthError) {
	w, p := io.ErrOut, io.ErrPainter()
	fmt.Fprintf(w, "%s: the server answered %s\n", method, p.Yellow(fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))))
	for _, k := range []string{"error", "error_description", "scope", "resource_metadata"} {
		if v := e.Challenge.Param(k); v != "" {
			label := k
			if k == "error_description" {
				label = "description"
			}
			fmt.Fprintf(w, "  %s: %s\n", label, safeText(v))
		}
	}
	if e.Challenge.Scheme == "" {
		fmt.Fprintln(w, "  (no Bearer challenge in WWW-Authenticate)")
	}
}
