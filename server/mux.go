package server

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
)

// newServeMux mounts serve's faces on one mux: the WebSocket upgrade on /
// and /ws (unless the session is on stdio), the embedded issuer's
// endpoints, and the host's HTTP face (RFC 9728 metadata, POST to the
// resource's path) as the catch-all, with the RFC 9728 documents of the
// schemes' own resources beside it, and the broker's routes. version is
// the landing page's.
func newServeMux(version string, h *host.Host, iss *issuer.Issuer, brk *broker.Broker, st state.Store, gw *gateway.Gateway, connectionToken string, websocket bool) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	var ws http.Handler
	if websocket {
		ws = h.WebSocketHandler(connectionToken)
		mux.Handle("GET /ws", ws)
	}
	opsRoutes(mux, version, h, iss, st, gw, ws)
	if iss != nil {
		u, _ := url.Parse(h.Resource())
		for _, p := range iss.Paths() {
			if u.Path == p {
				return nil, fmt.Errorf("cannot serve the resource %s: the embedded issuer uses the path %s", h.Resource(), p)
			}
			mux.Handle(p, iss.Handler())
		}
	}
	if brk != nil {
		mux.Handle("GET /auth/start", brk.Handler())
		mux.Handle("POST /auth/start", brk.Handler())
		mux.Handle("GET /callback", brk.Handler())
	}
	bh := h.BrokerHandler()
	mux.Handle("GET /auth-status", bh)
	mux.Handle("POST /auth/logout", bh)
	mux.Handle("POST /tools/{name}", bh)
	face := h.HTTPHandler()
	mux.Handle("/", face)
	// Each scheme's own resource has its RFC 9728 document (§3.1); the
	// bare prefix stays the face's (no redirect to the subtree).
	mux.Handle(host.WellKnownResourceMetadata, face)
	mux.Handle(host.WellKnownResourceMetadata+"/", h.SchemeMetadataHandler(face))
	return mux, nil
}

// guardOptions say whom serve's listener answers (host.NewGuard): its
// address, the resource identifier's origin and --public-origin as Host;
// those and --allowed-origin as Origin on the resource's path (/mcp) and
// WebSocket upgrades.
func guardOptions(opts *Options, addr, resource string, logger *slog.Logger) host.GuardOptions {
	u, _ := url.Parse(resource) // checked by host.New
	public := append([]string{u.Scheme + "://" + u.Host}, opts.PublicOrigins...)
	return host.GuardOptions{Addr: addr, PublicOrigins: public, AllowedOrigins: opts.AllowedOrigins, OriginPaths: []string{cmp.Or(u.Path, "/")},
		HostHint:   "To reach serve under another name (behind a reverse proxy, say), start it with --public-origin https://NAME",
		OriginHint: "To let web pages of that origin call it, start serve with --allowed-origin ORIGIN",
		Logger:     logger}
}
