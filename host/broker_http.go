package host

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// BrokerHandler serves the broker's routes that need the caller's serve
// token (RFC 6750 §2.1, Authorization header only):
//   - GET /auth-status?session=SID[&upstream=ID]: the session's upstream
//     sign-ins, to that session's own caller only (403 for another's);
//   - POST /auth/logout[?upstream=ID]: sign the caller's session out of
//     that upstream, or of every one (revoking at them, see
//     revokeOnLogout);
//   - POST /tools/{name}: the plain HTTP face for agents that speak no
//     MCP (seed 004): the JSON body is the tool's arguments, the answer
//     its result; an upstream sign-in that is missing is 401 with a JSON
//     body naming auth_url.
func (h *Host) BrokerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth-status", h.serveAuthStatus)
	mux.HandleFunc("POST /auth/logout", h.serveLogout)
	mux.HandleFunc("POST /tools/{name}", h.serveTool)
	return mux
}

// bearerGrant validates the request's bearer token, or answers the RFC
// 6750 §3 refusal and returns nil.
func (h *Host) bearerGrant(w http.ResponseWriter, r *http.Request) *Grant {
	values := r.Header.Values("Authorization")
	token := ""
	if len(values) == 1 {
		if scheme, rest, ok := strings.Cut(values[0], " "); ok && strings.EqualFold(scheme, "Bearer") {
			token = strings.TrimLeft(rest, " ")
		}
	}
	if token != "" && !resource.IsB64Token(token) || len(values) > 1 {
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(map[string]string{"resource_metadata": h.ResourceMetadataURL(),
			"error": wire.ErrInvalidRequest, "error_description": "Send one Authorization: Bearer header (RFC 6750 section 2.1)"}))
		resource.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": wire.ErrInvalidRequest, "error_description": "send one Authorization: Bearer header"})
		return nil
	}
	g, ch, err := h.ValidateBearer(r.Context(), token)
	switch {
	case err != nil:
		resource.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable", "error_description": "cannot validate the token now; try again later"})
		return nil
	case ch != nil:
		params := map[string]string{"resource_metadata": h.ResourceMetadataURL(), "scope": ch.Scope}
		body := map[string]string{"error": "unauthorized", "error_description": "send a serve access token in Authorization: Bearer"}
		if token != "" {
			params["error"], params["error_description"] = ch.Error, ch.ErrorDescription
			body = map[string]string{"error": ch.Error, "error_description": ch.ErrorDescription}
		}
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(params))
		resource.WriteJSON(w, http.StatusUnauthorized, body)
		return nil
	case g.JKT != "":
		resource.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": wire.ErrInvalidRequest,
			"error_description": "a DPoP-bound token is not accepted here; use the MCP endpoint " + h.cfg.Resource})
		return nil
	}
	return g
}

// brokerGrant is bearerGrant for the routes about upstreams: 404 on a
// serve without upstreams.
func (h *Host) brokerGrant(w http.ResponseWriter, r *http.Request) *Grant {
	g := h.bearerGrant(w, r)
	if g != nil && h.broker == nil {
		resource.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "error_description": "this server has no upstreams"})
		return nil
	}
	return g
}

func (h *Host) serveAuthStatus(w http.ResponseWriter, r *http.Request) {
	g := h.brokerGrant(w, r)
	if g == nil {
		return
	}
	sid := h.sessionOf(g)
	q := r.URL.Query()
	if s := q.Get("session"); s != "" && s != sid {
		resource.WriteJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden", "error_description": "this is not your session: omit session= to see your own"})
		return
	}
	type status struct {
		Upstream      string     `json:"upstream"`
		Label         string     `json:"label,omitempty"`
		Host          string     `json:"host,omitempty"`
		Authenticated bool       `json:"authenticated"`
		ExpiresAt     *time.Time `json:"expiresAt"`
	}
	one := func(id string) (status, error) {
		ok, exp, err := h.broker.Status(r.Context(), sid, id)
		st := status{Upstream: id, Authenticated: ok}
		if ok && !exp.IsZero() {
			exp = exp.UTC().Truncate(time.Second)
			st.ExpiresAt = &exp
		}
		return st, err
	}
	if id := q.Get("upstream"); id != "" {
		if h.broker.Upstream(id) == nil {
			resource.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "error_description": "no such upstream"})
			return
		}
		st, err := one(id)
		if err != nil {
			h.log.Error("auth-status failed", "err", err)
			resource.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable"})
			return
		}
		answer := map[string]any{"session": sid, "upstream": id, "authenticated": st.Authenticated, "expiresAt": st.ExpiresAt}
		if why := h.broker.Failed(sid, id); why != "" && !st.Authenticated {
			// The last sign-in failed: a polling client stops and says so.
			answer["error"] = why
		}
		resource.WriteJSON(w, http.StatusOK, answer)
		return
	}
	all := []status{}
	for _, u := range h.broker.Upstreams() {
		st, err := one(u.ID)
		if err != nil {
			h.log.Error("auth-status failed", "err", err)
			resource.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable"})
			return
		}
		st.Label, st.Host = u.Label, u.Host()
		all = append(all, st)
	}
	resource.WriteJSON(w, http.StatusOK, map[string]any{"session": sid, "upstreams": all})
}

func (h *Host) serveLogout(w http.ResponseWriter, r *http.Request) {
	g := h.brokerGrant(w, r)
	if g == nil {
		return
	}
	id := r.URL.Query().Get("upstream")
	if id != "" && h.broker.Upstream(id) == nil {
		resource.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "error_description": "no such upstream: omit upstream= to sign out of every one"})
		return
	}
	h.logoutUpstreams(r.Context(), g, id)
	resource.WriteJSON(w, http.StatusOK, map[string]any{"session": h.sessionOf(g), "signedOut": true})
}

// serveTool runs one tool for a plain HTTP caller.
func (h *Host) serveTool(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		resource.WriteJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "invalid_request", "error_description": "send the tool's arguments as a JSON object with Content-Type: application/json"})
		return
	}
	g := h.bearerGrant(w, r)
	if g == nil {
		return
	}
	limit := h.maxMsg
	if limit <= 0 {
		limit = wire.DefaultMaxMessageSize
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var args map[string]json.RawMessage
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		err = json.Unmarshal(body, &args)
	}
	if err != nil {
		resource.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "the body must be a JSON object of the tool's arguments"})
		return
	}
	params, _ := json.Marshal(map[string]any{"name": r.PathValue("name"), "arguments": args})
	m := &wire.Message{JSONRPC: wire.Version, ID: wire.StringID("http"), Method: "tools/call", Params: params}
	result, rerr := mcpserver.CallTool(r.Context(), h, m, g)
	if rerr == nil {
		resource.WriteJSON(w, http.StatusOK, result)
		return
	}
	if rerr.Code == codeURLElicitationRequired {
		h.writeSignInNeeded(w, g, rerr)
		return
	}
	status := http.StatusBadRequest
	switch rerr.Code {
	case wire.CodeAuthRequired:
		status = http.StatusForbidden
	case wire.CodeInternalError:
		status = http.StatusInternalServerError
	}
	resource.WriteJSON(w, status, map[string]any{"error": "tool_error", "code": rerr.Code, "error_description": rerr.Message})
}

// writeSignInNeeded answers 401 with the contract's JSON body: the serve
// token is fine, the upstream sign-in is missing (no WWW-Authenticate:
// another token for serve would not help).
func (h *Host) writeSignInNeeded(w http.ResponseWriter, g *Grant, rerr *wire.Error) {
	var d struct {
		Elicitations []struct {
			ElicitationID string `json:"elicitationId"`
			URL           string `json:"url"`
			Message       string `json:"message"`
			Meta          struct {
				Upstream   map[string]string `json:"io.agentauth/upstream"`
				AuthStatus string            `json:"io.agentauth/authStatus"`
			} `json:"_meta"`
		} `json:"elicitations"`
	}
	if json.Unmarshal(rerr.Data, &d) != nil || len(d.Elicitations) == 0 {
		resource.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	e := d.Elicitations[0]
	label := e.Meta.Upstream["label"]
	resource.WriteJSON(w, http.StatusUnauthorized, map[string]any{
		"error": "authentication_required", "auth_url": e.URL, "elicitation_id": e.ElicitationID, "upstream": e.Meta.Upstream,
		"session": h.sessionOf(g), "auth_status": e.Meta.AuthStatus, "message": e.Message,
		"instructions": []string{"Open auth_url in a browser and sign in to " + label, "Poll auth_status until authenticated is true", "Retry this request"},
	})
}
