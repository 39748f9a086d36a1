package commands

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/host"
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

// mountGateway serves each backend at its path, behind the host's token
// check (h.ValidateBearer: the host's resource as audience). Only the
// backend at the resource's own path is served today: another path would
// be another resource, whose tokens the host does not accept.
func mountGateway(mux *http.ServeMux, gw *gateway.Gateway, h *host.Host) {
	for _, m := range gw.Mounts() {
		m.SetResourceMetadata(h.ResourceMetadataURL())
		mux.Handle(m.Path(), gatewayAuth(h, m))
	}
}

// grantCaller is the gateway's view of a host grant.
type grantCaller struct{ g *host.Grant }

func (c grantCaller) Subject() string  { return c.g.Subject }
func (c grantCaller) ClientID() string { return c.g.ClientID }
func (c grantCaller) Scopes() []string { return c.g.Scopes }

// gatewayAuth checks a request's bearer token (RFC 6750 §2.1, header
// only) and hands the grant to the backend's mount; otherwise it answers
// 401 with the RFC 9728 challenge (§5.1).
func gatewayAuth(h *host.Host, m *gateway.Mount) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := ""
		values := r.Header.Values("Authorization")
		if len(values) == 1 {
			if scheme, rest, ok := strings.Cut(values[0], " "); ok && strings.EqualFold(scheme, "Bearer") {
				token = strings.TrimSpace(rest)
			}
		}
		g, ch, err := h.ValidateBearer(r.Context(), token)
		switch {
		case err != nil:
			refuse(w, http.StatusServiceUnavailable, nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token now; try again later"))
			return
		case ch != nil:
			params := map[string]string{"resource_metadata": h.ResourceMetadataURL(), "scope": ch.Scope}
			if token != "" {
				params["error"], params["error_description"] = ch.Error, ch.ErrorDescription
			}
			refuse(w, http.StatusUnauthorized, params, wire.Errorf(wire.CodeInvalidRequest, "unauthorized: send a serve access token in Authorization: Bearer"))
			return
		case g.JKT != "":
			refuse(w, http.StatusBadRequest, nil, wire.Errorf(wire.CodeInvalidRequest, "invalid request: a DPoP-bound token is not accepted in front of a backend yet"))
			return
		}
		m.Serve(w, r, grantCaller{g})
	})
}

func refuse(w http.ResponseWriter, status int, challenge map[string]string, rerr *wire.Error) {
	if challenge != nil {
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(challenge))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := wire.NewErrorResponse(wire.ID{}, rerr).MarshalJSON()
	w.Write(b)
}
