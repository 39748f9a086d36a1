package commands

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/server"
	"github.com/agentauth/agentauth/state"
)

// ServeOptions are serve's inputs: the server's options (server.Options,
// which serve's flags write into, each documented there) and what only
// the command has.
type ServeOptions struct {
	server.Options
	IO *IOStreams
	// Credentials opens agentauth's own credential store, for ACP
	// agent-type methods (host.Options.StoredToken); nil: not used.
	Credentials func() (*client.Credentials, error)
	// Check is --check: validate and exit (server.Check).
	Check bool
}

// embeddedIssuerFlags configure the embedded issuer.
var embeddedIssuerFlags = []string{"auto-approve", "dev-login", "dev-user", "token-ttl", "refresh-ttl", "code-ttl", "device-interval", "allow-redirect-origin",
	"trust-assertion-issuer", "assertion-subjects", "cimd", "cimd-host", "cimd-document", "state-key-file", "state-key-keyring", "key-rotation", "rotate-key"}

// serveLogLevels are the values of serve --log-level.
var serveLogLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func newServeCommand(f *Factory) *cli.Command {
	return serveCommand(f, runServe)
}

// serveCommand builds the command around run, so tests can check what the
// flags become.
func serveCommand(f *Factory, run func(context.Context, *ServeOptions) error) *cli.Command {
	opts := &ServeOptions{}
	return &cli.Command{
		Name:  "serve",
		Usage: "run the agent host (WebSocket, HTTP, or one session on stdio) and its development authorization server",
		Description: `Serves the agent host protocol: initialize declares the auth requirements
(schemes), authenticate hands over a bearer token, gated methods answer -32007
with RFC 6750 challenges, and the host pushes notify/authRequired (or
auth/required) when a token expires or is revoked.

Three dialects, chosen per connection by initialize's params: the design
dialect (protocolVersion 1 and a clientId); the Agent Host Protocol as
shipped, 1.1.0, 1.0.0 or 0.9.0 (protocolVersions: root channel ahp-root://
with initialSubscriptions, subscribe and unsubscribe, authenticate
{resource, token} answered {}; 1.x: auth/revoked, an empty token signs
out); and ACP (clientCapabilities or clientInfo without a clientId: typed
authMethods, authenticate {methodId}, -32000 AuthRequired, logout,
auth/status).

SIGHUP re-reads --config: added, changed and removed schemes take effect at
once and are pushed (notify/authRequired "required", or a root/agentsChanged
action to root channel subscribers). A config that does not parse is
refused, with the key named in the log, and the running one stays. With
--database, a reload on SIGHUP reaches the other replicas (LISTEN/NOTIFY):
each re-reads its own --config, so replicas sharing the file follow it.

On one listener (default 127.0.0.1:7777):
  /, /ws                                    WebSocket upgrades (/ without one: a landing page)
  /healthz, /readyz                         liveness; readiness (state store, signing keys): 200 or 503
  POST /mcp                                 JSON-RPC with a bearer token per request (MCP-style)
  /.well-known/oauth-protected-resource/mcp RFC 9728 protected resource metadata
  /.well-known/oauth-protected-resource/mcp/ID  the same for scheme ID's own resource
  /.well-known/oauth-authorization-server,  the embedded development authorization server
  /authorize, /token, /device, …            (when a scheme uses it)

With --backend URL or 'stdio:COMMAND ARGS…' (or the config's backends), /mcp is that MCP
server behind serve's token checks and tool policy, never given the client's token.

Without --config, serve declares one required scheme "dev": JWT access tokens
from the embedded issuer (or from --issuer), audience http://HOST:PORT/mcp,
scope agent:use. The embedded issuer signs everyone in as --dev-user without
a password (--dev-login): keep it on loopback. To sign users in at an
OpenID Provider instead, give a --config with "login" (docs/production.md,
"Sign-in at an OpenID Provider"); serve may then listen beyond loopback.

serve's state (the embedded issuer's registered clients, codes, grants,
refresh tokens, revocations and signing keys; the agent sessions) survives
a restart: it lives in an SQLite file in --data-dir (default
$XDG_STATE_HOME/agentauth/serve, else ~/.local/state/agentauth/serve; on
macOS and Windows under the user's config directory). --ephemeral keeps it
in memory instead, to die with the process. --database postgres://… keeps
it in PostgreSQL, shared by several serve replicas, which push each other's
revocations (LISTEN/NOTIFY): give each the load balancer's --resource, as
the embedded issuer is published on the resource's origin. Codes, refresh tokens and client
secrets are stored as SHA-256 hashes; the signing keys (and the upstream
tokens of the config's upstreams) are encrypted with --state-key-file or
--state-key-keyring when given, stored in the clear (file mode 0600)
otherwise. A signing key signs for --key-rotation (or until
a start with --rotate-key), then stays published in the JWKS until its
tokens have expired.

Every request must name this server in its Host header: the listener's
address (for a loopback listener also localhost or any loopback address, on
its port) or a --public-origin; any other Host gets 421 Misdirected Request,
which stops DNS rebinding. A request from a web page (with an Origin header)
to /mcp or a WebSocket upgrade gets 403 unless the page's origin is this
server's own, a --public-origin or an --allowed-origin. Clients without an
Origin header (command-line clients) are not affected.

Logs go to stderr (or --log-file), as text or JSON lines (--log-format), never
tokens; audit events (logins, consents, tokens issued, refresh token reuse,
revocations, upstream sign-in and sign-out, policy denials) are log records
with msg "audit". --metrics-listen serves Prometheus metrics on a listener of
its own. --tls-cert and --tls-key serve HTTPS, re-read on SIGHUP. Behind a
reverse proxy, --trusted-proxy names the peers whose forwarded headers are
believed, and --trusted-proxy-header the one header the client's address is
read from (X-Forwarded-For unless set). SIGINT or SIGTERM close WebSocket
connections with 1001 (going away) and drain HTTP for up to 5 s.

--check validates the same flags and config as a start would, and the
files they name (the TLS certificate and key, the state key, the login
provider's client secret), then exits: 0 with a summary on stdout, or 2
naming the problem. It opens no listener, no state store and no
connection, so it runs beside a serve that holds the port (systemd's
ExecStartPre, a CI check of a config change).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "check", Usage: "check the flags, the config file and the files they name (TLS, state key, login secret), print what would run, and exit 0, or 2 naming the problem; opens no listener, state or connection (systemd ExecStartPre, CI)", Destination: &opts.Check},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7777", Usage: "`HOST:PORT` to listen on (port 0 picks a free one)", Destination: &opts.Listen},
			&cli.StringFlag{Name: "addr-file", Usage: "once listening, write the address (HOST:PORT and a newline) to `FILE`", Destination: &opts.AddrFile},
			&cli.StringFlag{Name: "backend", Usage: "put serve in front of the MCP server at `URL` (Streamable HTTP) or 'stdio:COMMAND ARGS…', served at the resource's path (/mcp) with serve's token checks and the config's tool policy", Destination: &opts.Backend},
			&cli.StringFlag{Name: "config", Usage: "JSON `FILE` declaring the resource, schemes and methodScopes (default: one scheme, dev, bound to the embedded issuer)", Destination: &opts.ConfigPath},
			&cli.StringFlag{Name: "resource", Usage: "resource identifier `URL` tokens must carry as audience (default http://HOST:PORT/mcp)", Destination: &opts.Resource},
			&cli.StringFlag{Name: "issuer", Usage: "trust the external authorization server `URL` (RFC 8414 metadata, JWKS) instead of running the embedded one", Destination: &opts.Issuer},
			&cli.StringFlag{Name: "auth-scope", Value: host.AuthScopeConnection, Usage: "who a token authenticates: `connection` (the one that sent it) or host (every connection, last writer wins)", Destination: &opts.AuthScope},
			&cli.StringSliceFlag{Name: "public-origin", Usage: "also answer requests for `ORIGIN` (https://HOST[:PORT]) as Host and Origin: the address a reverse proxy publishes this server at (repeatable)"},
			&cli.StringSliceFlag{Name: "allowed-origin", Usage: "let web pages of `ORIGIN` (https://HOST[:PORT]) call /mcp and open WebSocket connections (repeatable)"},
			&cli.StringFlag{Name: "connection-token", Usage: "require ?tkn=`TOKEN` on WebSocket upgrades (HTTP 403 otherwise)", Destination: &opts.ConnectionToken},
			&cli.BoolFlag{Name: "stdio", Usage: "serve one session on stdin/stdout (logs stay on stderr); the embedded issuer and the HTTP face still listen on --listen when a scheme uses the embedded issuer", Destination: &opts.Stdio},
			&cli.StringFlag{Name: "log-file", Usage: "append the logs to `FILE` instead of stderr", Destination: &opts.LogFile},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log at `LEVEL` and above: debug (also every accepted request, and an access log: msg \"http\", one record per request with method, path, query parameter names, status, duration and client, never a token, code or secret), info (refusals, connections, a per-minute summary of accepted and refused requests), warn or error (default info; --verbose means debug)"},
			&cli.BoolFlag{Name: "conformance-fixtures", Usage: "also serve the official MCP conformance suite's fixtures on /mcp (its test_* tools, the test://static-text resource and two test_* prompts), which clients would otherwise never see", Destination: &opts.ConformanceFixtures},
			&cli.BoolFlag{Name: "auto-approve", Usage: "embedded issuer: approve every authorization and device code at once, without the consent page (tests, scripts)", Destination: &opts.AutoApprove},
			&cli.BoolFlag{Name: "dev-login", Usage: "embedded issuer: sign users in with the development \"Sign in as\" box, without a password (default when the config has no login; loopback listeners only)"},
			&cli.StringFlag{Name: "dev-user", Value: issuer.DefaultSubject, Usage: "embedded issuer: the `NAME` approvals sign in as (the pages let you type another)", Destination: &opts.DevUser},
			&cli.DurationFlag{Name: "token-ttl", Value: issuer.DefaultTokenTTL, Usage: "embedded issuer: access token lifetime `DURATION`", Destination: &opts.TokenTTL},
			&cli.DurationFlag{Name: "refresh-ttl", Value: issuer.DefaultRefreshTTL, Usage: "embedded issuer: refresh token lifetime `DURATION`, renewed by each rotation", Destination: &opts.RefreshTTL},
			&cli.DurationFlag{Name: "code-ttl", Value: issuer.DefaultCodeTTL, Usage: "embedded issuer: authorization code lifetime `DURATION`", Destination: &opts.CodeTTL},
			&cli.DurationFlag{Name: "device-interval", Value: issuer.DefaultDeviceInterval, Usage: "embedded issuer: the device flow's polling interval `DURATION` (faster polls get slow_down)", Destination: &opts.DeviceInterval},
			&cli.StringSliceFlag{Name: "allow-redirect-origin", Usage: "embedded issuer: also accept client redirect URIs on the https `ORIGIN` (repeatable; loopback http is always accepted)"},
			&cli.StringFlag{Name: "cimd", Value: issuer.CIMDFetch, Usage: "embedded issuer: client ID metadata documents (a client_id that is an https URL): `MODE` fetch (pinned ones, else fetched), pinned (only --cimd-document, nothing fetched: an offline serve) or off (not advertised, not accepted)"},
			&cli.StringSliceFlag{Name: "cimd-host", Usage: "embedded issuer: fetch client ID metadata documents only from `HOST` (claude.ai, host:port; repeatable; default any public host)"},
			&cli.StringSliceFlag{Name: "cimd-document", Usage: "embedded issuer: pin the client ID metadata documents in `FILE` (a JSON document, or an array of them, each standing for its client_id URL; used instead of fetching it; repeatable; examples in deploy/cimd)"},
			&cli.StringSliceFlag{Name: "trust-assertion-issuer", Usage: "embedded issuer: accept JWT bearer assertions (RFC 7523: workload identity, ID-JAG) whose iss is `ISS=KEYFILE`, signed by a key of KEYFILE (a JWKS document or a PEM public key); the token's subject is ISS#sub (see --assertion-subjects) (repeatable)"},
			&cli.StringSliceFlag{Name: "assertion-subjects", Usage: "embedded issuer: the token subject of a trusted issuer's assertions is `ISS=PREFIX` followed by their sub instead of ISS#sub; ISS= takes sub as is, for an issuer whose users are this server's browser users (repeatable)"},
			&cli.StringFlag{Name: "data-dir", Usage: "keep the state (issuer, agent sessions) in an SQLite file in `DIR` (default $XDG_STATE_HOME/agentauth/serve; '' is --ephemeral)"},
			&cli.BoolFlag{Name: "ephemeral", Usage: "keep the state in memory: it dies with the process"},
			&cli.StringFlag{Name: "database", Usage: "keep the state in the PostgreSQL database `URL` (postgres://…), shared by serve replicas", Destination: &opts.Database},
			&cli.DurationFlag{Name: "revocation-reconcile", Value: state.DefaultReconcileEvery, Usage: "with --database: read the revocation log for revocations no notification announced every `DURATION`", Destination: &opts.RevocationReconcile},
			&cli.DurationFlag{Name: "revocation-staleness", Value: defaultRevocationStaleness, Usage: "with --database: answer 503 once this replica has not read the revocation log for `DURATION` (the database is unreachable): a revoked token is refused by every replica at most this long after its revocation", Destination: &opts.RevocationStaleness},
			&cli.StringFlag{Name: "state-key-file", Usage: "encrypt the embedded issuer's signing keys and the upstream tokens at rest with the secret in `FILE` (at least 32 random bytes, mode 0600)", Destination: &opts.StateKeyFile},
			&cli.BoolFlag{Name: "state-key-keyring", Usage: "encrypt the embedded issuer's signing keys and the upstream tokens at rest with a secret kept in the OS keyring (created on first use)", Destination: &opts.StateKeyKeyring},
			&cli.DurationFlag{Name: "key-rotation", Value: issuer.DefaultKeyRotation, Usage: "embedded issuer: a signing key signs for `DURATION`, then the next takes over", Destination: &opts.KeyRotation},
			&cli.BoolFlag{Name: "rotate-key", Usage: "embedded issuer: retire the current signing key now (it stays published until its tokens expire)", Destination: &opts.RotateKey},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "write the logs as `FORMAT`: text (key=value) or json (one JSON object a line)", Destination: &opts.LogFormat},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus metrics at http://`HOST:PORT`/metrics, a listener of their own (:PORT is loopback; off when unset)", Destination: &opts.MetricsListen},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve HTTPS with the PEM certificate chain in `FILE` (with --tls-key; both re-read on SIGHUP)", Destination: &opts.TLSCert},
			&cli.StringFlag{Name: "tls-key", Usage: "the PEM private key `FILE` of --tls-cert", Destination: &opts.TLSKey},
			&cli.StringSliceFlag{Name: "trusted-proxy", Usage: "believe the forwarded headers of requests from `CIDR` (a reverse proxy's address or range; repeatable); from any other peer they are ignored"},
			&cli.StringFlag{Name: "trusted-proxy-header", Value: ops.DefaultAddressHeader, Usage: "read the client's address only from `HEADER`, the one the --trusted-proxy sets (Forwarded for RFC 7239; the right-most address that is not a trusted proxy), ignoring every other", Destination: &opts.TrustedProxyHeader},
		},
		Action: func(c *cli.Context) error {
			if err := checkServeFlags(c, f, opts); err != nil {
				return err
			}
			if opts.Check {
				return runServeCheck(opts)
			}
			return run(c.Context, opts)
		},
	}
}

// runServeCheck is serve --check: server.Check, every failure a usage
// error (exit 2), and a one-line summary on stdout.
func runServeCheck(opts *ServeOptions) error {
	r, err := server.Check(serverOptions(opts))
	if err != nil {
		return &UsageError{Err: fmt.Errorf("serve --check: %w", err)}
	}
	issuer := "an external authorization server"
	if r.Embedded {
		issuer = "the embedded issuer"
	}
	listen := "nothing (stdio)"
	if r.Listen != "" {
		listen = r.Listen
	}
	_, err = fmt.Fprintf(opts.IO.Out, "serve --check: ok: %d scheme(s) with %s; listen on %s; state %s\n", r.Schemes, issuer, listen, r.State)
	return err
}
