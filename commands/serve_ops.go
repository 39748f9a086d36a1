package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
)

// serve's operations surface: log format, metrics listener, health
// checks, landing page, TLS certificate reload (package ops does the work).

// newServeLogger makes serve's logger: text (slog's key=value) or JSON
// lines (--log-format json).
func newServeLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	hopts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, hopts))
	}
	return slog.New(slog.NewTextHandler(w, hopts))
}

// startMetrics serves the Prometheus metrics on --metrics-listen (/metrics)
// until ctx ends; a bare :PORT listens on loopback. It returns the bound
// address.
func startMetrics(ctx context.Context, addr string, tel *ops.Recorder, logger *slog.Logger) (string, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port) // :PORT is loopback, not every interface
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("cannot listen on --metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.MetricsHandler())
	srv := newHTTPServer(mux, logger)
	go srv.Serve(ln)
	context.AfterFunc(ctx, func() { srv.Close() })
	return ln.Addr().String(), nil
}

// readinessChecks are /readyz's: the state store answers a read, the
// embedded issuer (when it runs) has its signing key loaded, and each
// gateway backend can be reached (gateway.Mount.Ready).
func readinessChecks(st state.Store, iss *issuer.Issuer, gw *gateway.Gateway) []ops.Check {
	checks := []ops.Check{{Name: "state", Check: func(ctx context.Context) error {
		return st.View(ctx, func(tx state.Tx) error {
			if _, err := tx.Get("ready", "probe"); err != nil && !errors.Is(err, state.ErrNotFound) {
				return err
			}
			return nil
		})
	}}}
	if iss != nil {
		checks = append(checks, ops.Check{Name: "signing_keys", Check: iss.Ready})
	}
	if gw != nil {
		for _, m := range gw.Mounts() {
			checks = append(checks, ops.Check{Name: "backend " + m.Name(), Check: m.Ready})
		}
	}
	return checks
}

// opsRoutes mounts /healthz, /readyz and the landing page (GET / without a
// WebSocket upgrade; ws, when set, keeps the upgrades on /).
func opsRoutes(mux *http.ServeMux, h *host.Host, iss *issuer.Issuer, st state.Store, gw *gateway.Gateway, ws http.Handler) {
	mux.Handle("GET /healthz", ops.Healthz())
	mux.Handle("GET /readyz", ops.Readyz(readinessChecks(st, iss, gw)...))
	l := ops.Landing{Version: serverVersion(), Resource: h.Resource(),
		Links: []ops.Link{{Title: "Protected resource metadata (RFC 9728)", URL: h.ResourceMetadataURL()}}}
	if iss != nil {
		l.Links = append(l.Links, ops.Link{Title: "Authorization server metadata (RFC 8414)", URL: "/.well-known/oauth-authorization-server"})
	}
	landing := ops.LandingHandler(l)
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Upgrade") == "":
		case ws != nil:
			ws.ServeHTTP(w, r)
			return
		default: // --stdio: no WebSocket here
			http.NotFound(w, r)
			return
		}
		landing.ServeHTTP(w, r)
	})
	mux.Handle("GET /{$}", root)
}

// reloadCertOnHangup reloads the TLS certificate on SIGHUP (with the
// config's reload, which has its own handler) until ctx ends; a pair that
// does not load is refused and the running one stays.
func reloadCertOnHangup(ctx context.Context, cert *ops.Certificate, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := cert.Reload(); err != nil {
					logger.Error("TLS certificate reload refused; the running one stays in force", "err", err)
					continue
				}
				logger.Info("TLS certificate reloaded")
			}
		}
	}()
}

// opsFlags checks --log-format, --tls-cert/--tls-key and --trusted-proxy.
func opsFlags(c *cli.Context, opts *ServeOptions) error {
	if opts.LogFormat != "text" && opts.LogFormat != "json" {
		return usageErrorf("--log-format must be text or json, not %q", opts.LogFormat)
	}
	for _, name := range []string{"metrics-listen", "tls-cert", "tls-key"} {
		if c.IsSet(name) && c.String(name) == "" {
			return usageErrorf("--%s must not be empty", name)
		}
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return usageErrorf("--tls-cert and --tls-key go together: give both")
	}
	if opts.TLSCert != "" && opts.Stdio {
		return usageErrorf("--tls-cert applies to the listener; with --stdio, serve a session on stdin/stdout")
	}
	p, err := ops.ParseTrustedProxies(c.StringSlice("trusted-proxy"))
	if err != nil {
		return usageErrorf("--trusted-proxy: %v", err)
	}
	opts.TrustedProxies = p
	if opts.TrustedProxyHeader, err = ops.ParseAddressHeader(opts.TrustedProxyHeader); err != nil {
		return usageErrorf("--trusted-proxy-header: %v", err)
	}
	if c.IsSet("trusted-proxy-header") && len(p) == 0 {
		return usageErrorf("--trusted-proxy-header applies with --trusted-proxy: name the proxy it comes from")
	}
	return nil
}

// newHTTPServer bounds every HTTP exchange of the listener: header, body,
// response and idle keep-alive times, and header size. (WebSocket
// connections leave these bounds once upgraded.)
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
