package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/internal/atomicfile"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// Server is serve assembled: what New built, for Run to serve.
type Server struct {
	opts    Options
	logger  *slog.Logger
	callLog *slog.Logger // the gateway's record of each call (ops.LogWriter.Held)
	tel     *ops.Recorder

	cfg *host.Config
	// embedded: a scheme uses the embedded issuer (read before Resolve
	// replaces "embedded" with the issuer's origin); clients and scopes
	// are what it pre-registers and advertises.
	embedded bool
	clients  []issuer.Client
	scopes   []string
	// listening: a listener runs (always, unless Stdio alone needs none).
	listening    bool
	ln           net.Listener
	origin       string // the listener's (http://HOST:PORT, https with TLS)
	issuerOrigin string // the embedded issuer's: the resource's origin
	login        *issuer.LoginOptions

	st        state.Store
	stateDesc string // the store, named for the log and the keyring
	key       []byte // the state key; nil: stored in the clear

	iss  *issuer.Issuer
	brk  *broker.Broker
	host *host.Host
	gw   *gateway.Gateway
	srv  *http.Server

	closers []func() // run last first by Close
}

// New builds the server from opts, in the order its parts depend on each
// other. Its goroutines (config and certificate reloads, the staleness
// watcher, session ends) live until ctx ends. On error, what was built is
// released.
func New(ctx context.Context, opts Options) (_ *Server, err error) {
	s := &Server{opts: opts}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.openLogs(); err != nil {
		return nil, err
	}
	if err := s.readConfig(); err != nil {
		return nil, err
	}
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	if err := s.chooseLogin(); err != nil {
		return nil, err
	}
	s.resolveConfig()
	if err := s.openState(ctx); err != nil {
		return nil, err
	}
	if err := s.startIssuer(); err != nil {
		return nil, err
	}
	s.brk, err = newBroker(ctx, s.cfg, s.st, s.key, s.issuerOrigin, opts.HTTPClient, s.logger, opts.Now, s.tel, s.iss, opts.AutoApprove)
	if err != nil {
		return nil, err
	}
	if err := s.startHost(); err != nil {
		return nil, err
	}
	if err := s.startGateway(); err != nil {
		return nil, err
	}
	if err := s.followRevocations(ctx); err != nil {
		return nil, err
	}
	s.watchConfig(ctx)
	if err := s.buildHTTP(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// onClose registers f for Close.
func (s *Server) onClose(f func()) { s.closers = append(s.closers, f) }

// Close releases what New built, last first. Run calls it; call it
// yourself only for a server that is not run.
func (s *Server) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// openLogs sets up the logs: opts.Logger as given, or a writer over
// LogFile (else LogOutput) that the gateway's call records share.
func (s *Server) openLogs() error {
	s.logger = s.opts.Logger
	s.callLog = s.logger
	out := s.opts.LogOutput // the server's own log output, unless opts.Logger is given
	if s.opts.LogFile != "" {
		f, err := os.OpenFile(s.opts.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("cannot open the log file: %w", err)
		}
		s.onClose(func() { f.Close() })
		out = f
	} else if s.logger != nil {
		out = nil
	}
	if out != nil {
		lw := ops.NewLogWriter(out)
		s.onClose(func() { lw.Close() }) // before f.Close: the records held are written
		s.logger = newServeLogger(lw, s.opts.LogFormat, s.opts.LogLevel)
		s.callLog = newServeLogger(lw.Held(), s.opts.LogFormat, s.opts.LogLevel)
	}
	s.tel = ops.New(s.logger)
	return nil
}

// readConfig loads the config and decides what runs: the embedded issuer
// (with the clients and scopes it needs) and the listener.
func (s *Server) readConfig() error {
	cfg, err := loadConfig(&s.opts)
	if err != nil {
		return err
	}
	s.cfg = cfg
	s.embedded = usesEmbeddedIssuer(cfg)
	if s.clients, err = introspectionClients(cfg); err != nil {
		return err
	}
	s.scopes = embeddedScopes(cfg)
	issuerOnly := s.opts.IssuerFlags
	if len(cfg.Upstreams) > 0 {
		// The state key also seals the upstream tokens.
		issuerOnly = slices.DeleteFunc(slices.Clone(issuerOnly), func(f string) bool { return f == "--state-key-file" || f == "--state-key-keyring" })
	}
	if !s.embedded && len(issuerOnly) > 0 {
		return usagef("%s configure the embedded issuer, and no scheme uses it (name \"embedded\" in a scheme's authorizationServers with jwt or introspection validation)", strings.Join(issuerOnly, ", "))
	}
	// The broker's /auth/start and /callback need the listener.
	s.listening = !s.opts.Stdio || s.embedded || len(cfg.Upstreams) > 0
	if !s.listening && s.opts.AddrFile != "" {
		return usagef("--addr-file applies to the listener, and with --stdio nothing listens unless a scheme uses the embedded issuer or the config has upstreams")
	}
	return nil
}

// listen opens the listener (with TLS, its certificate reloaded on
// SIGHUP) when one runs. Nothing listens with Stdio alone: an empty
// resource and "embedded" then resolve against the Listen address.
func (s *Server) listen(ctx context.Context) error {
	s.origin = "http://" + s.opts.Listen
	if !s.listening {
		return nil
	}
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", s.opts.Listen, err)
	}
	s.onClose(func() { ln.Close() })
	s.ln = ln
	s.origin = "http://" + ln.Addr().String()
	if s.opts.TLSCert != "" {
		cert, err := ops.LoadCertificate(s.opts.TLSCert, s.opts.TLSKey)
		if err != nil {
			return err
		}
		reloadCertOnHangup(ctx, cert, s.logger)
		s.ln = tls.NewListener(ln, cert.Config())
		s.origin = "https://" + ln.Addr().String()
	}
	return nil
}

// chooseLogin decides how the embedded issuer signs users in (see
// embeddedLogin); a config login without the embedded issuer is refused.
func (s *Server) chooseLogin() error {
	if s.embedded {
		ip, _, _ := net.SplitHostPort(s.ln.Addr().String())
		login, err := embeddedLogin(&s.opts, s.cfg, isLoopbackHost(ip), s.opts.HTTPClient)
		s.login = login
		return err
	}
	if s.cfg.Login != nil {
		return usagef("the config's login signs users in to the embedded issuer, and no scheme uses it (name \"embedded\" in a scheme's authorizationServers)")
	}
	return nil
}

// resolveConfig publishes the embedded issuer on the resource's origin:
// the listener's by default, or the one a reverse proxy or load balancer
// serves the resource at (Resource), so that replicas behind it share one
// issuer identifier.
func (s *Server) resolveConfig() {
	s.issuerOrigin = s.origin
	if u, err := url.Parse(s.cfg.Resource); err == nil && s.cfg.Resource != "" {
		s.issuerOrigin = u.Scheme + "://" + u.Host
	}
	s.cfg.Resolve(s.issuerOrigin)
}

// openState opens the state store and, when the embedded issuer or the
// broker keeps secrets in it, reads the state key.
func (s *Server) openState(ctx context.Context) error {
	st, desc, err := openState(ctx, &s.opts, s.logger)
	if err != nil {
		return err
	}
	s.onClose(func() { st.Close() })
	s.st, s.stateDesc = st, desc
	if !s.embedded && len(s.cfg.Upstreams) == 0 {
		return nil
	}
	if s.opts.StateKeyKeyring {
		s.key, err = keyringStateKey(desc, stateKeyringTimeout)
	} else {
		s.key, err = readStateKey(s.opts.StateKeyFile)
	}
	return err
}

// startIssuer starts the embedded issuer when a scheme uses it.
func (s *Server) startIssuer() error {
	if !s.embedded {
		return nil
	}
	opts, cfg := &s.opts, s.cfg
	iss, err := issuer.New(issuer.Options{
		Issuer: s.issuerOrigin, DefaultResource: cfg.Resource,
		TokenTTL: opts.TokenTTL, RefreshTTL: opts.RefreshTTL, CodeTTL: opts.CodeTTL, DeviceInterval: opts.DeviceInterval,
		AutoApprove: opts.AutoApprove, Subject: opts.DevUser, ScopesSupported: s.scopes, Clients: s.clients,
		ScopeDescriptions:      cfg.ScopeDescriptions,
		AllowedRedirectOrigins: opts.AllowRedirectOrigins, AssertionIssuers: opts.AssertionIssuers, CIMD: opts.CIMD, Logger: s.logger, Now: opts.Now,
		Store: s.st, StateKey: s.key, KeyRotation: opts.KeyRotation, RotateKey: opts.RotateKey, Login: s.login, Telemetry: s.tel,
	})
	if err != nil {
		return fmt.Errorf("cannot start the embedded issuer: %w", err)
	}
	s.iss = iss
	return nil
}

// startHost builds the agent host over the config, the store and the
// broker.
func (s *Server) startHost() error {
	opts := &s.opts
	h, err := host.New(host.Options{Config: s.cfg, AuthScope: opts.AuthScope, Logger: s.logger, HTTPClient: opts.HTTPClient,
		Now: opts.Now, MaxMessageSize: wire.DefaultMaxMessageSize, Version: opts.Version, Store: s.st, StoredToken: opts.StoredToken, Broker: s.brk, Telemetry: s.tel,
		ConformanceFixtures: opts.ConformanceFixtures})
	if err != nil {
		return err
	}
	s.onClose(h.Close)
	s.host = h
	return nil
}

// startGateway builds the gateway in front of the config's backends
// (none without any).
func (s *Server) startGateway() error {
	gw, err := newGateway(s.cfg, s.brk, s.iss, s.logger, s.callLog, s.tel)
	if err != nil {
		return err
	}
	s.onClose(func() { gw.Close() })
	s.gw = gw
	return nil
}

// followRevocations makes the embedded issuer's revocations and session
// ends reach the host's connections at once (its tokens expire within one
// TokenTTL), and keeps the tokens revoked before a restart refused.
func (s *Server) followRevocations(ctx context.Context) error {
	if s.iss == nil {
		return nil
	}
	h, ttl := s.host, s.opts.TokenTTL
	now := s.opts.Now
	if now == nil {
		now = time.Now
	}
	s.iss.OnRevoke(func(jtis []string) { h.NotifyRevoked(now().Add(ttl), jtis...) })
	s.iss.OnSessionEnd(func(subject, clientID string) { h.EndSession(ctx, subject, clientID) })
	revoked, err := s.iss.Revoked(ctx)
	if err != nil {
		return err
	}
	for jti, until := range revoked {
		h.NotifyRevoked(until, jti)
	}
	return nil
}

// watchConfig re-reads the config file on SIGHUP (see reloadOnHangup).
func (s *Server) watchConfig(ctx context.Context) {
	if s.opts.ConfigPath == "" {
		return
	}
	stop := reloadOnHangup(ctx, &s.opts, s.host, s.st, s.embedded, s.issuerOrigin, s.cfg.Upstreams, s.cfg, s.logger)
	s.onClose(stop)
}

// buildHTTP builds the listener's HTTP server: the routes, the gateway's
// mounts, the guard (Host and Origin), the refusal while the revocation
// log is stale, forwarded headers from trusted proxies, and metrics.
func (s *Server) buildHTTP(ctx context.Context) error {
	if !s.listening {
		return nil
	}
	opts := &s.opts
	mux, err := newServeMux(opts.Version, s.host, s.iss, s.brk, s.st, s.gw, opts.ConnectionToken, !opts.Stdio)
	if err != nil {
		return err
	}
	gopts := guardOptions(opts, s.ln.Addr().String(), s.host.Resource(), s.logger)
	routes, err := mountGateway(mux, s.gw, s.host, &gopts)
	if err != nil {
		return err
	}
	gopts.Telemetry = s.tel
	guarded, err := host.NewGuard(routes, gopts)
	if err != nil {
		return err
	}
	s.srv = newHTTPServer(s.tel.Instrument(ops.Forwarded(opts.TrustedProxies, opts.TrustedProxyHeader, refuseWhenStale(ctx, guarded, s.st, opts.RevocationStaleness, s.logger))), s.logger)
	return nil
}

// Run serves until ctx ends (graceful: nil) or, with Options.Stdio, until
// stdin closes, then shuts down (HTTP drained for up to 5 s) and closes
// the server.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	served := make(chan error, 1)
	if s.srv != nil {
		go func() { served <- s.srv.Serve(s.ln) }()
		if err := s.announce(ctx); err != nil {
			s.srv.Close()
			return err
		}
	}
	if s.opts.Stdio {
		conn := wire.NewStdioConn(s.opts.Stdin, s.opts.Stdout, nil, wire.DefaultMaxMessageSize)
		s.host.ServeConn(ctx, conn)
	} else {
		select {
		case err := <-served:
			return fmt.Errorf("cannot serve: %w", err)
		case <-ctx.Done():
		}
		s.logger.Info("shutting down")
	}
	s.host.Close()
	if s.srv == nil {
		return nil
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot shut down: %w", err)
	}
	return nil
}

// announce starts the metrics listener, logs "agent host listening" with
// what serves where, and writes the address file.
func (s *Server) announce(ctx context.Context) error {
	opts, addr := &s.opts, s.ln.Addr().String()
	attrs := []any{"addr", addr, "resource", s.host.Resource(), "resource_metadata", s.host.ResourceMetadataURL(), "auth_scope", opts.AuthScope}
	if s.iss != nil {
		attrs = append(attrs, "issuer", s.issuerOrigin, "auto_approve", opts.AutoApprove)
		if s.login != nil {
			attrs = append(attrs, "login", s.login.Issuer)
		} else {
			attrs = append(attrs, "dev_user", opts.DevUser, "login", "dev")
		}
	}
	attrs = append(attrs, "state", s.stateDesc)
	if opts.MetricsListen != "" {
		if pg, ok := s.st.(*state.Postgres); ok {
			s.tel.RevocationLagFrom(func() time.Duration { return time.Since(pg.RevocationFeed().Synced) })
		}
		maddr, err := startMetrics(ctx, opts.MetricsListen, s.tel, s.logger)
		if err != nil {
			return err
		}
		attrs = append(attrs, "metrics", "http://"+maddr+"/metrics")
	}
	s.logger.Info("agent host listening", append(attrs, "version", opts.Version)...)
	if opts.AddrFile != "" {
		return atomicfile.Write(opts.AddrFile, []byte(addr+"\n"))
	}
	return nil
}

// isLoopbackHost reports whether h names the loopback interface.
func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
