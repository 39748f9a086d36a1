package client

import (
	"fmt"
	"strings"

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

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// IsHTTPTarget reports whether target is an MCP server / protected
// resource rather than an agent host.
func IsHTTPTarget(target string) bool {
	l := strings.ToLower(target)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}
