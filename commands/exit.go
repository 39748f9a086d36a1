package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"

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
)

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
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &auth):
		return ExitAuth
	case errors.As(err, &rpc) && rpc.Code == wire.CodeAuthRequired:
		return ExitAuth
	default:
		return ExitError
	}
}

// printError writes err to w the way every command reports failure:
// lowercase message, then the fix on its own line.
func printError(w io.Writer, err error) {
	var silent *SilentError
	if errors.As(err, &silent) {
		return
	}
	// Errors quote peers (error descriptions, declared resources).
	msg := safeLines(err.Error())
	if !strings.HasPrefix(msg, "agentauth:") {
		msg = "agentauth: " + msg
	}
	fmt.Fprintln(w, msg)
	var auth *AuthError
	if errors.As(err, &auth) && auth.Hint != "" {
		fmt.Fprintf(w, "To log in, run: %s\n", safeText(auth.Hint))
	}
	var usage *UsageError
	if errors.As(err, &usage) {
		fmt.Fprintln(w, "Run 'agentauth --help' for usage.")
	}
}
