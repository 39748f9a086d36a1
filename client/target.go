package client

import (
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// bareHostPort is a TARGET written without a scheme: "127.0.0.1:7777",
// "localhost:7777", "[::1]:7777".
var bareHostPort = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):[0-9]+$`)
})

// CheckTarget refuses a TARGET of no supported kind, each refusal a
// *UsageError naming the fix: an agent host (ws://, wss://, stdio:COMMAND
// LINE) or an MCP server / protected resource (http(s)://; whether plain
// http is allowed is checked where it is used).
func CheckTarget(target string) error {
	lower := strings.ToLower(target)
	switch {
	case strings.HasPrefix(lower, "stdio:"):
		if strings.TrimSpace(target[len("stdio:"):]) == "" {
			return Usagef("stdio: needs the command line of the agent to run, for example stdio:agentauth serve --stdio")
		}
		return nil
	case bareHostPort().MatchString(target):
		return Usagef("target %q has no scheme: did you mean ws://%s (an agent host) or http://%s/mcp (an MCP server)?", target, target, target)
	}
	for _, scheme := range []string{"ws://", "wss://", "http://", "https://"} {
		if !strings.HasPrefix(lower, scheme) {
			continue
		}
		u, err := url.Parse(target)
		if err != nil || u.Host == "" || u.Hostname() == "" || u.User != nil {
			return Usagef("malformed target %q: write %sHOST:PORT[/PATH]", wire.RedactTarget(target), scheme)
		}
		if p := u.Port(); p != "" && !validPort(p) {
			return Usagef("malformed target %q: the port must be between 1 and 65535", wire.RedactTarget(target))
		}
		if (scheme == "ws://" || scheme == "wss://") && strings.TrimSuffix(u.Path, "/") == "/mcp" {
			web := "http"
			if scheme == "wss://" {
				web = "https"
			}
			return Usagef("%s is not a WebSocket endpoint: the MCP endpoint speaks HTTP, use %s://%s/mcp (or %s%s for the agent host)",
				wire.RedactTarget(target), web, u.Host, scheme, u.Host)
		}
		return nil
	}
	return Usagef("unsupported target %q: use ws://HOST:PORT, wss://HOST:PORT, stdio:COMMAND LINE or an MCP server's https:// URL", wire.RedactTarget(target))
}

func validPort(p string) bool {
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return false
		}
	}
	return n >= 1
}

// NormalizeTarget is the one spelling of a target that every command
// stores and looks credentials up by: the scheme and host in lower case,
// the scheme's default port left out (RFC 3986 §6.2.3), and an agent host's
// empty path written without "/" (ws://h:p/ is ws://h:p). An HTTP
// resource's path is kept as given: RFC 8707 resources are compared as
// strings, so /mcp and /mcp/ may be two resources. localhost and 127.0.0.1
// stay distinct: they are distinct origins to a browser and to the server.
// stdio: targets and anything CheckTarget refuses are returned unchanged.
func NormalizeTarget(target string) string {
	if CheckTarget(target) != nil || strings.HasPrefix(strings.ToLower(target), "stdio:") {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == defaultPorts[u.Scheme] {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	if port != "" {
		u.Host += ":" + port
	}
	if (u.Scheme == "ws" || u.Scheme == "wss") && u.Path == "/" {
		u.Path, u.RawPath = "", ""
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.Path == "/" && u.RawQuery == "" {
		u.Path, u.RawPath = "", ""
	}
	return u.String()
}

var defaultPorts = map[string]string{"ws": "80", "http": "80", "wss": "443", "https": "443"}

// LoopbackIP is target with the host localhost written 127.0.0.1 (the
// user's opt-in, --loopback-ip: the same machine, and from then on the
// same credentials); other targets are returned unchanged.
func LoopbackIP(target string) string {
	u, err := url.Parse(target)
	if err != nil || !strings.EqualFold(u.Hostname(), "localhost") || CheckTarget(target) != nil || strings.HasPrefix(strings.ToLower(target), "stdio:") {
		return target
	}
	host := "127.0.0.1"
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	u.Host = host
	return u.String()
}
