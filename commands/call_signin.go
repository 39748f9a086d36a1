package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
)

// callSignInHelp is call's help for upstream sign-ins.
const callSignInHelp = `Upstream sign-in: a server that calls another service as you (agentauth
serve with "upstreams") may answer that you must first sign in to that
service: MCP -32042 or a 2026-07-28 input_required URL elicitation, -32007
(agent hosts) or -32000 (ACP) with a url, or a --rest 401
authentication_required. call then prints "Sign in to LABEL (HOST) to
continue:" and the URL on stderr, opens it ($BROWSER when set, else the
system browser on a terminal), waits until the server says the sign-in
completed (its push on a WebSocket or stdio connection, ACP's authenticate,
or polling its auth status URL) for at most --wait-timeout, and sends the
request once more. Still asked after that, timed out, or with --no-wait:
exit 4 (with --json the ask is printed on stdout: {"error":
"sign_in_required", "method", "url", "elicitationId", "authStatus",
"upstream"}). The service's tokens stay with the server. An MCP server may
instead send a url-mode elicitation/create within the call (MCP
2025-11-25): call shows and opens its URL and answers accept (with
--no-wait: cancel), and the server finishes the call itself, within the
call's 60 s; other elicitation modes are refused (-32602).

--rest: TARGET is the server's base URL (http://HOST:PORT) and METHOD a tool
name: call POSTs PARAMS_JSON (default {}) to TARGET/tools/METHOD with the
bearer token (--token-stdin, else the one stored for TARGET or its origin)
and prints the tool's JSON result.`

// signInFlags are call's flags for upstream sign-ins and --rest.
func signInFlags(opts *CallOptions) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "no-wait", Usage: "when the server asks for an upstream sign-in, print the URL and exit 4 instead of waiting", Destination: &opts.SignIn.NoWait},
		&cli.DurationFlag{Name: "wait-timeout", Value: client.DefaultSignInWait, Usage: "wait at most `DURATION` (e.g. 2m) for an upstream sign-in to complete", Destination: &opts.SignIn.WaitTimeout},
		&cli.BoolFlag{Name: "rest", Usage: "TARGET is a plain HTTP tool server: POST PARAMS_JSON to TARGET/tools/METHOD", Destination: &opts.REST},
	}
}

// checkSignIn rejects sign-in flag combinations that cannot work.
func (opts *CallOptions) checkSignIn(waitTimeoutSet bool) error {
	switch {
	case opts.SignIn.WaitTimeout <= 0:
		return usageErrorf("--wait-timeout must be positive, e.g. 10m")
	case opts.SignIn.NoWait && waitTimeoutSet:
		return usageErrorf("--no-wait and --wait-timeout exclude each other")
	case opts.REST && !client.IsHTTPTarget(opts.Target):
		return usageErrorf("--rest needs an http(s) TARGET: the server's base URL, e.g. http://127.0.0.1:7788")
	case opts.REST && opts.Login.Enabled:
		return usageErrorf("--login works with MCP servers, not with --rest; pipe a token into --token-stdin instead")
	case opts.REST && opts.Params != nil && opts.Params[0] != '{':
		return usageErrorf("with --rest, PARAMS_JSON must be a JSON object of the tool's arguments")
	}
	return nil
}

// runCallREST calls a plain HTTP tool (client.Client.CallREST).
func runCallREST(ctx context.Context, opts *CallOptions) error {
	req := client.RESTCall{Target: opts.Target, Tool: opts.Method, Args: opts.Params, SignIn: opts.SignIn}
	var err error
	if req.Token, err = opts.bearer(); err != nil {
		return err
	}
	raw, err := opts.Client.CallREST(ctx, req)
	if err != nil {
		return err
	}
	return opts.printJSON(raw)
}

// signInJSON is what call --json prints on stdout for an upstream sign-in
// that did not happen.
type signInJSON struct {
	Error         string `json:"error"`
	Method        string `json:"method"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId,omitempty"`
	AuthStatus    string `json:"authStatus,omitempty"`
	Upstream      any    `json:"upstream"`
}

// reportSignIn prints, with --json, the ask of a sign-in that did not
// happen (--no-wait, timeout, asked again) on stdout; err is returned.
func (opts *CallOptions) reportSignIn(err error) error {
	var sir *client.SignInRequiredError
	if !opts.JSON || !errors.As(err, &sir) {
		return err
	}
	b, merr := json.Marshal(signInJSON{Error: "sign_in_required", Method: sir.Method, URL: sir.Ask.URL,
		ElicitationID: sir.Ask.ElicitationID, AuthStatus: sir.Ask.AuthStatus, Upstream: sir.Ask.Upstream})
	if merr != nil {
		return fmt.Errorf("cannot print the sign-in: %w", merr)
	}
	fmt.Fprintln(opts.IO.Out, string(b))
	return err
}

// withCallTimeout runs f within client.CallTimeout.
func withCallTimeout(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, client.CallTimeout)
	defer cancel()
	return f(ctx)
}
