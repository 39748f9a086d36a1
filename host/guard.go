package host

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

// GuardOptions say whom a listener answers (see NewGuard).
type GuardOptions struct {
	// Addr is the listener's bound address, HOST:PORT (the port the
	// system chose for port 0, not 0).
	Addr string
	// PublicOrigins are the origins (scheme://host[:port]) the server is
	// also reached at, through a reverse proxy say: their host is accepted
	// as Host and the origin itself as Origin.
	PublicOrigins []string
	// AllowedOrigins are the origins of other sites whose pages may call
	// the OriginPaths and open WebSocket connections.
	AllowedOrigins []string
	// OriginPaths are the paths where a foreign Origin is refused (the MCP
	// endpoint); WebSocket upgrades are checked on every path.
	OriginPaths []string
	// HostHint and OriginHint are the fix each refusal names on a line of
	// its own (the flags that widen the guard).
	HostHint, OriginHint string
	// Logger receives one line per refusal. Default: discard.
	Logger *slog.Logger
	// Telemetry, when set, counts the refusals (nil: none).
	Telemetry *ops.Recorder
}

// guardKey marks the context of a request with an Origin that passed the
// guard; its value is that Origin.
type guardKey struct{}

// GuardedOrigin reports whether ctx is that of a request with an Origin
// that passed a guard, and that Origin.
func GuardedOrigin(ctx context.Context) (string, bool) {
	o, ok := ctx.Value(guardKey{}).(string)
	return o, ok
}

// NewGuard wraps next so that it answers only requests meant for it:
//   - Host must name the listener or a public origin, otherwise 421
//     Misdirected Request (RFC 9110 §15.5.20) on every path. A page that
//     rebinds its own DNS name to this address (DNS rebinding) sends its
//     own name as Host, so it is refused. The listener's names are its
//     address and port; for a loopback listener also localhost and any
//     loopback IP on that port; for a wildcard listener (0.0.0.0, ::)
//     localhost and any IP literal on that port. An IP literal cannot be
//     rebound, and a name other than localhost needs PublicOrigins.
//   - Origin, when present on a WebSocket upgrade or one of the
//     OriginPaths, must be the listener's own origin (http://NAME:PORT for
//     one of those names), a public origin or an allowed origin,
//     otherwise 403 (MCP 2025-11-25 "Transports": servers MUST validate
//     Origin and answer an invalid one with 403). Requests without
//     Origin (command-line clients) pass.
//
// Requests that pass with an Origin carry it, vetted, in their context:
// the WebSocket handler then skips its library's own same-host check
// (which passes a request without Origin anyway), and the HTTP face
// allows that origin by CORS. Requests without one go on unchanged.
func NewGuard(next http.Handler, opts GuardOptions) (http.Handler, error) {
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil || port == "" || port == "0" {
		return nil, fmt.Errorf("cannot guard the listener: %q is not a bound HOST:PORT", opts.Addr)
	}
	g := &guard{next: next, addrHost: strings.ToLower(host), port: port, ip: net.ParseIP(host),
		hosts: map[string]bool{}, origins: map[string]bool{}, originPaths: opts.OriginPaths,
		hostHint: opts.HostHint, originHint: opts.OriginHint, log: opts.Logger, tel: opts.Telemetry}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.answersFor = []string{net.JoinHostPort(host, port)}
	switch {
	case g.ip != nil && g.ip.IsLoopback():
		g.answersFor = append(g.answersFor, "localhost:"+port, "any loopback address on port "+port)
	case g.ip != nil && g.ip.IsUnspecified():
		g.answersFor = append(g.answersFor, "localhost:"+port, "any IP address on port "+port)
	}
	for _, o := range opts.PublicOrigins {
		norm, err := NormalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("cannot guard the listener: public origin: %w", err)
		}
		g.origins[norm] = true
		u, _ := url.Parse(norm)
		if u.Port() == "" {
			g.hosts[u.Host] = true
			g.hosts[net.JoinHostPort(u.Hostname(), defaultPort(u.Scheme))] = true
		} else {
			g.hosts[u.Host] = true
		}
		if !slices.Contains(g.answersFor, u.Host) {
			g.answersFor = append(g.answersFor, u.Host)
		}
	}
	for _, o := range opts.AllowedOrigins {
		norm, err := NormalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("cannot guard the listener: allowed origin: %w", err)
		}
		g.origins[norm] = true
	}
	return g, nil
}

type guard struct {
	next        http.Handler
	addrHost    string // the listener's host as bound, lower case
	port        string
	ip          net.IP          // the listener's IP; nil when bound to a name
	hosts       map[string]bool // the public origins' Host values
	origins     map[string]bool // public and allowed origins, normalized
	originPaths []string
	answersFor  []string // for the refusal
	hostHint    string
	originHint  string
	log         *slog.Logger
	tel         *ops.Recorder
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostOK(r.Host) {
		g.tel.Refusal("misdirected_host")
		g.log.Warn("request refused", "remote", r.RemoteAddr, "method", r.Method, "path", wire.Truncate(r.URL.Path), "host", wire.Truncate(r.Host),
			"status", http.StatusMisdirectedRequest, "reason", "Host names another server (DNS rebinding?)")
		refuseText(w, http.StatusMisdirectedRequest, fmt.Sprintf("misdirected request: this server does not answer for Host %s (a defence against DNS rebinding); it answers for %s",
			wire.Clip(r.Host), strings.Join(g.answersFor, ", ")), g.hostHint)
		return
	}
	origins := r.Header.Values("Origin")
	var origin string
	if len(origins) > 0 {
		origin = origins[0]
	}
	if len(origins) > 0 && (slices.Contains(g.originPaths, r.URL.Path) || isWebSocketUpgrade(r)) {
		if len(origins) > 1 || !g.originOK(origin) {
			g.tel.Refusal("foreign_origin")
			g.log.Warn("request refused", "remote", r.RemoteAddr, "method", r.Method, "path", wire.Truncate(r.URL.Path), "origin", wire.Truncate(strings.Join(origins, ", ")),
				"status", http.StatusForbidden, "reason", "Origin is not this server's nor an allowed one")
			refuseText(w, http.StatusForbidden, fmt.Sprintf("forbidden: requests from pages of origin %s are refused here (cross-origin protection); this server's origin is http://%s",
				wire.Clip(strings.Join(origins, ", ")), g.answersFor[0]), g.originHint)
			return
		}
	}
	if origin == "" {
		// Nothing to pass on: the request goes on as it came, not copied.
		g.next.ServeHTTP(w, r)
		return
	}
	g.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), guardKey{}, origin)))
}

func refuseText(w http.ResponseWriter, status int, msg, hint string) {
	if hint != "" {
		msg += "\n" + hint
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, status)
}

// hostOK reports whether a request's Host names this server.
func (g *guard) hostOK(host string) bool {
	host = strings.ToLower(host)
	return g.hosts[host] || g.listenerHost(host)
}

// listenerHost reports whether host[:port] names the listener (see
// NewGuard); without a port it is 80, as in an http URL.
func (g *guard) listenerHost(hostport string) bool {
	name, port, err := net.SplitHostPort(hostport)
	if err != nil {
		name, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), defaultPort("http")
	}
	if port != g.port || name == "" {
		return false
	}
	if name == g.addrHost {
		return true
	}
	ip := net.ParseIP(name)
	switch {
	case g.ip == nil:
		return false
	case g.ip.IsLoopback():
		return name == "localhost" || ip != nil && ip.IsLoopback()
	case g.ip.IsUnspecified():
		return name == "localhost" || ip != nil
	}
	return false
}

// originOK reports whether an Origin (RFC 6454 §7) is the listener's own
// (over http), a public origin or an allowed one. "null" and anything
// that is not a serialized http(s) origin are refused.
func (g *guard) originOK(origin string) bool {
	norm, err := NormalizeOrigin(origin)
	if err != nil || strings.HasSuffix(origin, "/") {
		return false
	}
	if g.origins[norm] {
		return true
	}
	hostport, ok := strings.CutPrefix(norm, "http://")
	return ok && g.listenerHost(hostport)
}

func isWebSocketUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// NormalizeOrigin checks that raw is an http or https origin
// (scheme://host[:port], RFC 6454 §6.2; a trailing "/" is tolerated) and
// returns it in lower case without a default port.
func NormalizeOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return "", fmt.Errorf("%s is not an origin: want http(s)://HOST[:PORT] without path, query or fragment", wire.Clip(raw))
	}
	scheme, name, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == defaultPort(scheme) {
		port = ""
	}
	host := name
	if port != "" {
		host = net.JoinHostPort(name, port)
	} else if strings.Contains(name, ":") {
		host = "[" + name + "]"
	}
	return scheme + "://" + host, nil
}
