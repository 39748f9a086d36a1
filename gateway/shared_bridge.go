package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// MCP 2026-07-28 callers (no session) of a shared process: input_required
// rounds and subscriptions/listen.

// removedStateless are methods MCP 2026-07-28 removed (initialize and ping
// with the handshake, logging/setLevel by per-request log levels,
// resources/(un)subscribe by subscriptions/listen, which a shared process
// of an older revision cannot serve).
var removedStateless = []string{wire.MethodInitialize, wire.MethodPing, "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// resume goes on with a parked call when the request is its caller's
// retry (params.requestState names it): the caller's input goes to the
// process as the answer to its request, and the process's frames follow.
// A requestState of serve's that names no parked call of the caller
// (tampered with, expired, another caller's, or from before a restart) is
// refused with -32602 (MCP 2026-07-28: state that fails verification is
// rejected); any other requestState is the process's own (its SDK's
// multi round-trip), forwarded.
func (c *sharedConn) resume(ctx context.Context, msg *wire.Message) (*reply, bool) {
	var params struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   string                     `json:"requestState"`
	}
	if json.Unmarshal(msg.Params, &params) != nil || !strings.HasPrefix(params.RequestState, statePrefix) {
		return nil, false
	}
	sb := c.sb
	sb.cmu.Lock()
	pc := sb.parked[params.RequestState]
	if pc != nil && pc.owner == c.owner {
		delete(sb.parked, params.RequestState)
	} else {
		pc = nil
	}
	sb.cmu.Unlock()
	if pc == nil {
		r := answered(wire.NewErrorResponse(msg.ID, wire.Errorf(wire.CodeInvalidParams, "invalid params: requestState is not a call waiting for this caller's input (it expired after %s, or serve restarted); call again without it", sb.m.timeout)))
		r.statusOf = statelessStatus
		return r, true
	}
	pc.timer.Stop()
	p, s := pc.p, pc.s
	p.mu.Lock()
	done := s.answered
	var next *parkedCall
	token := ""
	if !done && len(pc.queue) > 0 {
		// Another request of the process is waiting: the next round.
		token = newToken()
		next = &parkedCall{p: p, s: s, q: frameID(pc.queue[0]), owner: c.owner, queue: pc.queue[1:]}
		s.parked = token
	} else {
		s.parked = ""
	}
	s.owner, s.origID = c, json.RawMessage(msg.ID.String())
	p.mu.Unlock()
	if next != nil {
		sb.cmu.Lock()
		sb.parked[token] = next
		next.timer = time.AfterFunc(sb.m.timeout, func() { sb.expire(token) })
		sb.cmu.Unlock()
	}
	if !done {
		var qid wire.ID
		_ = json.Unmarshal(pc.q, &qid)
		if in := params.InputResponses[inputKey]; in != nil {
			p.write(mustEncode(&wire.Message{JSONRPC: wire.Version, ID: qid, Result: in}))
		} else {
			p.write(mustEncode(wire.NewErrorResponse(qid, wire.Errorf(wire.CodeInvalidRequest, "invalid request: the client's retry has no input response"))))
		}
	}
	if next != nil {
		r := answered(inputRequired(msg.ID, pc.queue[0], token))
		r.statusOf = statelessStatus
		return r, true
	}
	return c.replyFor(ctx, p, s, msg.ID), true
}

// bridge answers the MCP 2026-07-28 requests an older process has no
// method for: server/discover from the process's initialize result, and
// the removed methods with -32601; nil for the rest.
func (c *sharedConn) bridge(ctx context.Context, msg *wire.Message) *reply {
	var m *wire.Message
	switch {
	case msg.Method == "server/discover":
		sb := c.sb
		if _, err := sb.running(ctx); err != nil {
			return nil // the forwarded request fails the same way, naming the backend
		}
		sb.mu.Lock()
		result := map[string]any{"supportedVersions": append([]string{statelessVersion}, legacyVersions[:3]...),
			"capabilities": sb.init["capabilities"], "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
			"_meta": map[string]any{wire.MetaServerInfo: sb.init["serverInfo"]}}
		if in := sb.init["instructions"]; in != nil {
			result["instructions"] = in
		}
		sb.mu.Unlock()
		m, _ = wire.NewResult(msg.ID, result)
	case msg.Method == "subscriptions/listen":
		return c.subscriptionsListen(ctx, msg)
	case slices.Contains(removedStateless, msg.Method):
		m = wire.NewErrorResponse(msg.ID, wire.Errorf(wire.CodeMethodNotFound, "method not found: MCP %s has no %s, and backend %s (stdio) does not serve it to MCP %s; see server/discover", statelessVersion, msg.Method, c.sb.m.b.Name, statelessVersion))
	default:
		return nil
	}
	r := answered(m)
	r.statusOf = statelessStatus
	return r
}

// subscriptionsListen bridges an MCP 2026-07-28 subscriptions/listen:
// notifications/subscriptions/acknowledged first, then the list changes
// and resource updates it asked for (the process is subscribed to the
// resources), until the caller goes away.
func (c *sharedConn) subscriptionsListen(ctx context.Context, msg *wire.Message) *reply {
	var params struct {
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
			PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
			ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
			ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(msg.Params, &params)
	sb := c.sb
	p, err := sb.running(ctx)
	if err != nil {
		return nil
	}
	n := params.Notifications
	c.mu.Lock()
	c.kinds = map[string]bool{"notifications/tools/list_changed": n.ToolsListChanged,
		"notifications/prompts/list_changed": n.PromptsListChanged, "notifications/resources/list_changed": n.ResourcesListChanged}
	c.listenID = json.RawMessage(msg.ID.String())
	c.mu.Unlock()
	for _, uri := range n.ResourceSubscriptions {
		if sb.subscribe(c, uri) {
			p.write(mustEncode(&wire.Message{JSONRPC: wire.Version, ID: nextInternalID(), Method: "resources/subscribe", Params: mustJSON(map[string]string{"uri": uri})}))
		}
	}
	rep, err := c.listen(ctx, nil)
	if err != nil {
		return nil
	}
	ack := mustEncode(mustNotification("notifications/subscriptions/acknowledged", map[string]any{"notifications": n,
		"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": c.listenID}}))
	read, first := rep.nextFn, true
	rep.nextFn = func() (frame, error) {
		if first {
			first = false
			return frame{data: ack}, nil
		}
		return read()
	}
	rep.flexible, rep.longLived = true, true
	return rep
}
