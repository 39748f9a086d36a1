package server

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/ops"
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
		return usagef("--backend and the config's backends both name backends; keep one")
	}
	b, err := gateway.ParseFlag(flag)
	if err != nil {
		return usagef("%v", err)
	}
	cfg.Backends = []gateway.Backend{b}
	return nil
}

// gatewayChanged reports whether a reloaded config changes the gateway,
// which serve builds once at start.
func gatewayChanged(cfg, running *host.Config) bool {
	return !reflect.DeepEqual(cfg.Backends, running.Backends) || !reflect.DeepEqual(cfg.GatewayPolicy(), running.GatewayPolicy())
}

// newGateway is serve's gateway in front of the config's backends, or nil
// when it has none. Unless a backend names its path, the first takes the
// resource's (/mcp) and each other RESOURCE-PATH/NAME (/mcp/NAME).
func newGateway(cfg *host.Config, brk *broker.Broker, iss *issuer.Issuer, logger, callLog *slog.Logger, tel *ops.Recorder) (*gateway.Gateway, error) {
	if len(cfg.Backends) == 0 {
		return nil, nil
	}
	backends := append([]gateway.Backend(nil), cfg.Backends...)
	u, err := url.Parse(cfg.Resource)
	if err != nil {
		return nil, err
	}
	for i := range backends {
		switch {
		case backends[i].Path != "":
		case i == 0:
			backends[i].Path = cmp.Or(u.Path, "/")
		default:
			backends[i].Path = strings.TrimSuffix(u.Path, "/") + "/" + backends[i].Name
		}
		if x := backends[i].TokenExchange; x != nil && x.Issuer == "" {
			res := cfg.Resource
			if backends[i].Path != u.Path {
				res = u.Scheme + "://" + u.Host + backends[i].Path
			}
			issuer, err := exchangeIssuer(cfg, res, iss)
			if err != nil {
				return nil, fmt.Errorf("backends[%d].tokenExchange.issuer: %w", i, err)
			}
			xc := *x
			xc.Issuer = issuer
			backends[i].TokenExchange = &xc
		}
	}
	opts := gateway.Options{Backends: backends, Policy: cfg.GatewayPolicy(), Limits: cfg.GatewayLimits, Log: logger, CallLog: callLog, Telemetry: tel,
		CheckRequest: mcpserver.CheckRequest}
	if brk != nil {
		opts.Broker = brk
	}
	if iss != nil {
		opts.Assert = iss.Assertion
	}
	return gateway.New(opts)
}

// exchangeIssuer is the default authorization server of a backend's
// token exchange: the one authorization server of the schemes whose
// resource is the backend's (its callers' tokens come from it), unless
// that is serve's embedded issuer, which has no token exchange grant.
func exchangeIssuer(cfg *host.Config, res string, iss *issuer.Issuer) (string, error) {
	var found []string
	for _, s := range cfg.Schemes {
		if s.Resource != res {
			continue
		}
		for _, as := range s.AuthorizationServers {
			if !slices.Contains(found, as) {
				found = append(found, as)
			}
		}
	}
	switch {
	case len(found) != 1:
		return "", fmt.Errorf("the schemes of %s name %d authorization servers; name the one that exchanges the callers' tokens", res, len(found))
	case iss != nil && strings.TrimSuffix(found[0], "/") == strings.TrimSuffix(iss.Origin(), "/"):
		return "", fmt.Errorf("the callers of %s log in at serve's embedded issuer, which does not exchange tokens; give the backend \"identity\": %q instead", res, gateway.IdentityAssertion)
	}
	return found[0], nil
}

// mountGateway serves each backend at its path behind the host's token
// checks (resource.RequireBearerToken: Bearer or DPoP, 401 with the RFC
// 9728 challenge). The backend at the resource's path is that resource
// (h.VerifyBearer); one at another path is a resource of its own,
// ORIGIN+PATH, whose tokens and RFC 9728 document are those of the
// schemes with that resource (a scheme with the backend's name gets it by
// default: RESOURCE/NAME), and serve refuses to start without one.
func mountGateway(mux *http.ServeMux, gw *gateway.Gateway, h *host.Host, guard *host.GuardOptions) (http.Handler, error) {
	if gw == nil {
		return mux, nil
	}
	u, err := url.Parse(h.Resource())
	if err != nil {
		return nil, err
	}
	routes := gatewayRoutes{exact: map[string]http.Handler{}, mux: mux}
	for _, m := range gw.Mounts() {
		res, verify := h.Resource(), h.VerifyBearer
		if m.Path() != u.Path {
			res = u.Scheme + "://" + u.Host + m.Path()
			if !h.HasResource(res) {
				return nil, fmt.Errorf("cannot serve backend %s at %s: no scheme has the resource %s\nAdd a scheme with the id %q (its resource is then %s/%s) or give one \"resource\": %q",
					m.Name(), m.Path(), res, path.Base(m.Path()), h.Resource(), path.Base(m.Path()), res)
			}
			verify = h.VerifierAt(res)
		}
		metadata := resource.MetadataURL(res)
		m.SetResourceMetadata(metadata)
		serve := resource.RequireBearerToken(verify, &resource.BearerOptions{
			ResourceMetadataURL: metadata, Resource: res, MaxBody: wire.DefaultMaxMessageSize,
		})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.Serve(w, r, grantCaller{resource.GrantFromContext(r.Context())})
		}))
		// The guard vets Origin on the backend's path as on the resource's.
		guard.OriginPaths = append(guard.OriginPaths, m.Path())
		mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A page of an origin the guard let through reads the answer,
			// the session the gateway minted and a challenge (CORS).
			if origin, ok := host.GuardedOrigin(r.Context()); ok {
				resource.AllowOrigin(w, origin, "WWW-Authenticate, Mcp-Session-Id")
			}
			if r.Method == http.MethodOptions {
				resource.Preflight(w, r, "GET, POST, DELETE")
				return
			}
			serve.ServeHTTP(w, r)
		})
		mux.Handle(m.Path(), mounted)
		routes.exact[m.Path()] = mounted
	}
	return routes, nil
}

// gatewayRoutes finds a gateway mount by its exact path with one map read
// before the mux: a forwarded call is the request serve answers most, and
// the mux's search (its path cleaning and pattern tree) was about 1 % of
// serve's CPU per call. Any other path, and CONNECT, which the mux treats
// apart, go to the mux, where each mount is registered too.
type gatewayRoutes struct {
	exact map[string]http.Handler
	mux   *http.ServeMux
}

func (g gatewayRoutes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := g.exact[r.URL.Path]; ok && r.Method != http.MethodConnect {
		r.Pattern = r.URL.Path // the mount's pattern, as the mux would set it
		h.ServeHTTP(w, r)
		return
	}
	g.mux.ServeHTTP(w, r)
}

// grantCaller is the gateway's view of a grant.
type grantCaller struct{ g *resource.Grant }

func (c grantCaller) Subject() string  { return c.g.Subject }
func (c grantCaller) ClientID() string { return c.g.ClientID }
func (c grantCaller) Scopes() []string { return c.g.Scopes }
func (c grantCaller) Issuer() string   { return c.g.Issuer }

// Expiry bounds how long the gateway keeps a token exchanged for this
// caller's (gateway identity "exchange").
func (c grantCaller) Expiry() time.Time { return c.g.Expiry }
