package client

import (
	"fmt"
	"strings"

	"al.essio.dev/pkg/shellescape"

	"github.com/agentauth/agentauth/wire"
)

// AuthError means the user must (re)authenticate: no token, a token that
// was rejected or could not be refreshed, a 401/403/-32007. Hint is the
// command to run.
type AuthError struct {
	Err  error
	Hint string
}

func (e *AuthError) Error() string { return e.Err.Error() }
func (e *AuthError) Unwrap() error { return e.Err }

// UsageError is a request that cannot work as given (an unknown scheme, a
// resource the target does not declare): the caller's input is wrong.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// LoginCommand is the command that logs in to target (with --scheme when
// schemeID is set), for hints. A connection token in target is hidden.
func LoginCommand(target, schemeID string) string {
	cmd := "agentauth login "
	if schemeID != "" {
		cmd += "--scheme " + ShellQuote(schemeID) + " "
	}
	return cmd + ShellQuote(wire.RedactTarget(target))
}

// allowResourceLogin is the login that lets target receive a token for a
// resource on another origin, for hints.
func allowResourceLogin(target, schemeID, resource string) string {
	return strings.Replace(LoginCommand(target, schemeID), "agentauth login ", "agentauth login --allow-resource "+ShellQuote(resource)+" ", 1)
}

// ShellQuote is s as one word of a POSIX shell command line, so that a
// printed command works when pasted: as it is when it holds only
// characters no shell treats specially, else in single quotes
// ("stdio:qwen --acp" is 'stdio:qwen --acp'; a ' inside ends the quotes,
// comes in double quotes, and the quotes start again), as POSIX.1-2024
// XCU 2.2.2 "Single-Quotes" allows.
func ShellQuote(s string) string { return shellescape.Quote(s) }

// CommandLine is args as a POSIX shell command line, each one ShellQuote'd:
// the form of every command agentauth prints for a user to run.
func CommandLine(args ...string) string { return shellescape.QuoteCommand(args) }

// IsHTTPTarget reports whether target is an MCP server / protected
// resource rather than an agent host.
func IsHTTPTarget(target string) bool {
	l := strings.ToLower(target)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}
