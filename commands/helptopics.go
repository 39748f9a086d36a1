package commands

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// helpTopics are the pages of `agentauth help TOPIC` that belong to no
// command (as gh help environment and gh help exit-codes).
var helpTopics = map[string]string{
	"exit-codes":  exitCodesTopic,
	"environment": environmentTopic,
}

// helpTopicNames lists the topics, sorted.
func helpTopicNames() []string {
	names := make([]string, 0, len(helpTopics))
	for n := range helpTopics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// printHelpTopic prints topic to w; false when there is no such topic.
func printHelpTopic(w io.Writer, topic string) bool {
	text, ok := helpTopics[topic]
	if ok {
		fmt.Fprint(w, strings.TrimLeft(text, "\n"))
	}
	return ok
}

const exitCodesTopic = `
EXIT CODES

Every agentauth command exits with one of these codes:

   0    success
   1    failure: network, a server error, a JSON-RPC error other than -32007,
        a failed check, a --json command's own failure
   2    usage error: bad flags or arguments, a malformed TARGET, a --jq
        expression that does not parse or fails on the output
   4    authentication needed: no token, a token that was rejected or could
        not be refreshed, a 401/403/-32007; also an upstream sign-in that did
        not happen (call --no-wait, --wait-timeout). stderr names the command
        to run ("To log in, run: agentauth login …"). "Nothing stored for
        TARGET" is 4 for token, status, token-revoke and logout.
   130  interrupted (Ctrl-C or SIGTERM; a second one kills at once).
        serve shuts down gracefully on either and exits 0.

With --json, a failure before the command's own document prints
{"error": {"code", "message", "hint"}} on stdout, code one of "usage",
"auth_required", "interrupted", "failure"; with --jq, stdout holds nothing
then and the error goes to stderr only.

Each command's --help lists its own codes. In a script:

   agentauth token http://127.0.0.1:7777/mcp >/dev/null
   case $? in 0) ;; 4) echo "log in first" ;; *) echo "something else failed" ;; esac
`

const environmentTopic = `
ENVIRONMENT

agentauth reads these environment variables:

AGENTAUTH_TOKEN
   A bearer token for non-interactive use (CI), as GH_TOKEN for gh. call,
   token and authenticate use it instead of the stored credentials;
   --token-stdin and call --login win over it. It is sent only to the TARGET
   named on the command line (never to an authorization server; a redirect
   to another origin drops it), and never stored or refreshed. status says
   it is set, masked.

AGENTAUTH_STORE
   The credential store, keyring or file, when --store is not given (else the
   last login's choice, else keyring).

AGENTAUTH_CONFIG_DIR
   The directory of the file store, the keyring's index and the remembered
   store choice (default: the OS config directory + /agentauth, for example
   ~/.config/agentauth).

AGENTAUTH_DEBUG
   api (also 1 or true; or a comma-separated list holding one) turns on --verbose: every HTTP
   request and response line and JSON-RPC method on stderr, secrets masked.

AGENTAUTH_GITHUB_CLIENT_ID
   The OAuth app's client ID for login to GitHub hosts (default: --client-id).

BROWSER
   A command line that opens a URL, run even without a terminal (login, call
   --login, proxy). Without it, a browser is opened only on a terminal.

DISPLAY, WAYLAND_DISPLAY
   Whether a desktop is there to open a browser on (Linux and BSD).

NO_COLOR, CLICOLOR, CLICOLOR_FORCE
   Colour, decided per stream: never when NO_COLOR is set and not empty;
   always when CLICOLOR_FORCE is set and not 0; never when CLICOLOR is 0;
   else only on a terminal.

HOME, XDG_CONFIG_HOME
   Where the config directory is when AGENTAUTH_CONFIG_DIR is not set.

XDG_STATE_HOME
   serve's default --data-dir: $XDG_STATE_HOME/agentauth/serve, else
   ~/.local/state/agentauth/serve (Linux).

DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR
   How the keyring store reaches the Secret Service (Linux).

HTTPS_PROXY, HTTP_PROXY, NO_PROXY
   The proxy for outgoing HTTP requests (Go's net/http); loopback targets
   never go through it.

SSL_CERT_FILE, SSL_CERT_DIR
   The CA certificates that verify https servers (Unix, besides the system's).

Variables named on the command line or in serve's config file are read too:
login --assertion-env NAME (a workload identity JWT, read at each renewal),
serve's clientSecretEnv entries (a client secret of an upstream or a login
provider), and the variables an ACP agent's env_var auth method names
(authenticate --method). A stdio backend of serve gets only a few of serve's
variables (PATH, HOME and the like) and those its config's env names.
`
