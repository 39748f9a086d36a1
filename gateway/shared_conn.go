package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/agentauth/agentauth/wire"
)

// A caller's session on a shared process: its requests and notifications
// go to the process with ids and progress tokens of serve's.

func (c *sharedConn) post(ctx context.Context, msg *wire.Message, raw []byte, _ http.Header) (*reply, error) {
	sb := c.sb
	switch {
	case msg.Method == wire.MethodInitialize && !c.stateless:
		return c.initialize(ctx, msg)
	case msg.Method == "notifications/initialized", msg.Method == "notifications/roots/list_changed":
		// serve initialized the process itself; roots are each caller's own.
		return accepted(), nil
	case msg.IsResponse():
		c.answer(msg, raw)
		return accepted(), nil
	case !msg.IsRequest():
		if msg.Method == "notifications/cancelled" {
			if raw = c.cancelled(msg); raw == nil {
				return accepted(), nil
			}
		}
		p, err := sb.running(ctx)
		if err != nil {
			return nil, err
		}
		if err := p.write(raw); err != nil {
			return nil, err
		}
		return accepted(), nil
	}
	if c.stateless {
		if r := c.bridge(ctx, msg); r != nil {
			return r, nil
		}
		var params struct {
			Meta struct {
				Caps map[string]json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		}
		if json.Unmarshal(msg.Params, &params) == nil {
			c.mu.Lock()
			c.caps = params.Meta.Caps
			c.mu.Unlock()
		}
		if r, ok := c.resume(ctx, msg); ok {
			return r, nil
		}
	}
	switch msg.Method {
	case "resources/subscribe":
		sb.subscribe(c, resourceURI(msg.Params))
	case "resources/unsubscribe":
		if !sb.unsubscribe(c, resourceURI(msg.Params)) {
			// Another caller still wants the updates.
			return answered(wire.Respond(msg.ID, map[string]any{}, nil)), nil
		}
	}
	if !sb.take(c.owner) {
		return nil, backendErr(sb.m.b.Name, "has %d requests of this caller in flight, the most serve queues per caller; try again later", MaxInFlightPerCaller)
	}
	p, err := sb.running(ctx)
	if err != nil {
		sb.release(c.owner)
		return nil, err
	}
	n := sb.nextID.Add(1)
	key := strconv.FormatInt(n, 10)
	token := progressTokenRaw(msg.Params)
	progress := ""
	data := setMember(raw, json.RawMessage(key), "id")
	if token != nil {
		progress = key
		data = setMember(data, json.RawMessage(key), "params", "_meta", "progressToken")
	}
	s, err := p.registerFor(key, progress, c, json.RawMessage(msg.ID.String()), token)
	if err != nil {
		sb.release(c.owner)
		return nil, err
	}
	if err := p.write(data); err != nil {
		p.unregister(s)
		sb.release(c.owner)
		return nil, err
	}
	return c.replyFor(ctx, p, s, msg.ID), nil
}

// initialize answers a caller's initialize from the process's: the
// caller's requested revision when it is not newer than the process's.
func (c *sharedConn) initialize(ctx context.Context, msg *wire.Message) (*reply, error) {
	sb := c.sb
	if _, err := sb.running(ctx); err != nil {
		return nil, err
	}
	var params struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(msg.Params, &params)
	c.mu.Lock()
	c.caps = params.Capabilities
	c.mu.Unlock()
	sb.mu.Lock()
	result := make(map[string]json.RawMessage, len(sb.init))
	for k, v := range sb.init {
		result[k] = v
	}
	version := sb.version
	sb.mu.Unlock()
	if slices.Contains(legacyVersions, params.ProtocolVersion) && params.ProtocolVersion < version {
		version = params.ProtocolVersion
	}
	result["protocolVersion"], _ = json.Marshal(version)
	m, err := wire.NewResult(msg.ID, result)
	if err != nil {
		return nil, err
	}
	return answered(m), nil
}

// answer passes a caller's answer to a request of the process on, when
// the request was the caller's.
func (c *sharedConn) answer(msg *wire.Message, raw []byte) {
	sb := c.sb
	sb.mu.Lock()
	p := sb.proc
	sb.mu.Unlock()
	if p == nil {
		return
	}
	key := msg.ID.String()
	p.mu.Lock()
	mine := p.serverReqs[key] == c
	if mine {
		delete(p.serverReqs, key)
	}
	p.mu.Unlock()
	if !mine {
		sb.m.g.log.Debug("a caller answered a request that was not sent to it; dropped", "backend", sb.m.b.Name)
		return
	}
	p.write(raw)
}

// cancelled rewrites a caller's notifications/cancelled to the process's
// id of the request; nil when the caller has no such request in flight.
func (c *sharedConn) cancelled(msg *wire.Message) []byte {
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(msg.Params, &params) != nil {
		return nil
	}
	sb := c.sb
	sb.mu.Lock()
	p := sb.proc
	sb.mu.Unlock()
	if p == nil {
		return nil
	}
	want := idKey(params.RequestID)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.order {
		if s.owner == c && idKey(s.origID) == want {
			return mustEncode(mustNotification("notifications/cancelled", map[string]any{"requestId": json.RawMessage(s.key), "reason": "cancelled by the client"}))
		}
	}
	return nil
}

// end drops the caller: its subscriptions go (the process is told when no
// other caller keeps one), and the process's requests to it are answered
// with an error. The process goes on.
func (c *sharedConn) end(context.Context) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	subs := c.subs
	c.mu.Unlock()
	sb := c.sb
	for _, uri := range subs {
		if sb.unsubscribe(c, uri) {
			if p := sb.live(); p != nil {
				p.write(mustEncode(&wire.Message{JSONRPC: wire.Version, ID: nextInternalID(), Method: "resources/unsubscribe", Params: mustJSON(map[string]string{"uri": uri})}))
			}
		}
	}
	sb.cmu.Lock()
	delete(sb.conns, c)
	sb.cmu.Unlock()
	p := sb.live()
	if p == nil {
		return
	}
	var orphans []string
	p.mu.Lock()
	for id, o := range p.serverReqs {
		if o == c {
			orphans = append(orphans, id)
			delete(p.serverReqs, id)
		}
	}
	p.mu.Unlock()
	for _, key := range orphans {
		var id wire.ID
		_ = json.Unmarshal([]byte(key), &id)
		p.write(mustEncode(wire.NewErrorResponse(id, wire.Errorf(wire.CodeInternalError, "internal error: the caller's session ended"))))
	}
}
