package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// Exit codes, documented in --help and the README.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitAuth means authentication is needed: no token, a token that was
	// rejected or could not be refreshed, a 401/403/-32007.
	ExitAuth = 4
	// ExitUnknown means the answer is unknown: status on an ACP agent
	// that reports no auth state (status --check asks it with
	// session/new).
	ExitUnknown = 3
	// ExitInterrupted is the shell's code for a command ended by SIGINT
	// (128+2): the command was interrupted before it finished.
	ExitInterrupted = 130
)

// errInterrupted is what a command that SIGINT or SIGTERM ended returns.
var errInterrupted = errors.New("interrupted")

// UsageError is a bad command line: wrong flags, missing arguments, or a
// request the client core refuses as given (exit 2).
type UsageError = client.UsageError

func usageErrorf(format string, args ...any) error { return client.Usagef(format, args...) }

// AuthError means the user must (re)authenticate (exit 4). Hint is the
// command to run, printed on its own line.
type AuthError = client.AuthError

// SilentError carries an exit code for a failure already reported on stderr.
type SilentError struct{ Code int }

func (e *SilentError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// exitCode maps an error from a command to the process exit code. It is the
// one place that knows the mapping.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var silent *SilentError
	var usage *UsageError
	var auth *AuthError
	var rpc *wire.Error
	switch {
	case errors.Is(err, errInterrupted):
		return ExitInterrupted
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &auth):
		return ExitAuth
	case badListenAddress(err):
		return ExitUsage
	case errors.As(err, &rpc) && rpc.Code == wire.CodeAuthRequired:
		return ExitAuth
	default:
		return ExitError
	}
}

// badListenAddress says whether err is a listen address the user wrote
// that cannot be parsed (serve --listen 7788: no host, or no port), a
// usage error.
func badListenAddress(err error) bool {
	var op *net.OpError
	var addr *net.AddrError
	return errors.As(err, &op) && op.Op == "listen" && errors.As(err, &addr)
}

// printError writes err to w the way every command reports failure:
// lowercase message, then the fix on its own line. cmd names the command
// whose help a usage error points to ("" for the root).
func printError(w io.Writer, err error, cmd string) {
	var silent *SilentError
	if errors.As(err, &silent) {
		return
	}
	msg, hint := errorParts(err, cmd)
	if !strings.HasPrefix(msg, "agentauth:") {
		msg = "agentauth: " + msg
	}
	fmt.Fprintln(w, msg)
	if hint != "" {
		fmt.Fprintln(w, hint)
	}
}

// errorParts splits err into its message (peers' text made safe) and the
// next step to take, the hint: the login command of an *AuthError, the
// help of a usage error, what a refused connection or a taken address
// usually means, or the lines after the first that the error carries.
func errorParts(err error, cmd string) (msg, hint string) {
	msg = safeLines(err.Error())
	var hints []string
	if first, rest, ok := strings.Cut(msg, "\n"); ok && !strings.HasPrefix(rest, "\n") {
		msg, hints = first, append(hints, rest)
	}
	var auth *AuthError
	var usage *UsageError
	switch {
	case errors.As(err, &auth) && auth.Hint != "":
		hints = append(hints, "To log in, run: "+safeText(auth.Hint))
	case errors.As(err, &usage):
		help := "agentauth --help"
		if cmd != "" {
			help = "agentauth " + cmd + " --help"
		}
		hints = append(hints, "Run '"+help+"' for usage.")
	case len(client.NextSteps(err, "")) > 0:
		hints = append(hints, client.NextSteps(err, errTarget(err))...)
	case badListenAddress(err):
		hints = append(hints, "Write the address as HOST:PORT, for example --listen 127.0.0.1:7788 (port 0 picks a free one).")
	case errors.Is(err, syscall.EADDRINUSE):
		hints = append(hints, "Another program uses that address: stop it, choose another one, or let the system pick a free port with --listen 127.0.0.1:0.")
	}
	return msg, strings.Join(hints, "\n")
}

// jsonError is the document a --json command prints on stdout when it
// fails before printing its own: {"error": {"code", "message", "hint"}}.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	// Code is "usage", "auth_required", "interrupted" or "failure", as
	// the exit code says (2, 4, 130, 1).
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// printJSONError writes err of command cmd as a jsonError document to w.
func printJSONError(w io.Writer, err error, cmd string) {
	code := map[int]string{ExitUsage: "usage", ExitAuth: "auth_required", ExitInterrupted: "interrupted"}[exitCode(err)]
	if code == "" {
		code = "failure"
	}
	msg, hint := errorParts(err, cmd)
	b, _ := json.MarshalIndent(jsonError{Error: jsonErrorBody{Code: code, Message: msg, Hint: hint}}, "", "  ")
	fmt.Fprintln(w, string(b))
}

// targetError names the target a command failed on, for hints that show
// a command line (errTarget).
type targetError struct {
	target string
	err    error
}

func (e *targetError) Error() string { return e.err.Error() }
func (e *targetError) Unwrap() error { return e.err }

// withTarget marks err as a failure on target.
func withTarget(target string, err error) error {
	if err == nil {
		return nil
	}
	return &targetError{target: target, err: err}
}

func errTarget(err error) string {
	var te *targetError
	if errors.As(err, &te) {
		return te.target
	}
	return ""
}
