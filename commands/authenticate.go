package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// AuthenticateOptions are authenticate's inputs.
type AuthenticateOptions struct {
	IO     *IOStreams
	Now    func() time.Time
	Client *client.Client

	Target     string
	SchemeID   string
	MethodID   string
	TokenStdin bool
	Watch      bool
	JSON       bool
	// Timeout bounds an ACP method's sign-in (default acpMethodTimeout).
	Timeout time.Duration
}

func newAuthenticateCommand(f *Factory) *cli.Command {
	return authenticateCommand(f, runAuthenticate)
}

// authenticateCommand builds the command around run, so tests can check
// what the flags become.
func authenticateCommand(f *Factory, run func(context.Context, *AuthenticateOptions) error) *cli.Command {
	opts := &AuthenticateOptions{}
	return &cli.Command{
		Name:      "authenticate",
		Usage:     "hand the stored tokens to a target and report, per scheme, whether it accepts them",
		ArgsUsage: "TARGET",
		Description: `TARGET is an agent host (ws://HOST:PORT, wss://…, stdio:COMMAND LINE) or an
MCP server (https://…, or http:// on a loopback address).

Agent hosts: initialize, then for every scheme the host declares (or --scheme)
take the stored credential, refresh it when it expires within 60 s, and send
authenticate in the dialect the host speaks. A token the host refuses with
invalid_token is refreshed once and sent again. HTTP targets: one MCP
initialize request with the bearer token proves that it is accepted.

One line per scheme on stderr:
  ✓ dev: accepted as alice (agent:use)
  X github: invalid_token — The access token expired
--json prints one JSON line on stdout:
  {"target", "kind" ("agent-host"|"http"), "dialect", "authenticated",
   "loginCommand", "schemes": [{"schemeId", "label", "resource", "required",
   "source" ("store"|"stdin"), "accepted", "subject", "scopes", "expiresAt",
   "refreshed", "error", "errorDescription", "refreshError", "httpStatus",
   "challenge"}]}
"error" is an RFC 6750 code from the host, or no_credential, login_required,
not_accepted.

--watch stays connected and prints each auth-state notification. "expired"
is answered by refreshing and authenticating again, without user action;
"revoked" and "required" by a forced refresh, and when that is impossible
authenticate exits 4 with the login command. With --json, each event is one
more JSON line: {"event" ("notification"|"reauthenticated"|"failed"),
"time", "schemeId", "state", "challenge", "result" (a scheme as above)}.

ACP agents: without --method, an agent that already works (its auth state,
else session/new in an empty directory) needs no sign-in (exit 0); an agent
with one auth method uses it; one with several lists them, each with its
description and the command that uses it (exit 2). --method ID authenticates
with one of the methods the agent advertises (see discover), as its type
says: agent — authenticate {methodId}, showing what the agent prints (a
sign-in URL) until it answers or --timeout (default 5m) passes; terminal —
runs the agent's own command with the method's args and env; env_var — the
variables must be set in agentauth's environment, which the agent inherits.
A login command runs on this terminal as its foreground job, and the
terminal's settings are restored afterwards (stdin closed without a
terminal); when --timeout passes, its whole process group is stopped.
Compatibility: an agent method with _meta["terminal-auth"] {command, args,
env, label} (Zed's convention, used by GitHub Copilot CLI, opencode, kilo
and auggie; agentauth declares clientCapabilities._meta["terminal-auth"])
runs that command as a terminal method. Each ends by asking the agent
(auth/status, else session/new): ✓ only when it says signed in. A timeout
names the step that ran out (start-up, initialize, sign-in, final check).
With --json: {"target", "methodId", "type", "authenticated", "checkedWith"},
or {"target", "kind", "authenticated", "signInNeeded": false, "checkedWith"}.
Exits 2 for a method the agent does not advertise, or a choice to make; 4
when the agent refused (any JSON-RPC error), the login command failed, or
the agent still requires authentication; the next step is on stderr.

Exits 0 only when every required scheme is accepted, 4 otherwise (the login
command to run is printed on stderr).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "authenticate only the scheme `ID`", Destination: &opts.SchemeID},
			&cli.StringFlag{Name: "method", Usage: "ACP agents: authenticate with the advertised auth method `ID` (agent, terminal or env_var)", Destination: &opts.MethodID},
			&cli.DurationFlag{Name: "timeout", Usage: "ACP agents: stop the agent's sign-in after `DURATION` (default 5m)", Destination: &opts.Timeout},
			&cli.BoolFlag{Name: "token-stdin", Usage: "authenticate one scheme with a token read from stdin instead of the store", Destination: &opts.TokenStdin},
			&cli.BoolFlag{Name: "watch", Usage: "stay connected: print auth-state notifications and re-authenticate after expiry", Destination: &opts.Watch},
			&cli.BoolFlag{Name: "json", Usage: "print the result (and, with --watch, each event) as JSON lines on stdout", Destination: &opts.JSON},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			if opts.Timeout != 0 && (client.IsHTTPTarget(opts.Target) || opts.SchemeID != "" || opts.TokenStdin || opts.Watch) {
				return usageErrorf("--timeout applies to an ACP agent's sign-in (ws://, wss:// or stdio:), without --scheme, --token-stdin or --watch")
			}
			if opts.MethodID != "" && (client.IsHTTPTarget(opts.Target) || opts.SchemeID != "" || opts.TokenStdin || opts.Watch) {
				return usageErrorf("--method applies alone, to an ACP agent (ws://, wss:// or stdio:)")
			}
			if client.IsHTTPTarget(opts.Target) {
				if opts.Watch {
					return usageErrorf("--watch needs a connection (ws://, wss:// or stdio:); an HTTP target sends no notifications")
				}
				if opts.SchemeID != "" {
					return usageErrorf("--scheme applies to agent hosts; an HTTP target has one requirement")
				}
			}
			opts.IO, opts.Now, opts.Client = f.IO, f.Now, f.Client()
			return withTarget(opts.Target, run(c.Context, opts))
		},
	}
}

// line renders the result for people: "✓ dev: accepted as alice (agent:use)",
// "X dev: invalid_token — The access token expired"; verb says what
// happened on success ("accepted", "re-authenticated").
func schemeLine(r *client.SchemeResult, p Painter, verb string) string {
	if r.Accepted {
		s := verb
		if r.Subject != "" {
			s += " as " + r.Subject
		}
		if len(r.Scopes) > 0 {
			s += " (" + wire.JoinScope(r.Scopes) + ")"
		}
		return p.Green("✓") + " " + safeText(r.Name()+": "+s)
	}
	mark := p.Red("X")
	if !r.Required {
		mark = p.Yellow("!")
	}
	return mark + " " + safeText(r.Name()+": "+r.Reason())
}

// authenticateDoc is authenticate --json's document.
type authenticateDoc struct {
	Target        string                `json:"target"`
	Kind          string                `json:"kind"`
	Dialect       string                `json:"dialect,omitempty"`
	Authenticated bool                  `json:"authenticated"`
	LoginCommand  string                `json:"loginCommand,omitempty"`
	Schemes       []client.SchemeResult `json:"schemes"`
}

// watchEvent is one JSON line of authenticate --watch --json.
type watchEvent struct {
	Event     string               `json:"event"`
	Time      time.Time            `json:"time"`
	SchemeID  string               `json:"schemeId,omitempty"`
	State     string               `json:"state,omitempty"`
	Challenge *wire.Challenge      `json:"challenge,omitempty"`
	Result    *client.SchemeResult `json:"result,omitempty"`
}

func runAuthenticate(ctx context.Context, opts *AuthenticateOptions) error {
	var token string
	if opts.TokenStdin {
		var err error
		if token, err = readStdinSecret(opts.IO.In, "--token-stdin", "token"); err != nil {
			return err
		}
	} else if opts.MethodID == "" {
		token = envToken() // AGENTAUTH_TOKEN (envtoken.go)
	}
	setupCtx, cancel := context.WithTimeout(ctx, client.AuthTimeout)
	defer cancel()
	if client.IsHTTPTarget(opts.Target) {
		return opts.runHTTP(setupCtx, token)
	}
	if opts.MethodID != "" {
		return opts.runMethod(ctx)
	}
	sess, err := opts.Client.OpenHost(setupCtx, opts.Target, token != "")
	if err != nil {
		return err
	}
	defer sess.Close()
	reqs, err := client.SelectRequirements(sess.Reqs, opts.SchemeID, token != "")
	if err != nil {
		return err
	}
	if len(sess.Reqs) == 0 && sess.Init.IsACPAgent() && token == "" {
		// An ACP agent's own sign-in: its auth methods, checked with
		// the agent (runAgent).
		return opts.runAgent(ctx, setupCtx, sess)
	}
	if len(reqs) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "%s declares no auth requirement: nothing to authenticate.\n", wire.RedactTarget(opts.Target))
	}
	doc := authenticateDoc{Target: wire.RedactTarget(opts.Target), Kind: client.KindAgentHost, Dialect: sess.Dialect.String(), Schemes: []client.SchemeResult{}}
	p := opts.IO.ErrPainter()
	for _, r := range reqs {
		res, err := sess.AuthenticateScheme(setupCtx, r, token)
		if err != nil {
			return err
		}
		doc.Schemes = append(doc.Schemes, res)
		fmt.Fprintln(opts.IO.ErrOut, schemeLine(&res, p, "accepted"))
	}
	if err := opts.report(&doc, client.AuthFailure(opts.Target, sess.Reqs, doc.Schemes)); err != nil {
		return err
	}
	if opts.Watch {
		return opts.watch(ctx, sess, reqs)
	}
	return nil
}

// report completes doc with failure (the *AuthError of the required
// schemes that were not accepted, nil when there are none), prints it with
// --json, and returns failure.
func (opts *AuthenticateOptions) report(doc *authenticateDoc, failure *AuthError) error {
	doc.Authenticated = failure == nil
	if failure != nil {
		doc.LoginCommand = failure.Hint
	}
	if opts.JSON {
		if err := writeJSONLine(opts.IO.Out, doc); err != nil {
			return err
		}
	}
	if failure != nil {
		return failure
	}
	return nil
}

// runHTTP proves a token to an MCP server with one authenticated request.
func (opts *AuthenticateOptions) runHTTP(ctx context.Context, token string) error {
	var res client.SchemeResult
	var err error
	if token != "" {
		res = client.SchemeResult{Resource: opts.Target, Required: true, Source: "stdin"}
		if err = opts.Client.ProveHTTP(ctx, opts.Target, token, &res); err == nil && res.Accepted {
			res.Subject = client.TokenSubject(token)
		}
	} else {
		res, err = opts.Client.AuthenticateStoredHTTP(ctx, opts.Target)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.ErrOut, schemeLine(&res, opts.IO.ErrPainter(), "accepted"))
	doc := authenticateDoc{Target: opts.Target, Kind: client.KindHTTP, Schemes: []client.SchemeResult{res}}
	return opts.report(&doc, client.AuthFailure(opts.Target, nil, doc.Schemes))
}

// watch keeps the connection and prints the host's auth-state pushes and
// what re-authenticating did (client.HostSession.Watch).
func (opts *AuthenticateOptions) watch(ctx context.Context, sess *client.HostSession, reqs []wire.Requirement) error {
	p := opts.IO.ErrPainter()
	if opts.IO.StderrTTY {
		fmt.Fprintln(opts.IO.ErrOut, "Watching the auth state; press Ctrl-C to stop.")
	}
	return sess.Watch(ctx, reqs, func(e client.WatchEvent) error {
		n := e.Notification
		if e.Result == nil {
			fmt.Fprintln(opts.IO.ErrOut, notificationLine(n, p))
			return opts.event(watchEvent{Event: "notification", SchemeID: n.Req.SchemeID, State: n.State, Challenge: n.Challenge})
		}
		event := "reauthenticated"
		if !e.Result.Accepted {
			event = "failed"
		}
		fmt.Fprintln(opts.IO.ErrOut, schemeLine(e.Result, p, "re-authenticated"))
		return opts.event(watchEvent{Event: event, SchemeID: n.Req.SchemeID, Result: e.Result})
	})
}

func (opts *AuthenticateOptions) event(e watchEvent) error {
	if !opts.JSON {
		return nil
	}
	e.Time = opts.Now().UTC().Truncate(time.Second) // RFC 3339 seconds, as every time agentauth prints
	return writeJSONLine(opts.IO.Out, e)
}

// line renders a push: "! dev: expired — The access token expired".
func notificationLine(n client.AuthNotification, p Painter) string {
	mark := p.Red("X")
	switch n.State {
	case wire.StateAuthenticated:
		mark = p.Green("✓")
	case wire.StateExpired:
		mark = p.Yellow("!")
	}
	s := n.Name() + ": " + n.State
	if n.Challenge != nil && n.Challenge.ErrorDescription != "" {
		s += " — " + n.Challenge.ErrorDescription
	}
	return mark + " " + safeText(s)
}

// writeJSONLine writes v as one line of compact JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot print JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// exitText says how a command ended.
func exitText(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.Exited() {
			return fmt.Sprintf("exited with status %d: not authenticated", exit.ExitCode())
		}
		return "was ended by a signal (" + exit.String() + "): not authenticated"
	}
	return "could not run: " + err.Error()
}
