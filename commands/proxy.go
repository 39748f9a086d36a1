package commands

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/internal/atomicfile"
	"github.com/agentauth/agentauth/proxy"
	"github.com/agentauth/agentauth/wire"
)

// ProxyOptions are proxy's inputs.
type ProxyOptions struct {
	IO     *IOStreams
	Client *client.Client

	Target    string
	Transport string
	Header    http.Header
	// Listen is --listen: serve a loopback HTTP endpoint instead of stdio.
	Listen string
	// AddrFile is --addr-file: where --listen writes its address.
	AddrFile string
	// URLFile is --url-file: where --listen writes its endpoint's URL,
	// secret included (mode 0600).
	URLFile string
	// SecretFile is --secret-file: where --listen keeps its endpoint's
	// secret across starts.
	SecretFile     string
	AllowResources []string
	Login          LoginChoices
}

func newProxyCommand(f *Factory) *cli.Command { return proxyCommand(f, runProxy) }

// proxyCommand builds the command; run is runProxy except in the flag
// tests.
func proxyCommand(f *Factory, run func(context.Context, *ProxyOptions) error) *cli.Command {
	opts := &ProxyOptions{}
	return &cli.Command{
		Name:      "proxy",
		Usage:     "serve an OAuth-protected MCP server to a local MCP client over stdio, with agentauth's login and credentials",
		ArgsUsage: "TARGET",
		Description: `TARGET is the MCP server's http(s) URL. proxy is an MCP server on stdin and
stdout for the program that runs it (a desktop or IDE MCP client, an SDK's
stdio transport): every JSON-RPC message it reads is forwarded to TARGET and
every message TARGET sends comes back on stdout, which carries nothing else.
Logs, login prompts, URLs and device codes go to stderr.

Transport: --transport http-first (default) posts the client's first message
over Streamable HTTP and, when the server answers 400, 404 or 405, opens the
legacy HTTP+SSE transport (GET, the "endpoint" event) instead; sse-first the
other way round; http-only and sse-only do not fall back. Server requests,
notifications, progress and cancellation pass through both ways; a broken
response stream is resumed with Last-Event-ID.

Authorization: the credential stored for TARGET (agentauth login), refreshed
before it expires; on a 401, login as agentauth login does (a browser, or
--device: the URL and code on stderr) and the request is sent again; without
a terminal (started by an MCP client) the browser is still opened where
there is a desktop (macOS, Windows, $DISPLAY or $WAYLAND_DISPLAY), unless
--no-browser;
concurrent proxies of one TARGET log in once (the others wait and use that
login); a 403 insufficient_scope logs in again with the scope asked for.
URL elicitations go to the client when it declares elicitation.url, else
agentauth shows and opens them itself.

--header NAME:VALUE adds a header to every request to TARGET (repeatable).

The proxy ends when stdin closes or on SIGTERM, cancelling the requests under
way. A server that cannot be reached, or a login that fails, answers the
request with a JSON-RPC error; the proxy goes on.

--listen 127.0.0.1:PORT serves the same bridge as an MCP Streamable HTTP
endpoint for local clients that speak HTTP but not OAuth, at
http://127.0.0.1:PORT/SECRET/mcp: SECRET is made anew at each start (256
random bits) unless --secret-file FILE keeps it (read from FILE, or made
and written there with mode 0600; a FILE other users may read is refused),
so that a fixed port and FILE keep the URL the same across starts; and a request without it is refused (403) and never
forwarded, so other local users (who can reach any loopback port) cannot
use the credential. The URL is printed on stderr, or, with --url-file FILE,
written to FILE (mode 0600) instead. Loopback addresses only; Host and
Origin are checked as serve checks them (a page of another origin, or a
DNS-rebound name, is refused); each client session gets its own session
at TARGET, all with the one credential. --addr-file FILE writes the
address (HOST:PORT, no secret) once listening (port 0: a free one). It runs
until SIGINT or SIGTERM.

Exit status: 0 stdin closed or SIGTERM (with --listen: SIGINT or SIGTERM),
1 failure (stdin or stdout failed, the address cannot be listened on),
2 usage. Authorization failures do not end the proxy: the request that
needed it gets a JSON-RPC error naming the login to run.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "transport", Value: proxy.HTTPFirst, Usage: "`STRATEGY`: " + strings.Join(proxy.Transports, ", "), Destination: &opts.Transport},
			&cli.StringSliceFlag{Name: "header", Usage: "send `NAME:VALUE` with every request to TARGET (repeatable)"},
			&cli.StringSliceFlag{Name: "allow-resource", Usage: "let TARGET receive tokens for `URL`, a resource it declares on another origin (repeatable)"},
			&cli.StringFlag{Name: "listen", Usage: "instead of stdio, serve MCP Streamable HTTP at http://`ADDR`/SECRET/mcp (loopback only, e.g. 127.0.0.1:0) for local clients without OAuth", Destination: &opts.Listen},
			&cli.StringFlag{Name: "addr-file", Usage: "with --listen, once listening, write the address (HOST:PORT and a newline) to `FILE`", Destination: &opts.AddrFile},
			&cli.StringFlag{Name: "url-file", Usage: "with --listen, write the endpoint's URL, with its secret, to `FILE` (mode 0600) instead of stderr", Destination: &opts.URLFile},
			&cli.StringFlag{Name: "secret-file", Usage: "with --listen, keep the endpoint's secret in `FILE` (mode 0600; made when missing), so a fixed port keeps the URL across starts", Destination: &opts.SecretFile},
		}, proxyLoginFlags(&opts.Login)...),
		Action: func(c *cli.Context) error {
			target, err := targetArg(c)
			if err != nil {
				return err
			}
			if !client.IsHTTPTarget(target) {
				return usageErrorf("proxy needs an http or https MCP server URL, not %q", target)
			}
			opts.Target = target
			if !slices.Contains(proxy.Transports, opts.Transport) {
				return usageErrorf("--transport must be one of %s, not %q", strings.Join(proxy.Transports, ", "), opts.Transport)
			}
			if opts.Header, err = parseHeaders(c.StringSlice("header")); err != nil {
				return err
			}
			opts.AllowResources = c.StringSlice("allow-resource")
			for _, r := range opts.AllowResources {
				if u, err := url.Parse(r); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageErrorf("--allow-resource must be an http(s) URL, not %q", r)
				}
			}
			if err := opts.checkListen(); err != nil {
				return err
			}
			if err := opts.Login.check(c.IsSet("client-id")); err != nil {
				return err
			}
			f.AppChild = true
			opts.IO, opts.Client = f.IO, f.Client()
			return run(c.Context, opts)
		},
	}
}

// proxyLoginFlags are login's choice flags but --client-secret-stdin:
// stdin carries the client's messages (log in first with agentauth login
// --client-id ID --client-secret-stdin TARGET; the proxy then uses that
// credential).
func proxyLoginFlags(ch *LoginChoices) []cli.Flag {
	var out []cli.Flag
	for _, f := range loginChoiceFlags(ch, "") {
		if !hasFlagNamed([]cli.Flag{f}, "client-secret-stdin") {
			out = append(out, f)
		}
	}
	return out
}

// parseHeaders reads --header NAME:VALUE values. Headers the transport
// sets itself (Authorization, Mcp-*, Content-Type, Accept, Host) cannot
// be replaced.
func parseHeaders(values []string) (http.Header, error) {
	h := http.Header{}
	for _, v := range values {
		name, value, ok := strings.Cut(v, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return nil, usageErrorf("--header must be NAME:VALUE, not %q", v)
		}
		canon := http.CanonicalHeaderKey(name)
		switch {
		case canon == "Authorization", canon == "Dpop", strings.HasPrefix(canon, "Mcp-"), canon == "Content-Type", canon == "Accept", canon == "Host", canon == "Last-Event-Id":
			return nil, usageErrorf("--header cannot set %s: agentauth sets it", canon)
		}
		h.Add(canon, value)
	}
	return h, nil
}

// checkListen: --listen takes a loopback HOST:PORT; --addr-file,
// --url-file and --secret-file need it.
func (opts *ProxyOptions) checkListen() error {
	if opts.Listen == "" {
		if opts.AddrFile != "" {
			return usageErrorf("--addr-file needs --listen")
		}
		if opts.URLFile != "" {
			return usageErrorf("--url-file needs --listen")
		}
		if opts.SecretFile != "" {
			return usageErrorf("--secret-file needs --listen")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return usageErrorf("--listen must be HOST:PORT, not %q", opts.Listen)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageErrorf("--listen must be a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT), not %q: the endpoint lends the credential to whoever has its URL", opts.Listen)
	}
	return nil
}

func runProxy(ctx context.Context, opts *ProxyOptions) error {
	choices := opts.Login.choices("")
	choices.AllowResources = opts.AllowResources
	req := proxy.Request{Target: opts.Target, Transport: opts.Transport, Header: opts.Header, Choices: choices}
	if opts.Listen == "" {
		return proxy.Run(ctx, opts.Client, req, opts.IO.In, opts.IO.Out)
	}
	return runProxyListen(ctx, opts, req)
}

// runProxyListen serves the bridge on a loopback listener behind serve's
// Host/Origin guard (host.NewGuard) until ctx ends. The endpoint's path
// carries its secret (proxy.Server.Path): the URL goes to the --url-file,
// written before the --addr-file (which a script waits for) with mode
// 0600, else to stderr; the guard has no logger, since the paths it would
// log may carry the secret.
func runProxyListen(ctx context.Context, opts *ProxyOptions, req proxy.Request) error {
	ps, err := proxy.NewServer(ctx, opts.Client, req, opts.SecretFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", opts.Listen, err)
	}
	addr := ln.Addr().String()
	guarded, err := host.NewGuard(ps, host.GuardOptions{Addr: addr, OriginPaths: []string{ps.Path()}})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: guarded, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	for _, f := range []struct{ path, data string }{{opts.URLFile, ps.URL(addr) + "\n"}, {opts.AddrFile, addr + "\n"}} {
		if f.path == "" {
			continue
		}
		if err := atomicfile.Write(f.path, []byte(f.data)); err != nil { // mode 0600 (os.CreateTemp)
			srv.Close()
			return err
		}
	}
	if opts.URLFile != "" {
		opts.Client.UI.Say(fmt.Sprintf("Serving %s at http://%s/…%s; the URL, with its secret, is in %s", wire.RedactTarget(opts.Target), addr, proxy.EndpointPath, opts.URLFile))
	} else {
		opts.Client.UI.Say(fmt.Sprintf("Serving %s at %s", wire.RedactTarget(opts.Target), ps.URL(addr)))
	}
	select {
	case err := <-served:
		return fmt.Errorf("cannot serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx) // open event streams end with their sessions
	ps.Wait()
	return nil
}
