package commands

import (
	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/ops"
)

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
