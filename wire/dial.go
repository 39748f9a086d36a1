package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// DialOptions configure DialTarget.
type DialOptions struct {
	// HTTPClient makes the WebSocket handshake (default http.DefaultClient).
	HTTPClient *http.Client
	// MaxMessageSize bounds one incoming message (default 1 MiB).
	MaxMessageSize int64
	// Stderr receives a stdio child's stderr (default: discarded).
	Stderr io.Writer
	// Env is added to a stdio child's environment (NAME=value; later
	// entries win).
	Env []string
	// NonJSON receives each line a stdio child writes on stdout that is
	// not JSON (an agent printing a sign-in URL or a progress line);
	// without it such lines are dropped.
	NonJSON func(line []byte)
}

// TraceFunc receives every JSON-RPC message sent (out) or received on a
// connection DialTarget made, whole: it must not show params or results,
// which may hold tokens.
type TraceFunc func(out bool, msg []byte)

type traceKey struct{}

// WithTrace returns ctx carrying trace, for DialTarget to hand every
// message to, like net/http/httptrace: a diagnostic hook that crosses the
// layers without changing their signatures.
func WithTrace(ctx context.Context, trace TraceFunc) context.Context {
	return context.WithValue(ctx, traceKey{}, trace)
}

// stdioCloseGrace is how long Close waits for a stdio child to exit after
// its stdin is closed, and then after SIGTERM, before SIGKILL.
const stdioCloseGrace = 2 * time.Second

// DialTarget connects to an agent host: "ws://…" or "wss://…" (one message
// per text frame), or "stdio:COMMAND LINE", which runs the command line
// (split like a shell: single quotes, double quotes, backslash escapes; no
// expansion) as a child process speaking newline-delimited JSON on its
// stdin and stdout. Closing the Conn closes the child's stdin, waits for
// it to exit and kills it if it does not within a few seconds.
func DialTarget(ctx context.Context, target string, opts DialOptions) (Conn, error) {
	c, err := dialTarget(ctx, target, opts)
	trace, _ := ctx.Value(traceKey{}).(TraceFunc)
	if err != nil || trace == nil {
		return c, err
	}
	return &tracedConn{Conn: c, trace: trace}, nil
}

// tracedConn hands every message read or written to trace (WithTrace).
type tracedConn struct {
	Conn
	trace TraceFunc
}

func (t *tracedConn) Read(ctx context.Context) ([]byte, error) {
	m, err := t.Conn.Read(ctx)
	if err == nil {
		t.trace(false, m)
	}
	return m, err
}

func (t *tracedConn) Write(ctx context.Context, msg []byte) error {
	t.trace(true, msg)
	return t.Conn.Write(ctx, msg)
}

func dialTarget(ctx context.Context, target string, opts DialOptions) (Conn, error) {
	switch {
	case strings.HasPrefix(target, "ws://"), strings.HasPrefix(target, "wss://"):
		client := opts.HTTPClient
		if client == nil {
			client = http.DefaultClient
		}
		c, err := DialWebSocket(ctx, target, client, opts.MaxMessageSize)
		if err != nil {
			err = transportCause(err)
			return nil, &redactedError{msg: "cannot connect to " + redactTarget(target) + ": " + redactTarget(err.Error()), err: err}
		}
		return c, nil
	case strings.HasPrefix(target, "stdio:"):
		return dialStdio(strings.TrimPrefix(target, "stdio:"), opts)
	default:
		return nil, fmt.Errorf("unsupported target %q: use ws://HOST:PORT, wss://HOST:PORT or stdio:COMMAND", redactTarget(target))
	}
}

// redactedError shows a message with the connection token hidden and
// unwraps to the original error.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactTarget hides a connection token (?tkn=) in a target shown to people.
func redactTarget(target string) string {
	i := strings.Index(target, "tkn=")
	if i < 0 {
		return target
	}
	i += len("tkn=")
	end := strings.IndexAny(target[i:], "&#\" \t")
	if end < 0 {
		return target[:i] + "***"
	}
	return target[:i] + "***" + redactTarget(target[i+end:])
}

func dialStdio(line string, opts DialOptions) (Conn, error) {
	args, err := SplitCommandLine(line)
	if err != nil {
		return nil, fmt.Errorf("cannot run stdio target: %w", err)
	}
	if len(args) == 0 {
		return nil, errors.New("cannot run stdio target: no command after stdio:")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = opts.Stderr
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	SetProcessGroup(cmd)
	// Once the child has exited, a helper it left holding its stderr
	// must not hold up Wait: endGroup ends the helper next.
	cmd.WaitDelay = 200 * time.Millisecond
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", args[0], err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", args[0], err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", args[0], err)
	}
	child := &childCloser{cmd: cmd, stdin: stdin}
	conn := NewStdioConn(stdout, stdin, child, opts.MaxMessageSize)
	if opts.NonJSON != nil {
		return &nonJSONConn{Conn: conn, nonJSON: opts.NonJSON}, nil
	}
	return conn, nil
}

// nonJSONConn hands the lines that are not JSON to nonJSON and reads on.
type nonJSONConn struct {
	Conn
	nonJSON func([]byte)
}

func (c *nonJSONConn) Read(ctx context.Context) ([]byte, error) {
	for {
		m, err := c.Conn.Read(ctx)
		if err != nil || json.Valid(m) {
			return m, err
		}
		c.nonJSON(m)
	}
}

// childCloser ends a stdio child and its process group: EOF on its
// stdin, SIGTERM to the group when the child lingers or once it has
// exited while others of its group remain, SIGKILL to the group 2 s
// later, then wait.
type childCloser struct {
	cmd   *exec.Cmd
	stdin io.Closer
	once  sync.Once
	err   error
}

func (c *childCloser) Close() error {
	c.once.Do(func() {
		c.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		pgid := c.cmd.Process.Pid
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				c.err = fmt.Errorf("%s exited: %w", c.cmd.Args[0], err)
			}
			endGroup(pgid, nil)
		case <-time.After(stdioCloseGrace):
			endGroup(pgid, done)
		}
	})
	return c.err
}

// EndProcessGroup ends what remains of process group pgid, whose leader
// has been waited for: SIGTERM, then SIGKILL 2 s later (elsewhere than
// unix: the leader's process only).
func EndProcessGroup(pgid int) { endGroup(pgid, nil) }

// SplitCommandLine splits a command line into words the way a POSIX shell
// would, without any expansion: whitespace separates words, '…' quotes
// literally, "…" quotes with \" \\ \$ \` escapes, and a backslash outside
// quotes escapes the next character.
func SplitCommandLine(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote in command line")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`unterminated " quote in command line`)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash in command line")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ClientVersion returns the version agentauth names in ACP's clientInfo
// (set by commands to its build version's function). It is called when an
// initialize request is built, so that a command that sends none never
// works the version out.
var ClientVersion = func() string { return "0.0.0-dev" }

// NewInitializeParams builds initialize's params for dialect d.
func NewInitializeParams(d Dialect, clientID string) InitializeParams {
	p := InitializeParams{ClientID: clientID}
	switch d {
	case DialectPublished:
		p.ClientID = ConnectionClientID(clientID)
		p.Channel = RootChannel
		p.ProtocolVersions = PublishedProtocolVersions
		p.InitialSubscriptions = []string{RootChannel}
	case DialectACP:
		// ACP InitializeRequest (schema 1.7.0): protocolVersion 1;
		// clientCapabilities.auth.terminal, since agentauth runs a
		// terminal method's command on the user's terminal (and no file
		// system or terminal/* methods); clientInfo is an Implementation,
		// whose version is required.
		v := DesignProtocolVersion
		p.ProtocolVersion = &v
		p.ClientID = ""
		p.ClientCapabilities = acpClientCapabilities
		p.ClientInfo, _ = json.Marshal(Implementation{Name: "agentauth", Version: ClientVersion()})
	default:
		// The design dialect's {protocolVersion: 1, clientId}, with ACP's
		// clientCapabilities and clientInfo: an ACP agent (which ignores
		// clientId) then answers as to an ACP client, terminal methods
		// included, and needs no second start.
		v := DesignProtocolVersion
		p.ProtocolVersion = &v
		p.ClientCapabilities = acpClientCapabilities
		p.ClientInfo, _ = json.Marshal(Implementation{Name: "agentauth", Version: ClientVersion()})
	}
	return p
}

// acpClientCapabilities are the ACP client capabilities agentauth has:
// terminal auth methods (it runs their command on the user's terminal),
// no file system and no terminal/* methods. _meta["terminal-auth"] is
// Zed's convention, which agents such as GitHub Copilot CLI, opencode,
// kilo and auggie read before they offer their login command
// (AuthMethod.TerminalAuth); agentauth runs that command as it runs a
// terminal method.
var acpClientCapabilities = json.RawMessage(`{"auth":{"terminal":true},"_meta":{"terminal-auth":true}}`)

// Initialize runs initialize in dialect d (PROTOCOL.md "initialize"): the
// design dialect offers protocolVersion 1, the published dialect offers
// PublishedProtocolVersions and subscribes to the root channel, whose
// snapshot declares the requirements (AHP authentication.md "Discovery").
// A host that answers no root snapshot is sent subscribe.
func Initialize(ctx context.Context, c *Client, d Dialect, clientID string) (*InitializeResult, error) {
	var res InitializeResult
	if err := c.Call(ctx, MethodInitialize, NewInitializeParams(d, clientID), &res); err != nil {
		return nil, err
	}
	if err := SubscribeRoot(ctx, c, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SubscribeRoot subscribes to the root channel when res is a published
// dialect's answer without its snapshot, and adds the snapshot to res.
func SubscribeRoot(ctx context.Context, c *Client, res *InitializeResult) error {
	if res.Dialect() != DialectPublished || slices.ContainsFunc(res.Snapshots, func(s Snapshot) bool { return s.Resource == RootChannel }) {
		return nil
	}
	var sub SubscribeResult
	if err := c.Call(ctx, MethodSubscribe, SubscribeParams{Channel: RootChannel}, &sub); err != nil {
		return fmt.Errorf("cannot subscribe to %s: %w", RootChannel, err)
	}
	if sub.Snapshot != nil {
		res.Snapshots = append(res.Snapshots, *sub.Snapshot)
	}
	return nil
}

// ErrTokenNotAccepted is a host answering authenticate with
// {"authenticated": false} instead of a -32007 challenge.
var ErrTokenNotAccepted = errors.New("the host did not accept the token")

// Authenticate hands a bearer token for requirement r to the host in
// dialect d: {schemeId, scheme, token} (design), {channel, resource,
// token} (published) or {methodId, _meta: {ACPTokenMetaKey: token}}
// (ACP). A rejected token comes back as a -32007 *Error.
func Authenticate(ctx context.Context, c *Client, d Dialect, r Requirement, token string) error {
	p := AuthenticateParams{Token: token}
	switch d {
	case DialectPublished:
		p.Channel, p.Resource = RootChannel, r.Resource
	case DialectACP:
		// ACP's authenticate {methodId}, the token under _meta.
		p = AuthenticateParams{MethodID: r.SchemeID, Meta: map[string]any{ACPTokenMetaKey: token}}
	default:
		p.SchemeID, p.Scheme = r.SchemeID, SchemeBearer
	}
	var res AuthenticateResult
	if err := c.Call(ctx, MethodAuthenticate, p, &res); err != nil {
		return err
	}
	if res.Authenticated != nil && !*res.Authenticated && token != "" {
		return fmt.Errorf("%w for %s", ErrTokenNotAccepted, r.SchemeID)
	}
	return nil
}

// AuthenticateMethod runs ACP's authenticate {methodId}: {} is a success,
// and an agent that still lacks a credential answers -32000
// (CodeACPAuthRequired).
func AuthenticateMethod(ctx context.Context, c *Client, methodID string) (authenticated bool, err error) {
	var res struct {
		Authenticated *bool `json:"authenticated"`
	}
	if err := c.Call(ctx, MethodAuthenticate, map[string]string{"methodId": methodID}, &res); err != nil {
		return false, err
	}
	// ACP answers {} (AuthenticateResponse); an agent host that read the
	// request as a sign-out answers {"authenticated": false}.
	return res.Authenticated == nil || *res.Authenticated, nil
}
