package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/wire"
)

// ServeOptions are serve's inputs.
type ServeOptions struct {
	IO         *IOStreams
	Logger     *slog.Logger
	HTTPClient *http.Client
	Now        func() time.Time

	Listen          string
	AddrFile        string
	ConfigPath      string
	AuthScope       string
	ConnectionToken string
	Stdio           bool
}

func newServeCommand(f *Factory) *cli.Command {
	opts := &ServeOptions{}
	return &cli.Command{
		Name:  "serve",
		Usage: "run the agent host on WebSocket (or one session on stdio)",
		Description: `Serves the agent host protocol: initialize declares the auth requirements
(schemes) from --config, authenticate hands over a bearer token, gated methods
answer -32007 with RFC 6750 challenges, and the host pushes notify/authRequired
(or auth/required) when a token expires or is revoked.

WebSocket upgrades are accepted on / and /ws. Logs go to stderr, never tokens.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7777", Usage: "`HOST:PORT` to listen on (port 0 picks a free one)", Destination: &opts.Listen},
			&cli.StringFlag{Name: "addr-file", Usage: "once listening, write the address (HOST:PORT and a newline) to `FILE`", Destination: &opts.AddrFile},
			&cli.StringFlag{Name: "config", Usage: "JSON `FILE` declaring the resource, schemes and methodScopes", Destination: &opts.ConfigPath},
			&cli.StringFlag{Name: "auth-scope", Value: host.AuthScopeConnection, Usage: "who a token authenticates: `connection` (the one that sent it) or host (every connection, last writer wins)", Destination: &opts.AuthScope},
			&cli.StringFlag{Name: "connection-token", Usage: "require ?tkn=`TOKEN` on WebSocket upgrades (HTTP 403 otherwise)", Destination: &opts.ConnectionToken},
			&cli.BoolFlag{Name: "stdio", Usage: "serve one session on stdin/stdout instead of listening (logs stay on stderr)", Destination: &opts.Stdio},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usageErrorf("serve takes no arguments")
			}
			if opts.AuthScope != host.AuthScopeConnection && opts.AuthScope != host.AuthScopeHost {
				return usageErrorf("--auth-scope must be connection or host, not %q", opts.AuthScope)
			}
			if c.IsSet("connection-token") && opts.ConnectionToken == "" {
				return usageErrorf("--connection-token must not be empty")
			}
			if opts.Stdio && (opts.AddrFile != "" || opts.ConnectionToken != "") {
				return usageErrorf("--addr-file and --connection-token apply to the listener, not to --stdio")
			}
			if opts.ConfigPath == "" {
				return usageErrorf("serve needs --config FILE (there is no built-in configuration yet)")
			}
			opts.IO = f.IO
			opts.HTTPClient = f.HTTPClient
			opts.Now = f.Now
			level := slog.LevelInfo
			if f.Verbose {
				level = slog.LevelDebug
			}
			opts.Logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, opts)
		},
	}
}

// runServe runs the host until ctx ends (SIGINT/SIGTERM: graceful, nil) or,
// with --stdio, until stdin closes.
func runServe(ctx context.Context, opts *ServeOptions) error {
	cfg, err := host.LoadConfig(opts.ConfigPath)
	if err != nil {
		return err
	}
	newHost := func(origin string) (*host.Host, error) {
		cfg.Resolve(origin)
		return host.New(host.Options{Config: cfg, AuthScope: opts.AuthScope, Logger: opts.Logger,
			HTTPClient: opts.HTTPClient, Now: opts.Now, MaxMessageSize: wire.DefaultMaxMessageSize})
	}
	if opts.Stdio {
		// Nothing listens: an empty resource and "embedded" resolve against
		// the --listen address.
		h, err := newHost("http://" + opts.Listen)
		if err != nil {
			return err
		}
		defer h.Close()
		conn := wire.NewStdioConn(opts.IO.In, opts.IO.Out, nil, wire.DefaultMaxMessageSize)
		h.ServeConn(ctx, conn)
		return nil
	}

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", opts.Listen, err)
	}
	addr := ln.Addr().String()
	h, err := newHost("http://" + addr)
	if err != nil {
		ln.Close()
		return err
	}
	defer h.Close()
	srv := &http.Server{
		Handler:           newServeMux(h, opts.ConnectionToken),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	opts.Logger.Info("agent host listening", "addr", addr, "resource", h.Resource(), "auth_scope", opts.AuthScope)
	if opts.AddrFile != "" {
		if err := writeFileAtomic(opts.AddrFile, []byte(addr+"\n")); err != nil {
			srv.Close()
			return err
		}
	}
	select {
	case err := <-served:
		return fmt.Errorf("cannot serve: %w", err)
	case <-ctx.Done():
	}
	opts.Logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.Close()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot shut down: %w", err)
	}
	return nil
}

// newServeMux mounts every HTTP face of serve on one mux: the WebSocket
// upgrade on / and /ws. The embedded issuer's endpoints, POST /mcp and
// /.well-known/oauth-protected-resource* are mounted here too.
func newServeMux(h *host.Host, connectionToken string) *http.ServeMux {
	mux := http.NewServeMux()
	ws := h.WebSocketHandler(connectionToken)
	mux.Handle("GET /{$}", ws)
	mux.Handle("GET /ws", ws)
	return mux
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so a reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
