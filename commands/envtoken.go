package commands

import (
	"os"
	"strings"

	"github.com/agentauth/agentauth/client"
)

// EnvToken is the environment variable that supplies a bearer token for
// non-interactive use (CI), as GH_TOKEN does for gh.
//
// Precedence, as in gh (environment over stored; explicit flags over the
// environment): --token-stdin, or call --login, wins over AGENTAUTH_TOKEN,
// which wins over the credentials stored by login. call, token and
// authenticate use it; login, logout, revoke and proxy use the store only.
//
// The token goes only to the TARGET named on the command line, as the
// bearer token of RFC 6750 §2.1 (HTTP) or in authenticate (agent hosts):
// never to an authorization server, and a redirect to another origin
// drops it (wire.CheckRedirect). It is never stored, refreshed or logged.
const EnvToken = "AGENTAUTH_TOKEN"

// envToken is $AGENTAUTH_TOKEN without surrounding whitespace, "" when
// unset or blank.
func envToken() string { return strings.TrimSpace(os.Getenv(EnvToken)) }

// bearer is the token call sends instead of the stored credentials:
// stdin's with --token-stdin, else $AGENTAUTH_TOKEN (EnvToken, copied
// into opts.EnvToken by the Action), else "".
func (opts *CallOptions) bearer() (string, error) {
	if opts.TokenStdin {
		return readStdinSecret(opts.IO.In, "--token-stdin", "token")
	}
	return opts.EnvToken, nil
}

// hasToken says whether call authenticates with a token it was given
// (--token-stdin or AGENTAUTH_TOKEN) rather than the stored credentials.
func (opts *CallOptions) hasToken() bool { return opts.TokenStdin || opts.EnvToken != "" }

// envTokenStatus is what status reports about $AGENTAUTH_TOKEN: set, and
// masked like a stored token.
type envTokenStatus struct {
	Variable string `json:"variable"`
	Token    string `json:"token"`
}

func newEnvTokenStatus(show bool) *envTokenStatus {
	t := envToken()
	if t == "" {
		return nil
	}
	return &envTokenStatus{Variable: EnvToken, Token: client.MaskToken(t, show)}
}

// line is the sentence status prints about the variable.
func (e *envTokenStatus) line() string {
	return e.Variable + " is set (" + e.Token + "): call, token and authenticate send it to every TARGET instead of the stored credentials"
}
