package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// ACP's draft (protocol version 2) names of authenticate and logout
// (agent-client-protocol docs/protocol/v2/authentication.mdx).
const (
	methodAuthLogin  = "auth/login"
	methodAuthLogout = "auth/logout"
	methodNewSession = "session/new"
)

// ACPAgent is an initialized connection to an ACP agent (Agent Client
// Protocol, schema 1.7.0), as a client that runs terminal methods.
type ACPAgent struct {
	Target string
	Client *wire.Client
	Init   *wire.InitializeResult
}

// ACPOptions configure OpenACP.
type ACPOptions struct {
	// Env is added to a stdio agent's environment.
	Env []string
	// Output receives, line by line, what a stdio agent writes on stderr
	// and the lines of its stdout that are not JSON (a sign-in URL, a
	// progress line); nil discards them. The caller sanitises them.
	Output io.Writer
	// Step, when set, is told which step OpenACP is in: "start-up"
	// (connecting, starting the program), then "initialize" (waiting for
	// its answer), so that a timeout can name it.
	Step func(step string)
}

// OpenACP connects to an ACP agent and initializes as an ACP client:
// clientInfo {name, version} and clientCapabilities.auth.terminal.
func (cl *Client) OpenACP(ctx context.Context, target string, o ACPOptions) (*ACPAgent, error) {
	dopts := wire.DialOptions{HTTPClient: cl.HTTPClient, Env: o.Env, Stderr: o.Output}
	if o.Output != nil {
		out := o.Output
		dopts.NonJSON = func(line []byte) { out.Write(append(bytes.TrimRight(line, "\r"), '\n')) }
	}
	step := func(string) {}
	if o.Step != nil {
		step = o.Step
	}
	step("start-up")
	conn, err := wire.DialTarget(ctx, target, dopts)
	if err != nil {
		return nil, err
	}
	step("initialize")
	c := wire.NewClient(conn)
	var res wire.InitializeResult
	if err := c.Call(ctx, wire.MethodInitialize, wire.NewInitializeParams(wire.DialectACP, ""), &res); err != nil {
		c.Close()
		return nil, fmt.Errorf("cannot initialize %s: %s", wire.RedactTarget(target), RPCText(err))
	}
	return &ACPAgent{Target: target, Client: c, Init: &res}, nil
}

// Close ends the connection (and a stdio agent's process group).
func (a *ACPAgent) Close() { a.Client.Close() }

// Method is the advertised method id, or a *UsageError listing the
// advertised ones (ACP AuthenticateRequest: methodId "must be one of the
// methods advertised in the initialize response").
func (a *ACPAgent) Method(id string) (wire.AuthMethod, error) {
	ids := make([]string, 0, len(a.Init.AuthMethods))
	for _, m := range a.Init.AuthMethods {
		if m.ID == id {
			return m, nil
		}
		ids = append(ids, m.ID)
	}
	if len(ids) == 0 {
		return wire.AuthMethod{}, Usagef("%s advertises no auth method (asked for %q)", wire.RedactTarget(a.Target), id)
	}
	return wire.AuthMethod{}, Usagef("%s advertises no auth method %q (it offers: %s)", wire.RedactTarget(a.Target), id, strings.Join(ids, ", "))
}

// protocolVersion is the agent's numeric protocol version (1 when it
// cannot be read).
func (a *ACPAgent) protocolVersion() int {
	var v int
	if json.Unmarshal(a.Init.ProtocolVersion, &v) != nil {
		return 1
	}
	return v
}

// Login runs an agent-type method: authenticate {methodId} (ACP v1), or
// auth/login from an agent that answered protocol version 2 (ACP's draft).
// The agent answers {} once it is signed in.
func (a *ACPAgent) Login(ctx context.Context, id string) error {
	method := wire.MethodAuthenticate
	if a.protocolVersion() >= 2 {
		method = methodAuthLogin
	}
	var res json.RawMessage
	return a.Client.Call(ctx, method, map[string]string{"methodId": id}, &res)
}

// Logout ends the agent's authenticated state when it advertises logout
// (ACP schema 1.7.0 agentCapabilities.auth.logout; auth/logout in the v2
// draft, where every agent with auth methods has it); method is the one
// called, "" when it offers none.
func (a *ACPAgent) Logout(ctx context.Context) (method string, err error) {
	switch {
	case a.protocolVersion() >= 2 && len(a.Init.AuthMethods) > 0:
		method = methodAuthLogout
	case a.Init.AgentCapabilities.CanLogout():
		method = wire.MethodLogout
	default:
		return "", nil
	}
	return method, a.Client.Call(ctx, method, struct{}{}, nil)
}

// ACPState is what an ACP agent says of its authentication.
type ACPState struct {
	// Known: the agent answered a state query, or a session/new.
	Known         bool
	Authenticated bool
	// Message is the agent's own words (auth/status message, or
	// session/new's error).
	Message string
	// Via names what was asked: "auth/status", "getAuthState" or "session/new".
	Via string
}

// State asks the agent whether it is authenticated: the auth-state query
// it advertises (AuthStateMethod); else, with probe, session/new in an
// empty directory, which an agent without credentials refuses with
// auth_required (-32000) — the only signal ACP 1.7.0 itself gives.
// Without either, the state is unknown.
func (a *ACPAgent) State(ctx context.Context, probe bool) (ACPState, error) {
	hc := &HostConn{Client: a.Client, Init: a.Init}
	if st, err := hc.AuthState(ctx); err != nil || st != nil {
		if err != nil {
			return ACPState{}, err
		}
		return ACPState{Known: true, Authenticated: st.Authenticated, Message: st.Message, Via: AuthStateMethod(a.Init.AgentCapabilities)}, nil
	}
	if !probe {
		return ACPState{}, nil
	}
	dir, err := os.MkdirTemp("", "agentauth-verify-")
	if err != nil {
		return ACPState{}, err
	}
	defer os.RemoveAll(dir)
	var res json.RawMessage
	err = a.Client.Call(ctx, methodNewSession, map[string]any{"cwd": dir, "mcpServers": []any{}}, &res)
	var rpc *wire.Error
	switch {
	case err == nil:
		return ACPState{Known: true, Authenticated: true, Via: methodNewSession}, nil
	case errors.As(err, &rpc) && rpc.Code == wire.CodeACPAuthRequired:
		return ACPState{Known: true, Message: RPCText(err), Via: methodNewSession}, nil
	}
	return ACPState{}, fmt.Errorf("cannot check the agent's auth state (session/new): %s", RPCText(err))
}

// RPCText is err for people: a JSON-RPC error's message with its data
// (ACP agents put the reason there: "CODEX_API_KEY is not set"), at most
// 500 bytes of it; other errors as they are.
func RPCText(err error) string {
	var rpc *wire.Error
	if !errors.As(err, &rpc) {
		return err.Error()
	}
	s := rpc.Message
	if len(rpc.Data) > 0 && string(rpc.Data) != "null" {
		d := dataText(rpc.Data)
		if len(d) > 500 {
			d = strings.ToValidUTF8(d[:500], "") + "…"
		}
		if d != "" && d != s {
			s += ": " + d
		}
	}
	return fmt.Sprintf("%s (%d)", s, rpc.Code)
}

// ErrorEnvVars are the environment variables an agent's error names in
// its data as {"envVars": [NAME, …]}, or nil: codex-acp 2.x answers its
// api-key method so (-32603, "CODEX_API_KEY or OPENAI_API_KEY is not set")
// when none is set. Only names that look like variables (letters, digits,
// underscores; at most 8 of them) count.
func ErrorEnvVars(err error) []string {
	var rpc *wire.Error
	if !errors.As(err, &rpc) || len(rpc.Data) == 0 {
		return nil
	}
	var d struct {
		EnvVars []string `json:"envVars"`
	}
	if json.Unmarshal(rpc.Data, &d) != nil || len(d.EnvVars) == 0 || len(d.EnvVars) > 8 {
		return nil
	}
	for _, name := range d.EnvVars {
		if name == "" || len(name) > 64 || strings.IndexFunc(name, func(r rune) bool {
			return !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) >= 0 {
			return nil
		}
	}
	return d.EnvVars
}

// dataText is an error's data as text: a string as it is, and so the
// string of an object whose one member says why (qwen-code: {"details":
// "Missing API key …"}); anything else as its JSON.
func dataText(data json.RawMessage) string {
	var str string
	if json.Unmarshal(data, &str) == nil {
		return str
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) == nil && len(obj) == 1 {
		for _, k := range []string{"details", "detail", "message", "reason", "error"} {
			if v, ok := obj[k]; ok && json.Unmarshal(v, &str) == nil {
				return str
			}
		}
	}
	return string(data)
}

// MissingVars are the variables of env_var method m that are not set (or
// empty) in agentauth's environment, optional ones aside.
func MissingVars(m wire.AuthMethod) []string {
	var missing []string
	optional := map[string]bool{}
	for _, v := range m.Vars {
		optional[v.Name] = v.Optional
	}
	for _, name := range m.VarNames() {
		if os.Getenv(name) == "" && !optional[name] {
			missing = append(missing, name)
		}
	}
	return missing
}

// TerminalCommand is the process a method that runs a command signs in
// with (wire.AuthMethod.RunsCommand). A terminal method (ACP schema 1.7.0,
// AuthMethodTerminal; docs/protocol/v1/authentication.mdx "Terminal
// authentication"): the agent's own command line with the method's args
// appended and its env applied over agentauth's; only a stdio: target
// names a program to run. An agent method with _meta["terminal-auth"]
// (Zed's convention, wire.TerminalAuth): that command, looked up in PATH
// when it has no slash, with its args and env. A command that cannot be
// found is an *AuthError naming it and the method's own words.
func TerminalCommand(ctx context.Context, target string, m wire.AuthMethod) (*exec.Cmd, error) {
	var args []string
	env := m.Env
	if ta := m.TerminalAuth(); m.Kind() != wire.AuthMethodTerminal && ta != nil {
		args, env = append([]string{ta.Command}, ta.Args...), ta.Env
		if _, err := exec.LookPath(ta.Command); err != nil {
			e := fmt.Errorf("cannot authenticate with method %s: the agent's login command %s cannot be run: %v", m.ID, ShellQuote(ta.Command), err)
			if m.Description != "" {
				e = fmt.Errorf("%w\nThe agent says: %s", e, m.Description)
			}
			return nil, &AuthError{Err: e}
		}
	} else {
		if !strings.HasPrefix(target, "stdio:") {
			return nil, Usagef("method %s runs the agent's program in a terminal: that needs a stdio: target, not %s", m.ID, wire.RedactTarget(target))
		}
		var err error
		args, err = wire.SplitCommandLine(strings.TrimPrefix(target, "stdio:"))
		if err != nil || len(args) == 0 {
			return nil, Usagef("cannot run the agent's program: %v", err)
		}
		args = append(args, m.Args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	return cmd, nil
}

// RunInGroup starts cmd (not yet started) in its own process group, and
// when ctx ends or cmd exits ends whatever remains of the group (SIGTERM,
// SIGKILL 2 s later): for a terminal method run without a terminal, whose
// helpers must not outlive agentauth. A command on the user's terminal
// stays in agentauth's group instead, in the foreground, where Ctrl-C
// reaches it as it reaches any job.
func RunInGroup(ctx context.Context, cmd *exec.Cmd) error {
	wire.SetProcessGroup(cmd)
	cmd.Cancel = func() error { return wire.TerminateProcessGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	err := cmd.Wait()
	wire.EndProcessGroup(cmd.Process.Pid)
	return err
}
