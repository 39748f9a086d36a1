package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/server"
	"github.com/agentauth/agentauth/wire"
)

// serve's flags after parsing: their checks, their combinations, and the
// copying of their values into server.Options.

// checkServeFlags checks serve's flags and completes opts from them and
// from f.
func checkServeFlags(c *cli.Context, f *Factory, opts *ServeOptions) error {
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
	if err := cimdFlags(c, opts); err != nil {
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
	return nil
}

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

// defaultDataDir is $XDG_STATE_HOME/agentauth/serve, else
// ~/.local/state/agentauth/serve (XDG Base Directory); on macOS and
// Windows, which have no state directory, os.UserConfigDir()/agentauth/serve.
func defaultDataDir() (string, error) {
	switch runtime.GOOS {
	case "darwin", "ios", "windows", "plan9":
		d, err := os.UserConfigDir()
		return filepath.Join(d, "agentauth", "serve"), err
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentauth", "serve"), nil
	}
	home, err := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "agentauth", "serve"), err
}

// stateFlags sets DataDir and checks the state flags' combinations.
func stateFlags(c *cli.Context, opts *ServeOptions) error {
	given := 0
	for _, name := range []string{"data-dir", "ephemeral", "database"} {
		if c.IsSet(name) {
			given++
		}
	}
	if given > 1 {
		return usageErrorf("--data-dir, --ephemeral and --database each choose where the state lives: give one")
	}
	if opts.Database != "" {
		if u, err := url.Parse(opts.Database); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return usageErrorf("--database must be a postgres:// URL")
		}
	}
	if err := checkRevocationFlags(c, opts); err != nil {
		return err
	}
	if opts.StateKeyFile != "" && opts.StateKeyKeyring {
		return usageErrorf("--state-key-file and --state-key-keyring each give the state key: give one")
	}
	if c.Duration("key-rotation") < time.Minute {
		return usageErrorf("--key-rotation must be at least 1m, not %s", c.Duration("key-rotation"))
	}
	switch {
	case c.IsSet("data-dir"):
		opts.DataDir = c.String("data-dir")
	case c.Bool("ephemeral"), opts.Database != "":
	default:
		dir, err := defaultDataDir()
		if err != nil {
			return fmt.Errorf("cannot find a data directory: %w\nName one with --data-dir DIR, or keep the state in memory with --ephemeral", err)
		}
		opts.DataDir = dir
	}
	return nil
}

// defaultRevocationStaleness is --revocation-staleness: with the default
// --revocation-reconcile (2s) a replica that reaches its database never
// comes near it.
const defaultRevocationStaleness = 10 * time.Second

// checkRevocationFlags checks --revocation-reconcile and
// --revocation-staleness: they apply to --database, and a replica must
// read the log more often than it may go without it.
func checkRevocationFlags(c *cli.Context, opts *ServeOptions) error {
	for _, name := range []string{"revocation-reconcile", "revocation-staleness"} {
		if c.IsSet(name) && opts.Database == "" {
			return usageErrorf("--%s applies to replicas sharing a --database", name)
		}
	}
	if opts.RevocationReconcile < 10*time.Millisecond {
		return usageErrorf("--revocation-reconcile must be at least 10ms, not %s", opts.RevocationReconcile)
	}
	if opts.RevocationStaleness < 2*opts.RevocationReconcile {
		return usageErrorf("--revocation-staleness (%s) must be at least twice --revocation-reconcile (%s), or a replica that reaches its database would refuse requests",
			opts.RevocationStaleness, opts.RevocationReconcile)
	}
	return nil
}

// runServe runs the server until ctx ends (SIGINT/SIGTERM: graceful, nil)
// or, with --stdio, until stdin closes.
func runServe(ctx context.Context, opts *ServeOptions) error {
	srv, err := server.New(ctx, serverOptions(opts))
	if err != nil {
		return serveError(err)
	}
	return serveError(srv.Run(ctx))
}

// serverOptions is serve's server.Options with what the command adds:
// its streams, its version and agentauth's stored credentials.
func serverOptions(opts *ServeOptions) server.Options {
	o := opts.Options
	o.LogOutput, o.Stdin, o.Stdout = opts.IO.ErrOut, opts.IO.In, opts.IO.Out
	o.Version, o.StoredToken = serverVersion(), opts.storedToken()
	return o
}

// serveError is a usage error (exit 2) when the server refused its
// options (server.OptionsError); other errors as they are.
func serveError(err error) error {
	var oe *server.OptionsError
	if errors.As(err, &oe) {
		return &UsageError{Err: err}
	}
	return err
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
			return "", fmt.Errorf("agentauth stores no credential for %s; run: %s", resource, client.LoginCommand(resource, ""))
		}
		cur, err := cs.Usable(ctx, c.Key, resource)
		if err != nil {
			return "", err
		}
		return cur.AccessToken, nil
	}
}

// cimdFlags copies --cimd, --cimd-host and --cimd-document into opts.CIMD:
// the mode, the hosts documents are fetched from, and the pinned documents
// read from their files (checked by issuer.New).
func cimdFlags(c *cli.Context, opts *ServeOptions) error {
	opts.CIMD = issuer.CIMDOptions{Mode: c.String("cimd"), Hosts: c.StringSlice("cimd-host")}
	switch opts.CIMD.Mode {
	case issuer.CIMDFetch, issuer.CIMDPinned, issuer.CIMDOff:
	default:
		return usageErrorf("--cimd must be %s, %s or %s, not %q", issuer.CIMDFetch, issuer.CIMDPinned, issuer.CIMDOff, opts.CIMD.Mode)
	}
	if opts.CIMD.Mode != issuer.CIMDFetch && len(opts.CIMD.Hosts) > 0 {
		return usageErrorf("--cimd-host names the hosts documents are fetched from, and --cimd %s fetches none", opts.CIMD.Mode)
	}
	for _, path := range c.StringSlice("cimd-document") {
		data, err := os.ReadFile(path)
		if err != nil {
			return usageErrorf("--cimd-document: cannot read %s: %v", path, err)
		}
		docs, err := issuer.ParseCIMDDocuments(data)
		if err != nil {
			return usageErrorf("--cimd-document: cannot use %s: %v", path, err)
		}
		opts.CIMD.Pinned = append(opts.CIMD.Pinned, docs...)
	}
	if opts.CIMD.Mode == issuer.CIMDPinned && len(opts.CIMD.Pinned) == 0 {
		return usageErrorf("--cimd pinned uses only the documents of --cimd-document FILE, and none is given")
	}
	if opts.CIMD.Mode == issuer.CIMDOff && len(opts.CIMD.Pinned) > 0 {
		return usageErrorf("--cimd-document pins a document, and --cimd off uses none")
	}
	return nil
}
