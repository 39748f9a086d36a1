package commands

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
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
	AddrFile       string
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
--device: the URL and code on stderr) and the request is sent again;
concurrent proxies of one TARGET log in once (the others wait and use that
login); a 403 insufficient_scope logs in again with the scope asked for.
URL elicitations go to the client when it declares elicitation.url, else
agentauth shows and opens them itself.

--header NAME:VALUE adds a header to every request to TARGET (repeatable).

The proxy ends when stdin closes or on SIGTERM, cancelling the requests under
way. A server that cannot be reached, or a login that fails, answers the
request with a JSON-RPC error; the proxy goes on.

Exit status: 0 stdin closed, 1 failure (stdin or stdout failed), 2 usage,
4 authentication needed (the store cannot be used for a login).`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "transport", Value: client.ProxyHTTPFirst, Usage: "`STRATEGY`: " + strings.Join(client.ProxyTransports, ", "), Destination: &opts.Transport},
			&cli.StringSliceFlag{Name: "header", Usage: "send `NAME:VALUE` with every request to TARGET (repeatable)"},
			&cli.StringSliceFlag{Name: "allow-resource", Usage: "let TARGET receive tokens for `URL`, a resource it declares on another origin (repeatable)"},
		}, loginChoiceFlags(&opts.Login, "")...),
		Action: func(c *cli.Context) error {
			target, err := targetArg(c)
			if err != nil {
				return err
			}
			if !client.IsHTTPTarget(target) {
				return usageErrorf("proxy needs an http or https MCP server URL, not %q", target)
			}
			opts.Target = target
			if !slices.Contains(client.ProxyTransports, opts.Transport) {
				return usageErrorf("--transport must be one of %s, not %q", strings.Join(client.ProxyTransports, ", "), opts.Transport)
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
			if opts.Login.ClientSecretStdin {
				return usageErrorf("--client-secret-stdin does not apply to proxy: stdin carries the client's messages\nTo log in with a client secret, run: agentauth login --client-id ID --client-secret-stdin %s", target)
			}
			if err := opts.Login.check(c.IsSet("client-id")); err != nil {
				return err
			}
			opts.IO, opts.Client = f.IO, f.Client()
			return run(c.Context, opts)
		},
	}
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

func runProxy(ctx context.Context, opts *ProxyOptions) error {
	choices := opts.Login.choices("")
	choices.AllowResources = opts.AllowResources
	req := client.ProxyRequest{Target: opts.Target, Transport: opts.Transport, Header: opts.Header, Choices: choices}
	return opts.Client.Proxy(ctx, req, opts.IO.In, opts.IO.Out)
}
