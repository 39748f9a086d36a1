package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/wire"
)

// inputSignIn is the input request key of an upstream sign-in (MCP
// 2026-07-28 "Multi Round-Trip"); the same key serve's own tools use.
const inputSignIn = "signin"

// SetResourceMetadata sets the RFC 9728 document URL that challenges
// name (RFC 9728 §5.1).
func (m *Mount) SetResourceMetadata(u string) { m.metadataURL = u }

// check applies the policy to a request before it is forwarded: for
// tools/call a name the backend listed (names.go), the scopes (403 insufficient_scope, RFC 6750 §3.1), the
// upstream sign-ins (asked for by URL elicitation) and the arguments
// (-32602). It returns the message to forward, or false when it answered.
func (k *call) check(w http.ResponseWriter, r *http.Request, cn conn, out http.Header, raw []byte) ([]byte, bool) {
	if k.msg.Method != methodToolsCall {
		return raw, true
	}
	m := k.m
	p, problem := readToolsCall(k.msg.Params)
	if problem != "" {
		k.refuse(w, k.status(http.StatusBadRequest), wire.Errorf(wire.CodeInvalidParams, "invalid params: %s", problem), "malformed tools/call")
		return nil, false
	}
	k.tool = p.Name
	if !k.listedTool(w, r, cn, out, p.Name) {
		return nil, false
	}
	if need := m.g.policy.scopesFor(m.b.Name, p.Name); len(need) > 0 {
		var missing []string
		have := k.c.Scopes()
		for _, s := range need {
			if !slices.Contains(have, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			desc := fmt.Sprintf("tool %s needs scope %s", p.Name, wire.JoinScope(need))
			w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(map[string]string{
				"error": wire.ErrInsufficientScope, "error_description": desc,
				"scope": wire.JoinScope(need), "resource_metadata": m.metadataURL}))
			k.refuse(w, http.StatusForbidden, wire.Errorf(wire.CodeInvalidRequest, "insufficient scope: %s; sign in again with it", desc), "insufficient_scope "+wire.JoinScope(missing))
			return nil, false
		}
	}
	ups := slices.Clone(m.g.policy.upstreamsFor(m.b.Name, p.Name))
	if m.b.Upstream != "" && !slices.Contains(ups, m.b.Upstream) {
		ups = append(ups, m.b.Upstream)
	}
	if len(ups) > 0 && !k.signedIn(w, r, ups, p) {
		return nil, false
	}
	if len(p.InputResponses) > 0 && p.InputResponses[inputSignIn] != nil {
		// The answer to the gateway's own sign-in ask: not the backend's.
		raw = withoutInputResponse(k.msg, inputSignIn)
	}
	if rerr := m.validate(p); rerr != nil {
		k.refuse(w, k.status(http.StatusBadRequest), rerr, "invalid arguments")
		return nil, false
	}
	return raw, true
}

// status is an error's HTTP status: MCP 2026-07-28 maps invalid params to
// 400; before, JSON-RPC errors travel in a 200.
func (k *call) status(stateless int) int {
	if k.stateless {
		return stateless
	}
	return http.StatusOK
}

// signedIn checks that the caller's broker session holds a token of every
// upstream; for the first it lacks it asks for the sign-in (MCP 2025-11-25:
// -32042 URLElicitationRequiredError; MCP 2026-07-28: an input_required
// result with a URL elicitation) and reports false.
func (k *call) signedIn(w http.ResponseWriter, r *http.Request, ups []string, p toolsCallParams) bool {
	b := k.m.g.broker
	if b == nil {
		k.refuse(w, k.status(http.StatusInternalServerError), wire.Errorf(wire.CodeInternalError, "internal error: tool %s needs an upstream sign-in but serve has no broker", p.Name), "no broker")
		return false
	}
	sid := b.Session(k.c.Subject(), k.c.ClientID())
	for _, u := range ups {
		_, err := b.Token(r.Context(), sid, u)
		if err == nil {
			continue
		}
		if !errors.Is(err, broker.ErrSignInNeeded) {
			k.m.g.log.Error("upstream token unavailable", "backend", k.m.b.Name, "upstream", u, "err", err)
			k.refuse(w, k.status(http.StatusInternalServerError), wire.Errorf(wire.CodeInternalError, "internal error: cannot get the %s token now; try again later", u), "upstream token unavailable")
			return false
		}
		if k.stateless {
			if action := elicitAction(p.InputResponses[inputSignIn]); action == "decline" || action == "cancel" {
				k.decision, k.reason = "denied", "upstream sign-in refused by the user"
				writeJSON(w, http.StatusOK, mustResult(k.msg.ID, map[string]any{"resultType": "complete",
					"content": []map[string]string{{"type": "text", "text": fmt.Sprintf("The sign-in to %s was refused; call the tool again to sign in.", u)}}, "isError": true}))
				k.audit()
				return false
			}
			if !urlElicitationDeclared(k.msg.Params) {
				k.refuse(w, http.StatusBadRequest, wire.Errorf(codeMissingClientCapability,
					`missing required client capability: tool %s may need to send the user to a sign-in page; declare {"elicitation": {"url": {}}} in _meta io.modelcontextprotocol/clientCapabilities`, p.Name).
					WithData(map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}}), "no url elicitation")
				return false
			}
		}
		a, err := b.Ask(r.Context(), broker.Principal{Issuer: k.c.Issuer(), Subject: k.c.Subject(), ClientID: k.c.ClientID()}, u)
		if err != nil {
			rerr := wire.Errorf(wire.CodeInternalError, "internal error: cannot start the sign-in now; try again later")
			if errors.Is(err, broker.ErrTooManyPending) {
				rerr = wire.Errorf(wire.CodeInvalidRequest, "invalid request: %v", err)
			}
			k.refuse(w, k.status(http.StatusServiceUnavailable), rerr, "sign-in unavailable")
			return false
		}
		k.decision, k.reason = "denied", "upstream sign-in needed: "+u
		el := map[string]any{"mode": "url", "elicitationId": a.ElicitationID, "url": a.URL, "message": a.Message,
			"_meta": map[string]any{"io.agentauth/upstream": map[string]string{"id": a.Upstream.ID, "label": a.Upstream.Label, "host": a.Upstream.Host()},
				"io.agentauth/authStatus": a.AuthStatus}}
		if k.stateless {
			writeJSON(w, http.StatusOK, mustResult(k.msg.ID, map[string]any{"resultType": "input_required",
				"inputRequests": map[string]any{inputSignIn: map[string]any{"method": "elicitation/create", "params": el}}}))
		} else {
			rerr := wire.Errorf(codeURLElicitationRequired, "%s: open the URL to sign in", a.Message).WithData(map[string]any{"elicitations": []any{el}})
			k.errCode = rerr.Code
			writeJSON(w, http.StatusOK, mustEncode(wire.NewErrorResponse(k.msg.ID, rerr)))
		}
		k.audit()
		return false
	}
	return true
}

func elicitAction(raw json.RawMessage) string {
	var r struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r.Action
}

// urlElicitationDeclared reports whether an MCP 2026-07-28 request's
// client capabilities include elicitation's url mode.
func urlElicitationDeclared(params json.RawMessage) bool {
	var p struct {
		Meta struct {
			Caps struct {
				Elicitation map[string]json.RawMessage `json:"elicitation"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	return json.Unmarshal(params, &p) == nil && p.Meta.Caps.Elicitation["url"] != nil
}

// withoutInputResponse re-encodes a request without one input response.
func withoutInputResponse(msg *wire.Message, key string) []byte {
	var params map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &params) != nil {
		b, _ := json.Marshal(msg)
		return b
	}
	var ir map[string]json.RawMessage
	_ = json.Unmarshal(params["inputResponses"], &ir)
	delete(ir, key)
	if len(ir) == 0 {
		delete(params, "inputResponses")
	} else {
		params["inputResponses"], _ = json.Marshal(ir)
	}
	cp := *msg
	cp.Params, _ = json.Marshal(params)
	b, _ := json.Marshal(&cp)
	return b
}

// upstreamToken is the caller's token of the backend's upstream, or "".
func (m *Mount) upstreamToken(ctx context.Context, c Caller) string {
	b := m.g.broker
	if b == nil {
		return ""
	}
	tok, err := b.Token(ctx, b.Session(c.Subject(), c.ClientID()), m.b.Upstream)
	if err != nil {
		return ""
	}
	return tok
}

// filterTools removes from a tools/list result the tools the caller lacks
// a scope for; a result cached publicly (MCP 2026-07-28 cacheScope)
// becomes private when the list depends on the caller.
func (m *Mount) filterTools(result json.RawMessage, c Caller) (json.RawMessage, bool) {
	if len(m.g.policy.ToolScopes) == 0 {
		return nil, false
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return nil, false
	}
	var tools []json.RawMessage
	if json.Unmarshal(r["tools"], &tools) != nil {
		return nil, false
	}
	have := c.Scopes()
	kept := tools[:0:0]
	for _, t := range tools {
		var head struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &head)
		need := m.g.policy.scopesFor(m.b.Name, head.Name)
		if slices.ContainsFunc(need, func(s string) bool { return !slices.Contains(have, s) }) {
			continue
		}
		kept = append(kept, t)
	}
	r["tools"], _ = json.Marshal(kept)
	if _, ok := r["cacheScope"]; ok {
		r["cacheScope"] = json.RawMessage(`"private"`)
	}
	b, err := json.Marshal(r)
	return b, err == nil
}
