package commands

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// ServeOptions are serve's inputs.
type ServeOptions struct {
	IO         *IOStreams
	Logger     *slog.Logger
	LogLevel   slog.Level
	HTTPClient *http.Client
	Now        func() time.Time
	// Credentials opens agentauth's own credential store, for ACP
	// agent-type methods (host.Options.StoredToken); nil: not used.
	Credentials func() (*client.Credentials, error)

	Listen          string
	AddrFile        string
	ConfigPath      string
	AuthScope       string
	ConnectionToken string
	Stdio           bool
	// LogFile, when set, receives the logs instead of stderr.
	LogFile string
	// Resource is --resource: the resource identifier when the config
	// sets none (default http://HOST:PORT/mcp).
	Resource string
	// Issuer is --issuer: the external authorization server of the
	// built-in configuration; the embedded issuer then does not run.
	Issuer string
	// PublicOrigins are --public-origin: origins the listener is also
	// reached at (through a reverse proxy), accepted as Host and Origin.
	PublicOrigins []string
	// AllowedOrigins are --allowed-origin: other sites whose pages may
	// call /mcp and open WebSocket connections.
	AllowedOrigins []string

	// ConformanceFixtures is --conformance-fixtures: the MCP conformance
	// suite's fixtures on serve's own /mcp.
	ConformanceFixtures bool

	// The embedded issuer's settings.
	AutoApprove bool
	// DevLogin is --dev-login when given: the development "Sign in as"
	// box (default: on when the config has no login).
	DevLogin       *bool
	DevUser        string
	TokenTTL       time.Duration
	RefreshTTL     time.Duration
	CodeTTL        time.Duration
	DeviceInterval time.Duration
	// AllowRedirectOrigins is --allow-redirect-origin: https origins the
	// embedded issuer accepts redirect URIs on besides loopback.
	AllowRedirectOrigins []string
	// AssertionIssuers are --trust-assertion-issuer ISS=KEYFILE: the
	// issuers whose JWT bearer assertions (RFC 7523) the embedded issuer
	// accepts, with their keys.
	AssertionIssuers []issuer.AssertionIssuer
	// CIMD is --cimd, --cimd-host and --cimd-document: which client ID
	// metadata documents the embedded issuer uses.
	CIMD issuer.CIMDOptions
	// IssuerFlags lists the embedded issuer's flags given on the command
	// line: an error when the embedded issuer does not run.
	IssuerFlags []string

	// Where serve keeps its state (the embedded issuer's, the agent
	// sessions; see openState). DataDir is --data-dir: the directory of
	// its SQLite file; empty (--ephemeral, or --data-dir '') keeps the
	// state in memory. Database is --database: a PostgreSQL URL, for
	// replicas sharing one state.
	DataDir  string
	Database string
	// RevocationReconcile is --revocation-reconcile and
	// RevocationStaleness --revocation-staleness (see refuseWhenStale).
	RevocationReconcile time.Duration
	RevocationStaleness time.Duration
	// StateKeyFile is --state-key-file: a secret that encrypts the
	// signing keys at rest. StateKeyKeyring is --state-key-keyring: the
	// same secret kept in the OS keyring instead, created on first use.
	StateKeyFile    string
	StateKeyKeyring bool
	// KeyRotation is --key-rotation: how long one signing key signs.
	// RotateKey is --rotate-key: retire the current key at start.
	KeyRotation time.Duration
	RotateKey   bool
	Backend     string // --backend: an MCP server to put serve in front of

	// The operations surface. LogFormat is --log-format: text or json.
	// MetricsListen is --metrics-listen: where /metrics is served (empty:
	// nowhere). TLSCert and TLSKey are --tls-cert and --tls-key: serve
	// HTTPS, reloaded on SIGHUP. TrustedProxies are --trusted-proxy: the
	// peers whose forwarded headers are believed.
	LogFormat      string
	MetricsListen  string
	TLSCert        string
	TLSKey         string
	TrustedProxies []netip.Prefix
}

// The built-in configuration's scheme (PROTOCOL.md "Auth requirements").
const (
	defaultSchemeID    = "dev"
	defaultSchemeLabel = "agentauth dev issuer"
	defaultScope       = "agent:use"
)

// embeddedIssuerFlags configure the embedded issuer.
var embeddedIssuerFlags = []string{"auto-approve", "dev-login", "dev-user", "token-ttl", "refresh-ttl", "code-ttl", "device-interval", "allow-redirect-origin",
	"trust-assertion-issuer", "assertion-subjects", "cimd", "cimd-host", "cimd-document", "state-key-file", "state-key-keyring", "key-rotation", "rotate-key"}

// minStateKeyBytes is the least a --state-key-file holds.
const minStateKeyBytes = 32

// The state key in the OS keyring (--state-key-keyring): one entry per
// state location, each call bounded by stateKeyringTimeout (a locked or
// absent keyring must not hang serve).
const (
	stateKeyringService = "agentauth-serve"
	stateKeyringTimeout = 3 * time.Second
)

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
OpenID Provider instead, give a --config with "login" (README "Sign-in at
an OpenID Provider"); serve may then listen beyond loopback.

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
reverse proxy, --trusted-proxy names the peers whose Forwarded and
X-Forwarded-* headers are believed. SIGINT or SIGTERM close WebSocket
connections with 1001 (going away) and drain HTTP for up to 5 s.`,
		Flags: []cli.Flag{
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
			&cli.StringSliceFlag{Name: "trusted-proxy", Usage: "believe the Forwarded and X-Forwarded-For/Host/Proto headers of requests from `CIDR` (a reverse proxy's address or range; repeatable); from any other peer they are ignored"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usageErrorf("serve takes no arguments")
			}
			if opts.AuthScope != host.AuthScopeConnection && opts.AuthScope != host.AuthScopeHost {
				return usageErrorf("--auth-scope must be connection or host, not %q", opts.AuthScope)
			}
			for _, name := range []string{"listen", "backend", "config", "resource", "issuer", "connection-token", "dev-user", "log-file", "addr-file", "database", "state-key-file"} {
				if c.IsSet(name) && c.String(name) == "" {
					return usageErrorf("--%s must not be empty", name)
				}
			}
			if err := opsFlags(c, opts); err != nil {
				return err
			}
			for _, name := range []string{"public-origin", "allowed-origin"} {
				for _, o := range c.StringSlice(name) {
					if _, err := host.NormalizeOrigin(o); err != nil {
						return usageErrorf("--%s: %v", name, err)
					}
				}
			}
			opts.PublicOrigins, opts.AllowedOrigins = c.StringSlice("public-origin"), c.StringSlice("allowed-origin")
			if opts.Stdio && opts.ConnectionToken != "" {
				return usageErrorf("--connection-token gates WebSocket upgrades, and --stdio serves none")
			}
			if opts.ConformanceFixtures && opts.Backend != "" {
				return usageErrorf("--conformance-fixtures adds to serve's own /mcp, and --backend puts another MCP server there")
			}
			for _, name := range []string{"token-ttl", "refresh-ttl", "code-ttl", "device-interval"} {
				if c.Duration(name) < time.Second {
					return usageErrorf("--%s must be at least 1s, not %s", name, c.Duration(name))
				}
			}
			if opts.Resource != "" {
				if err := checkResourceFlag(opts.Resource); err != nil {
					return usageErrorf("--resource: %v", err)
				}
			}
			opts.AllowRedirectOrigins = c.StringSlice("allow-redirect-origin")
			for _, v := range c.StringSlice("trust-assertion-issuer") {
				a, err := readAssertionIssuer(v)
				if err != nil {
					return usageErrorf("--trust-assertion-issuer: %v", err)
				}
				opts.AssertionIssuers = append(opts.AssertionIssuers, a)
			}
			if err := assertionSubjects(c.StringSlice("assertion-subjects"), opts.AssertionIssuers); err != nil {
				return usageErrorf("--assertion-subjects: %v", err)
			}
			if err := cimdFlags(c, opts); err != nil {
				return err
			}
			if err := stateFlags(c, opts); err != nil {
				return err
			}
			if c.IsSet("dev-login") {
				v := c.Bool("dev-login")
				opts.DevLogin = &v
			}
			for _, name := range embeddedIssuerFlags {
				if c.IsSet(name) {
					opts.IssuerFlags = append(opts.IssuerFlags, "--"+name)
				}
			}
			if opts.Issuer != "" {
				if opts.ConfigPath != "" {
					return usageErrorf("--issuer replaces the embedded issuer of the built-in configuration; in a --config file, list the authorization server under authorizationServers")
				}
				if len(opts.IssuerFlags) > 0 {
					return usageErrorf("%s configure the embedded issuer, which --issuer replaces", strings.Join(opts.IssuerFlags, ", "))
				}
				if err := checkIssuerFlag(opts.Issuer); err != nil {
					return usageErrorf("--issuer: %v", err)
				}
			}
			opts.IO = f.IO
			opts.HTTPClient, opts.Credentials = f.HTTPClient, f.Client().Credentials
			opts.Now = f.Now
			level, ok := serveLogLevels[c.String("log-level")]
			if !ok {
				return usageErrorf("--log-level must be debug, info, warn or error, not %q", c.String("log-level"))
			}
			opts.LogLevel = level
			if f.Verbose && !c.IsSet("log-level") {
				opts.LogLevel = slog.LevelDebug
			}
			return run(c.Context, opts)
		},
	}
}

// serveLogLevels are the values of serve --log-level.
var serveLogLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// readAssertionIssuer reads a --trust-assertion-issuer ISS=KEYFILE.
func readAssertionIssuer(v string) (issuer.AssertionIssuer, error) {
	iss, path, ok := strings.Cut(v, "=")
	if !ok || iss == "" || path == "" {
		return issuer.AssertionIssuer{}, fmt.Errorf("want ISS=KEYFILE (the assertions' iss, then a JWKS or PEM public key file), not %q", v)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return issuer.AssertionIssuer{}, fmt.Errorf("cannot read the keys of %s: %w", iss, err)
	}
	keys, err := issuer.ParseAssertionKeys(data)
	if err != nil {
		return issuer.AssertionIssuer{}, fmt.Errorf("cannot use %s as the keys of %s: %w", path, iss, err)
	}
	return issuer.AssertionIssuer{Issuer: iss, Keys: keys}, nil
}

// assertionSubjects applies --assertion-subjects ISS=PREFIX to the trusted
// assertion issuers.
func assertionSubjects(values []string, issuers []issuer.AssertionIssuer) error {
	for _, v := range values {
		iss, prefix, ok := strings.Cut(v, "=")
		k := slices.IndexFunc(issuers, func(a issuer.AssertionIssuer) bool { return a.Issuer == iss })
		switch {
		case !ok || iss == "":
			return fmt.Errorf("want ISS=PREFIX (a trusted issuer, then what its subjects start with; empty for as is), not %q", v)
		case k < 0:
			return fmt.Errorf("%s is not a trusted assertion issuer: trust it with --trust-assertion-issuer %s=KEYFILE", iss, iss)
		}
		issuers[k].SubjectPrefix, issuers[k].SubjectAsIs = prefix, prefix == ""
	}
	return nil
}

// checkResourceFlag accepts an absolute http(s) URL without a fragment
// (RFC 8707 §2).
func checkResourceFlag(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http or https URL", raw)
	}
	if strings.Contains(raw, "#") {
		return fmt.Errorf("%q must not have a fragment (RFC 8707 §2)", raw)
	}
	return nil
}

// checkIssuerFlag accepts an issuer identifier (RFC 8414 §2): https, or
// http on a loopback host, without query or fragment.
func checkIssuerFlag(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%q must be an https URL without query or fragment (RFC 8414 §2)", raw)
	}
	if u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%q must use https (http is allowed on loopback only)", raw)
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// runServe runs the host until ctx ends (SIGINT/SIGTERM: graceful, nil) or,
// with --stdio, until stdin closes.
func runServe(ctx context.Context, opts *ServeOptions) error {
	logger := opts.Logger
	callLog := logger // the gateway's record of each call (ops.LogWriter.Held)
	var out io.Writer // serve's own log output, unless opts.Logger is given
	if opts.LogFile != "" {
		f, err := os.OpenFile(opts.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("cannot open the log file: %w", err)
		}
		defer f.Close()
		out = f
	} else if logger == nil {
		out = opts.IO.ErrOut
	}
	if out != nil {
		lw := ops.NewLogWriter(out)
		defer lw.Close() // before f.Close: the records held are written
		logger = newServeLogger(lw, opts.LogFormat, opts.LogLevel)
		callLog = newServeLogger(lw.Held(), opts.LogFormat, opts.LogLevel)
	}
	tel := ops.New(logger)

	cfg, err := serveConfig(opts)
	if err != nil {
		return err
	}
	// Read before Resolve replaces "embedded" with the listener's origin.
	embedded := usesEmbeddedIssuer(cfg)
	clients, err := introspectionClients(cfg)
	if err != nil {
		return err
	}
	scopes := embeddedScopes(cfg)
	issuerOnly := opts.IssuerFlags
	if len(cfg.Upstreams) > 0 {
		// The state key also seals the upstream tokens.
		issuerOnly = slices.DeleteFunc(slices.Clone(issuerOnly), func(f string) bool { return f == "--state-key-file" || f == "--state-key-keyring" })
	}
	if !embedded && len(issuerOnly) > 0 {
		return usageErrorf("%s configure the embedded issuer, and no scheme uses it (name \"embedded\" in a scheme's authorizationServers with jwt or introspection validation)", strings.Join(issuerOnly, ", "))
	}
	// The broker's /auth/start and /callback need the listener.
	listening := !opts.Stdio || embedded || len(cfg.Upstreams) > 0
	if !listening && opts.AddrFile != "" {
		return usageErrorf("--addr-file applies to the listener, and with --stdio nothing listens unless a scheme uses the embedded issuer or the config has upstreams")
	}

	// Nothing listens with --stdio alone: an empty resource and "embedded"
	// resolve against the --listen address.
	origin := "http://" + opts.Listen
	var ln net.Listener
	if listening {
		if ln, err = net.Listen("tcp", opts.Listen); err != nil {
			return fmt.Errorf("cannot listen on %s: %w", opts.Listen, err)
		}
		defer ln.Close()
		origin = "http://" + ln.Addr().String()
		if opts.TLSCert != "" {
			cert, err := ops.LoadCertificate(opts.TLSCert, opts.TLSKey)
			if err != nil {
				return err
			}
			reloadCertOnHangup(ctx, cert, logger)
			ln = tls.NewListener(ln, cert.Config())
			origin = "https://" + ln.Addr().String()
		}
	}
	var login *issuer.LoginOptions
	if embedded {
		ip, _, _ := net.SplitHostPort(ln.Addr().String())
		if login, err = embeddedLogin(opts, cfg, isLoopbackHost(ip), opts.HTTPClient); err != nil {
			return err
		}
	} else if cfg.Login != nil {
		return usageErrorf("the config's login signs users in to the embedded issuer, and no scheme uses it (name \"embedded\" in a scheme's authorizationServers)")
	}
	// The embedded issuer is published on the resource's origin: the
	// listener's by default, or the one a reverse proxy or load balancer
	// serves the resource at (--resource), so that replicas behind it share
	// one issuer identifier.
	issuerOrigin := origin
	if u, err := url.Parse(cfg.Resource); err == nil && cfg.Resource != "" {
		issuerOrigin = u.Scheme + "://" + u.Host
	}
	cfg.Resolve(issuerOrigin)
	st, stateDesc, err := openState(ctx, opts, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	var iss *issuer.Issuer
	var key []byte
	if embedded || len(cfg.Upstreams) > 0 {
		if opts.StateKeyKeyring {
			key, err = keyringStateKey(stateDesc, stateKeyringTimeout)
		} else {
			key, err = readStateKey(opts.StateKeyFile)
		}
		if err != nil {
			return err
		}
	}
	if embedded {
		iss, err = issuer.New(issuer.Options{
			Issuer: issuerOrigin, DefaultResource: cfg.Resource,
			TokenTTL: opts.TokenTTL, RefreshTTL: opts.RefreshTTL, CodeTTL: opts.CodeTTL, DeviceInterval: opts.DeviceInterval,
			AutoApprove: opts.AutoApprove, Subject: opts.DevUser, ScopesSupported: scopes, Clients: clients,
			ScopeDescriptions:      cfg.ScopeDescriptions,
			AllowedRedirectOrigins: opts.AllowRedirectOrigins, AssertionIssuers: opts.AssertionIssuers, CIMD: opts.CIMD, Logger: logger, Now: opts.Now,
			Store: st, StateKey: key, KeyRotation: opts.KeyRotation, RotateKey: opts.RotateKey, Login: login, Telemetry: tel,
		})
		if err != nil {
			return fmt.Errorf("cannot start the embedded issuer: %w", err)
		}
	}
	brk, err := newBroker(ctx, cfg, st, key, issuerOrigin, opts.HTTPClient, logger, opts.Now, tel, iss, opts.AutoApprove)
	if err != nil {
		return err
	}
	h, err := host.New(host.Options{Config: cfg, AuthScope: opts.AuthScope, Logger: logger, HTTPClient: opts.HTTPClient,
		Now: opts.Now, MaxMessageSize: wire.DefaultMaxMessageSize, Version: serverVersion(), Store: st, StoredToken: opts.storedToken(), Broker: brk, Telemetry: tel,
		ConformanceFixtures: opts.ConformanceFixtures})
	if err != nil {
		return err
	}
	defer h.Close()
	gw, err := newGateway(cfg, brk, iss, logger, callLog, tel)
	if err != nil {
		return err
	}
	defer gw.Close()
	if iss != nil {
		// A revocation at the issuer reaches the connections at once; its
		// tokens expire within one --token-ttl.
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		iss.OnRevoke(func(jtis []string) { h.NotifyRevoked(now().Add(opts.TokenTTL), jtis...) })
		iss.OnSessionEnd(func(subject, clientID string) { h.EndSession(ctx, subject, clientID) })
		// Tokens revoked before a restart stay refused.
		revoked, err := iss.Revoked(ctx)
		if err != nil {
			return err
		}
		for jti, until := range revoked {
			h.NotifyRevoked(until, jti)
		}
	}

	if opts.ConfigPath != "" {
		stopReload := reloadOnHangup(ctx, opts, h, st, embedded, issuerOrigin, cfg.Upstreams, cfg, logger)
		defer stopReload()
	}

	var srv *http.Server
	served := make(chan error, 1)
	if listening {
		mux, err := newServeMux(h, iss, brk, st, gw, opts.ConnectionToken, !opts.Stdio)
		if err != nil {
			return err
		}
		gopts := guardOptions(opts, ln.Addr().String(), h.Resource(), logger)
		if err := mountGateway(mux, gw, h, &gopts); err != nil {
			return err
		}
		gopts.Telemetry = tel
		guarded, err := host.NewGuard(mux, gopts)
		if err != nil {
			return err
		}
		srv = newHTTPServer(tel.Instrument(ops.Forwarded(opts.TrustedProxies, refuseWhenStale(ctx, guarded, st, opts.RevocationStaleness, logger))), logger)
		go func() { served <- srv.Serve(ln) }()
		attrs := []any{"addr", ln.Addr().String(), "resource", h.Resource(), "resource_metadata", h.ResourceMetadataURL(), "auth_scope", opts.AuthScope}
		if iss != nil {
			attrs = append(attrs, "issuer", issuerOrigin, "auto_approve", opts.AutoApprove)
			if login != nil {
				attrs = append(attrs, "login", login.Issuer)
			} else {
				attrs = append(attrs, "dev_user", opts.DevUser, "login", "dev")
			}
		}
		attrs = append(attrs, "state", stateDesc)
		if opts.MetricsListen != "" {
			if pg, ok := st.(*state.Postgres); ok {
				tel.RevocationLagFrom(func() time.Duration { return time.Since(pg.RevocationFeed().Synced) })
			}
			maddr, err := startMetrics(ctx, opts.MetricsListen, tel, logger)
			if err != nil {
				srv.Close()
				return err
			}
			attrs = append(attrs, "metrics", "http://"+maddr+"/metrics")
		}
		logger.Info("agent host listening", attrs...)
		if opts.AddrFile != "" {
			if err := writeFileAtomic(opts.AddrFile, []byte(ln.Addr().String()+"\n")); err != nil {
				srv.Close()
				return err
			}
		}
	}
	if opts.Stdio {
		conn := wire.NewStdioConn(opts.IO.In, opts.IO.Out, nil, wire.DefaultMaxMessageSize)
		h.ServeConn(ctx, conn)
	} else {
		select {
		case err := <-served:
			return fmt.Errorf("cannot serve: %w", err)
		case <-ctx.Done():
		}
		logger.Info("shutting down")
	}
	h.Close()
	if srv == nil {
		return nil
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot shut down: %w", err)
	}
	return nil
}

// storedToken is host.Options.StoredToken over agentauth's own credential
// store: the usable (refreshed when needed) access token of the credential
// a client of the resource would get (client.CredentialFor, with the
// binding rule: the resource's own origin), or an error naming the login.
func (opts *ServeOptions) storedToken() func(ctx context.Context, schemeID, resource string, servers []string) (string, error) {
	if opts.Credentials == nil {
		return nil
	}
	return func(ctx context.Context, schemeID, resource string, servers []string) (string, error) {
		cs, err := opts.Credentials()
		if err != nil {
			return "", err
		}
		creds, err := cs.ForTarget(ctx, resource, "")
		if err != nil {
			return "", err
		}
		r := wire.Requirement{SchemeID: schemeID, Resource: resource, AuthorizationServers: servers}
		c := client.CredentialFor(creds, resource, r)
		if c == nil {
			return "", fmt.Errorf("agentauth stores no credential for %s; run: agentauth login %s", resource, resource)
		}
		cur, err := cs.Usable(ctx, c.Key, resource)
		if err != nil {
			return "", err
		}
		return cur.AccessToken, nil
	}
}
