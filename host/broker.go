package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

// The broker hooks: serve signs each broker session (a serve token's
// subject and client id) in to upstream APIs and calls them as the user
// (package broker). Tools and gated methods that need an upstream ask the
// client to send the user to a sign-in URL, each protocol its own way
// (issue 15's contract).

// codeURLElicitationRequired is MCP 2025-11-25's URLElicitationRequiredError
// ("Elicitation", URL mode).
const codeURLElicitationRequired = -32042

// toolUpstreamCall calls an upstream's configured api as the user.
const toolUpstreamCall = "upstream_call"

// inputSignIn is the input request key of an upstream sign-in (MCP
// 2026-07-28 "Multi Round-Trip").
const inputSignIn = "signin"

// Bounds on an upstream API call.
const (
	maxUpstreamAnswer   = 64 << 10
	upstreamCallTimeout = 30 * time.Second
)

// metaUpstream and metaAuthStatus are the _meta keys of an ask.
const (
	metaUpstream   = "io.agentauth/upstream"
	metaAuthStatus = "io.agentauth/authStatus"
)

func (h *Host) useBroker(b *broker.Broker) {
	h.broker = b
	if b == nil {
		return
	}
	b.OnSignedIn(h.pushSignedIn)
}

// Tools are the MCP tools the broker adds (mcpserver.Backend): upstream_call
// when an upstream has an api.
func (h *Host) Tools() []mcpserver.Tool {
	if h.broker == nil {
		return nil
	}
	var ids []string
	for _, u := range h.broker.Upstreams() {
		if u.API != "" {
			ids = append(ids, u.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	enum, _ := json.Marshal(ids)
	return []mcpserver.Tool{{Name: toolUpstreamCall, Title: "Call an upstream API as the user",
		Description: "POSTs to the upstream's API with the user's upstream token (signing the user in first) and returns its answer.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"upstream":{"type":"string","enum":` + string(enum) + `}},"required":["upstream"],"additionalProperties":false}`),
		Annotations: map[string]bool{"openWorldHint": true}}}
}

// sessionOf is the broker session of a grant.
func (h *Host) sessionOf(g *Grant) string { return h.broker.Session(g.Subject, g.ClientID) }

// principalOf is who the broker session of a grant is: its sign-in links
// are bound to that user when serve's embedded issuer issued the grant.
func principalOf(g *Grant) broker.Principal {
	return broker.Principal{Issuer: g.Issuer, Subject: g.Subject, ClientID: g.ClientID}
}

// viewGrant is the grant a broker session is derived from: the first
// live one in config order.
func (h *Host) viewGrant(v authView) *Grant {
	for _, sc := range h.r().schemes {
		if g := v[sc.ID].grant; g != nil {
			return g
		}
	}
	return nil
}

// upstreamJSON is an upstream as the asks show it.
func upstreamJSON(u *broker.Upstream) map[string]string {
	return map[string]string{"id": u.ID, "label": u.Label, "host": u.Host()}
}

// askError is the MCP 2025-11-25 URLElicitationRequiredError of an ask.
func askError(a *broker.Ask) *wire.Error {
	return wire.Errorf(codeURLElicitationRequired, "%s: open the URL to sign in", a.Message).WithData(map[string]any{
		"elicitations": []map[string]any{askElicitation(a)}})
}

func askElicitation(a *broker.Ask) map[string]any {
	return map[string]any{"mode": "url", "elicitationId": a.ElicitationID, "url": a.URL, "message": a.Message,
		"_meta": map[string]any{metaUpstream: upstreamJSON(a.Upstream), metaAuthStatus: a.AuthStatus}}
}

// askFailed answers a failed Ask.
func askFailed(err error) *wire.Error {
	if errors.Is(err, broker.ErrTooManyPending) {
		return wire.Errorf(wire.CodeInvalidRequest, "invalid request: %v", err)
	}
	if errors.Is(err, broker.ErrUpstreamRefusesClient) {
		// The user could not sign in there: say why instead of a link.
		return wire.Errorf(wire.CodeInternalError, "cannot sign in to the upstream: %v", err)
	}
	return wire.Errorf(wire.CodeInternalError, "internal error: cannot start the sign-in now; try again later")
}

// callUpstream runs upstream_call for the grant g: the upstream's api
// with the session's upstream token, or the ask when it has none. On MCP
// 2026-07-28 a retry whose answer to the ask (responses[inputSignIn]) is
// decline or cancel ends with a tool error rather than asking again (MCP
// "Elicitation", Response Actions): a client that retries with each
// answer would otherwise be asked until it gives up.
func (h *Host) callUpstream(ctx context.Context, g *Grant, args, responses map[string]json.RawMessage, req mcpserver.Request) (map[string]any, *wire.Error) {
	id, ok := wire.JSONString(args["upstream"])
	u := h.broker.Upstream(id)
	if !ok || len(args) != 1 || u == nil || u.API == "" {
		var ids []string
		for _, u := range h.broker.Upstreams() {
			if u.API != "" {
				ids = append(ids, u.ID)
			}
		}
		return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: %s takes {"upstream": ID}, one of %s`, toolUpstreamCall, strings.Join(ids, ", "))
	}
	if req.Stateless {
		// URL mode is a submode the client declares (MCP "Elicitation",
		// Capabilities: {"elicitation": {}} alone means form only).
		var modes map[string]json.RawMessage
		if json.Unmarshal(req.Capabilities["elicitation"], &modes) != nil || modes["url"] == nil {
			return nil, wire.Errorf(mcpserver.CodeMissingClientCapability, `missing required client capability: this tool may need to send the user to a sign-in page; declare {"elicitation": {"url": {}}} in _meta %s`, wire.MetaClientCapabilities).
				WithData(map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}})
		}
	}
	sid := h.sessionOf(g)
	token, err := h.broker.Token(ctx, sid, u.ID)
	if err == nil {
		result, rerr, rejected := h.postUpstream(ctx, u, token)
		if !rejected {
			return result, rerr
		}
		// The upstream no longer takes the token (revoked there, say):
		// forget it and have the user sign in again.
		h.log.Info("upstream refused the session's token; asking for a new sign-in", "upstream", u.ID)
		if err = h.broker.Logout(ctx, sid, u.ID, false); err == nil {
			err = broker.ErrSignInNeeded
		}
	}
	if errors.Is(err, broker.ErrSignInNeeded) {
		if req.Stateless {
			action := elicitAction(responses[inputSignIn])
			if refused := refusedSignIn[action]; refused != "" {
				h.log.Info("upstream sign-in refused by the user", "upstream", u.ID, "action", action)
				return mcpserver.ToolText(fmt.Sprintf("You %s the sign-in to %s; call the tool again to sign in.", refused, u.Label), true), nil
			}
		}
		a, err := h.broker.Ask(ctx, principalOf(g), u.ID)
		if err != nil {
			return nil, askFailed(err)
		}
		h.log.Info("upstream sign-in needed", "upstream", u.ID, "elicitation", broker.LogID(a.ElicitationID))
		if req.Stateless {
			// MCP 2026-07-28: an input request of a URL elicitation; the
			// retry with its answer runs the tool again, or asks again.
			return map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
				inputSignIn: map[string]any{"method": "elicitation/create", "params": askElicitation(a)}}}, nil
		}
		return nil, askError(a)
	}
	h.log.Error("upstream token unavailable", "upstream", u.ID, "err", err)
	return nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot get the %s token now; try again later", u.Label)
}

// refusedSignIn words the elicitation actions that refuse a sign-in (MCP
// "Elicitation", Response Actions): decline is the user's explicit no,
// cancel a dismissal.
var refusedSignIn = map[string]string{"decline": "declined", "cancel": "dismissed"}

// elicitAction is the action of an elicitation/create result, or "".
func elicitAction(raw json.RawMessage) string {
	var r struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r.Action
}

// postUpstream POSTs {} to the upstream's api with its token and returns
// the answer as the tool's text; an answer that is not 2xx is a tool
// error (isError), except 401, which says the token was rejected.
func (h *Host) postUpstream(ctx context.Context, u *broker.Upstream, token string) (map[string]any, *wire.Error, bool) {
	ctx, cancel := context.WithTimeout(ctx, upstreamCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.API, bytes.NewReader([]byte("{}")))
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot call %s", u.Label), false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		h.log.Warn("upstream call failed", "upstream", u.ID, "err", err)
		return mcpserver.ToolText(fmt.Sprintf("%s cannot be reached now; try again later.", u.Label), true), nil, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamAnswer))
	body = bytes.ReplaceAll(body, []byte(token), []byte("[token]"))
	h.log.Info("upstream call", "upstream", u.ID, "status", resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, nil, true
	case resp.StatusCode/100 != 2:
		return mcpserver.ToolText(fmt.Sprintf("%s answered %s: %s", u.Label, resp.Status, bytes.TrimSpace(body)), true), nil, false
	}
	return mcpserver.ToolText(string(bytes.TrimSpace(body)), false), nil, false
}

// upstreamGate asks for the upstream sign-ins a gated method needs
// (methodUpstreams): -32007 (ACP: -32000) with the usual data plus the
// first missing upstream's ask.
func (h *Host) upstreamGate(ctx context.Context, method string, v authView) *wire.Error {
	need := h.r().cfg.MethodUpstreams[method]
	if len(need) == 0 || h.broker == nil {
		return nil
	}
	g := h.viewGrant(v)
	if g == nil {
		return nil // gate refused already
	}
	for _, id := range need {
		if h.broker.Upstream(id) == nil {
			continue // removed since the start; restart serve to add it back
		}
		if rerr := h.upstreamGateFor(ctx, g, id); rerr != nil {
			h.log.Info("auth decision", "method", method, "upstream", id, "outcome", "upstream sign-in needed")
			h.tel.Refusal("upstream_signin_needed")
			h.tel.Audit(ops.EventPolicyDenied, "method", method, "upstream", id, "reason", "upstream sign-in needed")
			return rerr
		}
	}
	return nil
}

// pushSignedIn tells every initialized connection of the session that the
// upstream sign-in completed: the design dialect's notify/authRequired
// "authenticated", the published dialect's auth/required, each with
// "upstream".
func (h *Host) pushSignedIn(sid, upstream string) {
	conns := h.connections()
	for _, s := range conns {
		s.mu.Lock()
		ok, d := s.initialized, s.dialect
		s.mu.Unlock()
		g := h.viewGrant(s.table().view(h.now()))
		if !ok || g == nil || h.sessionOf(g) != sid || d == wire.DialectACP {
			continue
		}
		var m *wire.Message
		var err error
		if d == wire.DialectPublished {
			m, err = wire.NewNotification(wire.MethodAuthRequired, map[string]any{"channel": wire.RootChannel, "reason": wire.StateAuthenticated, "upstream": upstream})
		} else {
			m, err = wire.NewNotification(wire.MethodNotifyAuthRequired, map[string]any{"resource": h.cfg.Resource, "state": wire.StateAuthenticated, "upstream": upstream})
		}
		if err == nil {
			s.notify(m)
		}
	}
}

// upstreamGateFor is upstreamGate for one upstream of a known session.
func (h *Host) upstreamGateFor(ctx context.Context, g *Grant, id string) *wire.Error {
	_, err := h.broker.Token(ctx, h.sessionOf(g), id)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, broker.ErrSignInNeeded):
		h.log.Error("upstream token unavailable", "upstream", id, "err", err)
		return wire.Errorf(wire.CodeInternalError, "internal error: cannot check the upstream sign-in now; try again later")
	}
	a, err := h.broker.Ask(ctx, principalOf(g), id)
	if err != nil {
		return askFailed(err)
	}
	return (&wire.Error{Code: wire.CodeAuthRequired, Message: "Authentication required: " + a.Message}).WithData(map[string]any{
		"challenges": []wire.Challenge{}, "upstream": upstreamJSON(a.Upstream), "url": a.URL, "elicitationId": a.ElicitationID,
		"authStatus": a.AuthStatus, "message": a.Message, "authMethods": []string{ACPUpstreamMethodPrefix + id}})
}

// logoutUpstreams signs the session of g out of the upstream only, or of
// every upstream when only is "", revoking its tokens at the upstreams
// unless revokeOnLogout is false.
func (h *Host) logoutUpstreams(ctx context.Context, g *Grant, only string) {
	if h.broker == nil || g == nil {
		return
	}
	h.signOut(ctx, h.sessionOf(g), only, h.r().cfg.RevokeOnLogout == nil || *h.r().cfg.RevokeOnLogout)
}

// EndSession is told that the broker session of subject's client clientID
// ended: the client's last grant at serve's embedded issuer was revoked,
// by the client (RFC 7009) or for a reused refresh token or a replayed
// code (issuer.OnSessionEnd). Unless revokeOnSessionEnd is false,
// the session is signed out of every upstream and its tokens revoked
// there; with false they are kept for the client's next sign-in to serve.
// Sessions of other authorization servers have no end serve can see:
// they end by logout.
func (h *Host) EndSession(ctx context.Context, subject, clientID string) {
	if h.broker == nil || h.r().cfg.RevokeOnSessionEnd != nil && !*h.r().cfg.RevokeOnSessionEnd {
		return
	}
	h.log.Info("broker session ended; signing it out of the upstreams")
	h.signOut(ctx, h.broker.Session(subject, clientID), "", true)
}

// signOut signs the session sid out of the upstream only ("": every one).
func (h *Host) signOut(ctx context.Context, sid, only string, revoke bool) {
	for _, u := range h.broker.Upstreams() {
		if only != "" && u.ID != only {
			continue
		}
		if err := h.broker.Logout(ctx, sid, u.ID, revoke); err != nil {
			h.log.Warn("upstream logout incomplete", "upstream", u.ID, "err", err)
		}
	}
}
