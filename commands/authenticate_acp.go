package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// This file is authenticate for ACP agents (Agent Client Protocol, schema
// 1.7.0, docs/protocol/v1/authentication.mdx): an agent's own sign-in
// with one of the auth methods it advertises, always checked with the
// agent before ✓ is printed.

// acpMethodTimeout is how long authenticate --method waits for an ACP
// agent to sign in (an agent method that opens a browser, a terminal
// method's login command) unless --timeout says otherwise.
const acpMethodTimeout = 5 * time.Minute

// The steps of an ACP sign-in that --timeout bounds, as a timeout names
// them.
const (
	stepStartUp    = "start-up"
	stepInitialize = "initialize"
	stepSignIn     = "sign-in"
	stepCheck      = "final check"
)

// runAgent is authenticate without --method for an ACP agent, sess its
// connection: an agent that already works (its auth state, else
// session/new) needs no sign-in (exit 0); one auth method is used as with
// --method; several are listed with their descriptions and the command
// for each (exit 2). An agent with no method that still refuses
// session/new is exit 4; one that cannot be checked is exit 1.
func (opts *AuthenticateOptions) runAgent(ctx, setupCtx context.Context, sess *client.HostSession) error {
	agent := &client.ACPAgent{Target: opts.Target, Client: sess.Client, Init: sess.Init}
	methods := agent.Init.AuthMethods
	st, checkErr := agentState(setupCtx, agent, sess)
	target := wire.RedactTarget(opts.Target)
	p := opts.IO.ErrPainter()
	if checkErr == nil && st.Authenticated {
		if opts.JSON {
			if err := writeJSONLine(opts.IO.Out, map[string]any{"target": target, "kind": "acp-agent", "authenticated": true, "signInNeeded": false, "checkedWith": st.Via}); err != nil {
				return err
			}
		}
		what := "no sign-in needed"
		if st.Via != "session/new" {
			what = "already signed in"
		}
		fmt.Fprintf(opts.IO.ErrOut, "%s %s: %s (checked with %s%s)\n", p.Green("✓"), safeText(target), what, st.Via, safeText(cmpSuffix(": ", st.Message, "")))
		return nil
	}
	switch {
	case len(methods) == 1:
		sess.Close()
		opts.MethodID = methods[0].ID
		fmt.Fprintf(opts.IO.ErrOut, "%s offers one auth method: %s (%s)\n", safeText(target), safeText(methods[0].ID), safeText(methods[0].Name))
		return opts.runMethod(ctx)
	case len(methods) > 1:
		fmt.Fprintf(opts.IO.ErrOut, "%s offers %d auth methods:\n", safeText(target), len(methods))
		printMethodChoices(opts.IO.ErrOut, opts.Target, methods)
		return usageErrorf("choose one with --method")
	case checkErr != nil:
		return fmt.Errorf("cannot tell whether %s needs a sign-in: it advertises no auth method, and %w", target, checkErr)
	}
	return &AuthError{Err: fmt.Errorf("%s requires authentication (%s: %s) but advertises no auth method\nSign in with the agent's own program, then run again: %s",
		target, st.Via, cmp.Or(st.Message, "not authenticated"), "agentauth authenticate "+client.ShellQuote(target))}
}

// agentState is what the agent says of its sign-in before anything is
// done: its auth-state query, else the state it pushes (authStatus
// extension), else session/new. A session/new refused otherwise than
// with -32000 is an error: the agent cannot be checked.
func agentState(ctx context.Context, agent *client.ACPAgent, sess *client.HostSession) (client.ACPState, error) {
	st, err := agent.State(ctx, false)
	if err != nil || st.Known {
		return st, err
	}
	if pushed := sess.PushedAuthStatus(ctx); pushed != nil {
		return client.ACPState{Known: true, Authenticated: pushed.Authenticated, Message: pushed.Message, Via: wire.MethodAuthStatusUpdate}, nil
	}
	return agent.State(ctx, true)
}

// printMethodChoices writes each method: id, type and name; the agent's
// description; the command it runs, if any; and the authenticate command
// that uses it, shell-quoted so that it works when pasted.
func printMethodChoices(w io.Writer, target string, methods []wire.AuthMethod) {
	for _, m := range methods {
		fmt.Fprintf(w, "  %s\n", safeText(methodTitle(m)))
		if m.Description != "" {
			fmt.Fprintf(w, "    %s\n", safeText(m.Description))
		}
		if line := methodCommandLine(target, m); line != "" {
			fmt.Fprintf(w, "    runs: %s\n", safeText(line))
		}
		fmt.Fprintf(w, "    agentauth authenticate --method %s %s\n", safeText(client.ShellQuote(m.ID)), safeText(client.ShellQuote(wire.RedactTarget(target))))
	}
}

// methodTitle is "id (type): name", the type "agent, runs a login
// command" for an agent method with a terminal-auth command.
func methodTitle(m wire.AuthMethod) string {
	kind := m.Kind()
	if kind == wire.AuthMethodAgent && m.TerminalAuth() != nil {
		kind += ", runs a login command"
	}
	return fmt.Sprintf("%s (%s): %s", m.ID, kind, m.Name)
}

// methodCommandLine is the command a method runs, shell-quoted, or "" for
// a method that runs none (or one that cannot be worked out).
func methodCommandLine(target string, m wire.AuthMethod) string {
	if !m.RunsCommand() {
		return ""
	}
	cmd, err := client.TerminalCommand(context.Background(), target, m)
	if err != nil {
		if ta := m.TerminalAuth(); ta != nil {
			return client.CommandLine(append([]string{ta.Command}, ta.Args...)...)
		}
		return ""
	}
	return client.CommandLine(cmd.Args...)
}

// runMethod authenticates an ACP agent with one of its advertised methods,
// as its type says (ACP schema 1.7.0 AuthMethod;
// docs/protocol/v1/authentication.mdx): agent — authenticate {methodId}
// (auth/login in the v2 draft), the agent's output shown as it signs in;
// terminal, or an agent method with _meta["terminal-auth"] — the login
// command on the user's terminal (runTerminal), then a new connection
// and initialize; env_var — the variables must be set in agentauth's
// environment, which the agent inherits. Each ends with the agent's own
// state (auth/status when it reports it, else session/new): ✓ only when
// that says signed in. Not authenticated is exit 4.
func (opts *AuthenticateOptions) runMethod(ctx context.Context) error {
	timeout := cmp.Or(opts.Timeout, acpMethodTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := agentOutput(opts.IO.ErrOut)
	defer out.Flush()
	step := stepStartUp
	acpOpts := client.ACPOptions{Output: out, Step: func(s string) { step = s }}
	agent, err := opts.Client.OpenACP(ctx, opts.Target, acpOpts)
	if err != nil {
		return opts.methodErr(ctx, err, timeout, step)
	}
	defer func() { agent.Close() }()
	m, err := agent.Method(opts.MethodID)
	if err != nil {
		return err
	}
	p := opts.IO.ErrPainter()
	id := safeText(m.ID)
	step = stepSignIn
	switch {
	case m.RunsCommand():
		agent.Close()
		if err := opts.runLoginCommand(ctx, m, timeout); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "The login command exited with status 0; connecting to the agent again…\n")
		step = stepStartUp
		if agent, err = opts.Client.OpenACP(ctx, opts.Target, acpOpts); err != nil {
			return opts.methodErr(ctx, err, timeout, step)
		}
	case m.Kind() == wire.AuthMethodEnvVar:
		if missing := client.MissingVars(m); len(missing) > 0 {
			hint := "Set " + strings.Join(missing, " and ") + " in agentauth's environment (the agent inherits it) and run again"
			if m.Link != "" {
				hint += "; get the value at " + m.Link
			}
			return &AuthError{Err: fmt.Errorf("cannot authenticate with method %s: %s not set\n%s", m.ID, strings.Join(missing, ", "), hint)}
		}
		fmt.Fprintf(opts.IO.ErrOut, "Authenticating with %s (%s set in the agent's environment)…\n", id, safeText(strings.Join(m.VarNames(), ", ")))
		if err := agent.Login(ctx, m.ID); err != nil {
			return opts.loginErr(ctx, m, err, timeout)
		}
	default:
		fmt.Fprintf(opts.IO.ErrOut, "Waiting for the agent to sign in with %s (up to %s; Ctrl-C to stop)…\n", id, timeout)
		if err := agent.Login(ctx, m.ID); err != nil {
			return opts.loginErr(ctx, m, err, timeout)
		}
	}
	step = stepCheck
	st, err := agent.State(ctx, true)
	if err != nil {
		if ctx.Err() != nil {
			return opts.methodErr(ctx, err, timeout, step)
		}
		return fmt.Errorf("the sign-in with method %s ended, but the agent cannot be checked: %w", m.ID, err)
	}
	if !st.Authenticated {
		return &AuthError{Err: fmt.Errorf("cannot authenticate with method %s: the agent still requires authentication (%s: %s)", m.ID, st.Via, cmp.Or(st.Message, "not authenticated")),
			Hint: opts.methodCommand(m.ID)}
	}
	if opts.JSON {
		return writeJSONLine(opts.IO.Out, map[string]any{"target": wire.RedactTarget(opts.Target), "methodId": m.ID, "type": m.Kind(), "authenticated": true, "checkedWith": st.Via})
	}
	fmt.Fprintf(opts.IO.ErrOut, "%s %s: authenticated by the agent (checked with %s)\n", p.Green("✓"), id, st.Via)
	return nil
}

// methodCommand is the authenticate command for method id, shell-quoted.
func (opts *AuthenticateOptions) methodCommand(id string) string {
	return "agentauth authenticate --method " + client.ShellQuote(id) + " " + client.ShellQuote(wire.RedactTarget(opts.Target))
}

// runLoginCommand runs method m's login command (client.TerminalCommand)
// and says how it ended: nil on status 0.
func (opts *AuthenticateOptions) runLoginCommand(ctx context.Context, m wire.AuthMethod, timeout time.Duration) error {
	cmd, err := client.TerminalCommand(ctx, opts.Target, m)
	if err != nil {
		// A command that cannot be found: running again would not help,
		// the method's own words (in err) say what to do.
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "Running the agent's login command for %s: %s (up to %s)\n", safeText(m.ID), safeText(client.CommandLine(cmd.Args...)), timeout)
	stopped, runErr := opts.runTerminal(ctx, cmd)
	if stopped {
		return opts.methodErr(ctx, ctx.Err(), timeout, stepSignIn)
	}
	if runErr != nil {
		return &AuthError{Err: fmt.Errorf("cannot authenticate with method %s: the login command %s", m.ID, exitText(runErr)), Hint: opts.methodCommand(m.ID)}
	}
	return nil
}

// loginErr explains a refused authenticate: every JSON-RPC error is exit 4
// (the agent did not sign in) with the agent's message and data and the
// next step: the variables the agent names (ErrorEnvVars), else the
// method's own description, and the command to run again.
func (opts *AuthenticateOptions) loginErr(ctx context.Context, m wire.AuthMethod, err error, timeout time.Duration) error {
	if ctx.Err() != nil {
		return opts.methodErr(ctx, err, timeout, stepSignIn)
	}
	var rpc *wire.Error
	if !errors.As(err, &rpc) {
		return fmt.Errorf("cannot authenticate with method %s: %w", m.ID, err)
	}
	if vars := client.ErrorEnvVars(err); len(vars) > 0 {
		// The agent reads the key from its environment, which is
		// agentauth's: exit 4 as for an env_var method's missing variable.
		return &AuthError{Err: fmt.Errorf("cannot authenticate with method %s: %s (%d)\nSet %s in the environment agentauth runs in, and run again", m.ID, rpc.Message, rpc.Code, strings.Join(vars, " or ")),
			Hint: opts.methodCommand(m.ID)}
	}
	msg := fmt.Sprintf("cannot authenticate with method %s: the agent refused: %s", m.ID, client.RPCText(err))
	if m.Description != "" {
		msg += "\nThe method says: " + m.Description
	}
	return &AuthError{Err: errors.New(msg + "\nDo what the agent asks, then run again"), Hint: opts.methodCommand(m.ID)}
}

// methodErr says which step --timeout ended (step), or passes err on
// (Ctrl-C ends the command as any other).
func (opts *AuthenticateOptions) methodErr(ctx context.Context, err error, timeout time.Duration, step string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &AuthError{Err: fmt.Errorf("cannot authenticate with method %s: --timeout %s ran out during the %s; the agent was stopped\nTo wait longer, run again with a longer --timeout", opts.MethodID, timeout, step),
			Hint: "agentauth authenticate --timeout " + (2 * timeout).String() + " --method " + client.ShellQuote(opts.MethodID) + " " + client.ShellQuote(wire.RedactTarget(opts.Target))}
	}
	return err
}

// runTerminal runs a login command: on the user's terminal (stdin a TTY)
// as the terminal's foreground job, its settings restored afterwards
// (runOnTerminal); otherwise with stdin closed, its output shown as an
// agent's is (agentOutput), in a group of its own that ends with it.
// stopped reports that ctx ended the command.
func (opts *AuthenticateOptions) runTerminal(ctx context.Context, cmd *exec.Cmd) (stopped bool, err error) {
	if tty, ok := opts.IO.In.(*os.File); ok && opts.IO.StdinTTY {
		out, ok := opts.IO.ErrOut.(*os.File)
		if !ok {
			out = tty
		}
		return runOnTerminal(ctx, cmd, tty, out)
	}
	out := agentOutput(opts.IO.ErrOut)
	defer out.Flush()
	// stdout carries data only: the login command's output goes to stderr.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, out, out
	err = client.RunInGroup(ctx, cmd)
	return ctx.Err() != nil, err
}
