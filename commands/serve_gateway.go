package commands

import (
	"log/slog"
	"net/http"
	"net/url"
	"reflect"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// backendFlag puts --backend into the config's backends: one backend,
// mounted at the resource's path.
func backendFlag(cfg *host.Config, flag string) error {
	if flag == "" {
		return nil
	}
	if len(cfg.Backends) > 0 {
		return usageErrorf("--backend and the config's backends both name backends; keep one")
	}
	b, err := gateway.ParseFlag(flag)
	if err != nil {
		return usageErrorf("%v", err)
	}
	cfg.Backends = []gateway.Backend{b}
	return nil
}

// gatewayChanged reports whether a reloaded config changes the gateway,
// which serve builds once at start. --backend is not in the file: a
// reloaded config without backends keeps the flag's.
func gatewayChanged(cfg, running *host.Config, backendFlag string) bool {
	backends := cfg.Backends
	if backendFlag != "" {
		backends = running.Backends
	}
	return !reflect.DeepEqual(backends, running.Backends) || !reflect.DeepEqual(cfg.GatewayPolicy(), running.GatewayPolicy())
}

// newGateway is serve's gateway in front of the config's backends, or nil
// when it has none. The first backend takes the resource's path (/mcp).
func newGateway(cfg *host.Config, brk *broker.Broker, logger *slog.Logger) (*gateway.Gateway, error) {
	if len(cfg.Backends) == 0 {
		return nil, nil
	}
	backends := append([]gateway.Backend(nil), cfg.Backends...)
	if u, err := url.Parse(cfg.Resource); err == nil && backends[0].Path == "" {
		backends[0].Path = u.Path
	}
	opts := gateway.Options{Backends: backends, Policy: cfg.GatewayPolicy(), Log: logger}
	if brk != nil {
		opts.Broker = brk
	}
	return gateway.New(opts)
}

// mountGateway serves each backend at its path behind the host's token
// checks (resource.RequireBearerToken with h.VerifyBearer: Bearer or
// DPoP, the resource's audience, 401 with the RFC 9728 challenge). The
// backends share serve's resource: one served at another path than the
// resource's is still that resource (its tokens, its RFC 9728 document).
func mountGateway(mux *http.ServeMux, gw *gateway.Gateway, h *host.Host) {
	protect := resource.RequireBearerToken(h.VerifyBearer, &resource.BearerOptions{
		ResourceMetadataURL: h.ResourceMetadataURL(), Resource: h.Resource(), MaxBody: wire.DefaultMaxMessageSize})
	for _, m := range gw.Mounts() {
		m.SetResourceMetadata(h.ResourceMetadataURL())
		serve := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.Serve(w, r, grantCaller{resource.GrantFromContext(r.Context())})
		}))
		mux.Handle(m.Path(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodOptions {
				resource.Preflight(w, "GET, POST, DELETE")
				return
			}
			serve.ServeHTTP(w, r)
		}))
	}
}

// gatewayPaths are the backends' paths, where the guard vets Origin as on
// the resource's own.
func gatewayPaths(gw *gateway.Gateway) []string {
	var paths []string
	for _, m := range gw.Mounts() {
		paths = append(paths, m.Path())
	}
	return paths
}

// grantCaller is the gateway's view of a grant.
type grantCaller struct{ g *resource.Grant }

func (c grantCaller) Subject() string  { return c.g.Subject }
func (c grantCaller) ClientID() string { return c.g.ClientID }
func (c grantCaller) Scopes() []string { return c.g.Scopes }
