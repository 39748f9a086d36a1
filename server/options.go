package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// Options are what New builds a server from. The caller (commands, from
// serve's flags) has checked each value on its own; New checks how they
// combine with each other and with the config, and says so with an
// *OptionsError.
type Options struct {
	// Logger, when set, receives the logs (tests); otherwise they go to
	// LogFile, else to LogOutput, as LogFormat at LogLevel.
	Logger    *slog.Logger
	LogOutput io.Writer
	LogFile   string
	LogFormat string // text or json
	LogLevel  slog.Level

	// Stdin and Stdout carry the one session of Stdio.
	Stdin  io.Reader
	Stdout io.Writer

	HTTPClient *http.Client
	Now        func() time.Time
	// Version is the version the server announces (MCP serverInfo, the
	// landing page).
	Version string
	// StoredToken is host.Options.StoredToken (ACP agent-type methods);
	// nil: not used.
	StoredToken func(ctx context.Context, schemeID, resource string, servers []string) (string, error)

	// Listen is the listener's HOST:PORT; AddrFile, when set, receives the
	// bound address once it listens.
	Listen          string
	AddrFile        string
	ConfigPath      string
	AuthScope       string
	ConnectionToken string
	// Stdio serves one session on Stdin/Stdout; the listener then runs
	// only when the embedded issuer or the broker needs it.
	Stdio bool
	// Resource is the resource identifier when the config sets none
	// (default http://HOST:PORT/mcp).
	Resource string
	// Issuer is the external authorization server of the built-in
	// configuration; the embedded issuer then does not run.
	Issuer string
	// PublicOrigins are origins the listener is also reached at (through
	// a reverse proxy), accepted as Host and Origin.
	PublicOrigins []string
	// AllowedOrigins are other sites whose pages may call /mcp and open
	// WebSocket connections.
	AllowedOrigins []string
	// Backend is an MCP server to put the server in front of (URL or
	// stdio:COMMAND ARGS…), besides the config's backends.
	Backend string
	// ConformanceFixtures adds the MCP conformance suite's fixtures to
	// the server's own /mcp.
	ConformanceFixtures bool

	// The embedded issuer's settings.
	AutoApprove bool
	// DevLogin, when set, turns the development "Sign in as" box on or
	// off (default: on when the config has no login).
	DevLogin       *bool
	DevUser        string
	TokenTTL       time.Duration
	RefreshTTL     time.Duration
	CodeTTL        time.Duration
	DeviceInterval time.Duration
	// AllowRedirectOrigins are https origins the embedded issuer accepts
	// redirect URIs on besides loopback.
	AllowRedirectOrigins []string
	// AssertionIssuers are the issuers whose JWT bearer assertions (RFC
	// 7523) the embedded issuer accepts, with their keys.
	AssertionIssuers []issuer.AssertionIssuer
	// CIMD is which client ID metadata documents the embedded issuer
	// uses: fetched, pinned, or none.
	CIMD issuer.CIMDOptions
	// IssuerFlags names the embedded issuer's settings the user gave
	// ("--token-ttl", …): an error when the embedded issuer does not run.
	IssuerFlags []string

	// Where the state lives (see openState): a PostgreSQL URL (Database),
	// else an SQLite file in DataDir, else memory.
	DataDir  string
	Database string
	// RevocationReconcile is how often a PostgreSQL replica reads the
	// revocation log; RevocationStaleness how long it may go without
	// before it refuses requests (see refuseWhenStale).
	RevocationReconcile time.Duration
	RevocationStaleness time.Duration
	// StateKeyFile holds a secret that encrypts the signing keys and
	// upstream tokens at rest; StateKeyKeyring keeps that secret in the
	// OS keyring instead, created on first use.
	StateKeyFile    string
	StateKeyKeyring bool
	// KeyRotation is how long one signing key signs; RotateKey retires
	// the current key at start.
	KeyRotation time.Duration
	RotateKey   bool

	// MetricsListen is where /metrics is served (empty: nowhere). TLSCert
	// and TLSKey serve HTTPS, reloaded on SIGHUP. TrustedProxies are the
	// peers whose forwarded headers are believed; TrustedProxyHeader the
	// one header their client address is read from (ops.Forwarded).
	MetricsListen      string
	TLSCert            string
	TLSKey             string
	TrustedProxies     []netip.Prefix
	TrustedProxyHeader string
}
