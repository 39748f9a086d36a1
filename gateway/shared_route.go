package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// What a shared process sends, routed to its callers: answers, progress,
// requests of the process, and the notifications of the GET streams.

// subscribe records that c wants notifications/resources/updated of uri.
func (sb *sharedBackend) subscribe(c *sharedConn, uri string) (first bool) {
	if uri == "" {
		return false
	}
	sb.cmu.Lock()
	if sb.subs[uri] == nil {
		sb.subs[uri] = map[*sharedConn]bool{}
		first = true
	}
	added := !sb.subs[uri][c]
	sb.subs[uri][c] = true
	sb.cmu.Unlock()
	if added {
		c.mu.Lock()
		c.subs = append(c.subs, uri)
		c.mu.Unlock()
	}
	return first
}

// unsubscribe drops c's subscription of uri and reports whether no other
// caller keeps one (the process may then stop sending its updates).
func (sb *sharedBackend) unsubscribe(c *sharedConn, uri string) bool {
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	delete(sb.subs[uri], c)
	if len(sb.subs[uri]) > 0 {
		return false
	}
	delete(sb.subs, uri)
	return true
}

// dispatch routes what the process sends that is not an answer or a
// progress notification of a request in flight.
func (sb *sharedBackend) dispatch(p *process, f frame, id json.RawMessage, method string) {
	log := sb.m.g.log
	name := sb.m.b.Name
	switch {
	case len(id) > 0 && method != "":
		sb.serverRequest(p, f, id, method)
	case method == "notifications/tools/list_changed", method == "notifications/prompts/list_changed", method == "notifications/resources/list_changed":
		sb.fanOut(f, func(c *sharedConn) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.kinds == nil || c.kinds[method] })
	case method == "notifications/resources/updated":
		var params struct {
			URI string `json:"uri"`
		}
		var n struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(f.data, &n)
		_ = json.Unmarshal(n.Params, &params)
		sb.cmu.Lock()
		subs := sb.subs[params.URI]
		sb.cmu.Unlock()
		sb.fanOut(f, func(c *sharedConn) bool { sb.cmu.Lock(); defer sb.cmu.Unlock(); return subs[c] })
	case method == "notifications/cancelled":
		// The process gave up a request it sent a caller.
		var n struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(f.data, &n)
		key := idKey(n.Params.RequestID)
		p.mu.Lock()
		c := p.serverReqs[key]
		delete(p.serverReqs, key)
		p.mu.Unlock()
		if c != nil {
			sb.deliver(p, c, f)
		}
	case method == "notifications/progress", method == "":
		log.Debug("backend message for no request in flight; dropped", "backend", name, "method", method)
	default:
		c, n := p.soleCaller()
		if n != 1 || c.stateless {
			log.Debug("backend notification on a shared process with no one caller in flight; dropped", "backend", name, "method", method, "callers", n)
			return
		}
		sb.deliver(p, c, f)
	}
}

// serverRequest routes a request of the process (sampling, elicitation,
// roots) to the one caller with requests in flight, or answers it with an
// error saying why it cannot be routed. serve answers ping itself. It runs
// on the process's reader: what it writes to the process goes from
// another goroutine, so that a process blocked on a full stdout cannot
// block its own reader.
func (sb *sharedBackend) serverRequest(p *process, f frame, id json.RawMessage, method string) {
	rid := wire.ID{}
	_ = json.Unmarshal(id, &rid)
	if method == wire.MethodPing {
		go p.write(mustEncode(wire.Respond(rid, map[string]any{}, nil)))
		return
	}
	var rerr *wire.Error
	var parkOn *pstream
	token := ""
	p.mu.Lock()
	c, n := p.soleCaller()
	queued := false
	switch {
	case n == 0 && sb.queueOnParked(p, f):
		queued = true
	case n != 1:
		rerr = wire.Errorf(wire.CodeInternalError, "internal error: %s cannot be routed: this stdio process is shared, and %d callers have requests in flight (it goes to the caller when exactly one has)", method, n)
	case !c.declared(method):
		rerr = wire.Errorf(wire.CodeMethodNotFound, "method not found: the caller did not declare the capability %s needs", method)
	case c.stateless:
		for _, s := range p.order {
			if s.owner == c && s.parked == "" {
				parkOn = s
				break
			}
		}
		if parkOn == nil {
			rerr = wire.Errorf(wire.CodeInternalError, "internal error: %s cannot be routed: its caller's request is waiting for input already", method)
		} else {
			token = newToken()
			parkOn.parked = token
		}
	case len(p.serverReqs) >= MaxInFlight:
		rerr = wire.Errorf(wire.CodeInternalError, "internal error: %d requests to callers are open, the most serve keeps", MaxInFlight)
	default:
		p.serverReqs[idKey(id)] = c
	}
	p.mu.Unlock()
	if rerr != nil {
		sb.m.g.log.Info("shared stdio backend's request answered by serve", "backend", sb.m.b.Name, "method", method, "reason", rerr.Message)
		go p.write(mustEncode(wire.NewErrorResponse(rid, rerr)))
		return
	}
	if queued {
		return
	}
	if parkOn != nil {
		sb.park(p, c, parkOn, token, f, id)
		return
	}
	sb.deliver(p, c, f)
}

// soleCaller is the caller with requests in flight when exactly one has
// (serve's own requests aside), and how many have. p.mu is held.
func (p *process) soleCaller() (*sharedConn, int) {
	var one *sharedConn
	n := 0
	for _, s := range p.order {
		if s.owner != nil && s.owner != one && s.parked == "" {
			if one == nil {
				one, n = s.owner, 1
			} else {
				return nil, 2
			}
		}
	}
	return one, n
}

// deliver hands f to caller c: on the stream of its oldest request in
// flight, else its GET stream; waiting while the stream is full.
func (sb *sharedBackend) deliver(p *process, c *sharedConn, f frame) {
	var s *pstream
	p.mu.Lock()
	for _, o := range p.order {
		if o.owner == c && o.parked == "" {
			s = o
			break
		}
	}
	p.mu.Unlock()
	if s == nil {
		c.mu.Lock()
		s = c.listener
		c.mu.Unlock()
	}
	if s == nil {
		sb.m.g.log.Debug("backend message for a caller with no stream open; dropped", "backend", sb.m.b.Name)
		return
	}
	select {
	case s.ch <- f:
	case <-s.gone:
	}
}

// fanOut hands f to the GET stream of every session that wants it; a
// stream streamQueue messages behind misses it (one slow caller does not
// hold the others back).
func (sb *sharedBackend) fanOut(f frame, wants func(*sharedConn) bool) {
	sb.cmu.Lock()
	conns := make([]*sharedConn, 0, len(sb.conns))
	for c := range sb.conns {
		conns = append(conns, c)
	}
	sb.cmu.Unlock()
	for _, c := range conns {
		if !wants(c) {
			continue
		}
		c.mu.Lock()
		s, listenID := c.listener, c.listenID
		c.mu.Unlock()
		if s == nil {
			continue
		}
		g := f
		if listenID != nil {
			g.data = setMember(f.data, listenID, "params", "_meta", "io.modelcontextprotocol/subscriptionId")
		}
		select {
		case s.ch <- g:
		case <-s.gone:
		default:
			sb.m.g.log.Debug("a caller's stream is full; notification dropped", "backend", sb.m.b.Name)
		}
	}
}

// resourceURI is params.uri of resources/(un)subscribe.
func resourceURI(params json.RawMessage) string {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(params, &p)
	return p.URI
}

// progressTokenRaw is params._meta.progressToken of a request, or nil.
func progressTokenRaw(params json.RawMessage) json.RawMessage {
	if t := progressToken(params); t != "" {
		return json.RawMessage(t)
	}
	return nil
}

// replyFor is the reply to the caller's request id whose process request
// is s: its frames until the answer. A caller that goes away first has
// the process told (MCP "Cancellation"), unless the request is parked or
// a retry of the caller has taken it on: the HTTP answer is flushed before
// close runs, so an MCP 2026-07-28 client can be resuming the call with
// its input (resume makes the retry s's owner) while this reply closes.
func (c *sharedConn) replyFor(ctx context.Context, p *process, s *pstream, id wire.ID) *reply {
	sb := c.sb
	rep := &reply{status: http.StatusOK, stream: true, flexible: true, nextFn: s.reader(ctx, p, sb.m.b.Name, true), closeFn: func() {
		p.mu.Lock()
		done, parked, resumed := s.answered, s.parked != "", s.owner != c
		p.mu.Unlock()
		if parked || resumed {
			return
		}
		p.unregister(s)
		sb.release(c.owner)
		if !done && !p.exited() {
			p.write(mustEncode(mustNotification("notifications/cancelled", map[string]any{"requestId": json.RawMessage(s.key), "reason": "the client went away"})))
		}
	}}
	if c.stateless {
		rep.statusOf = statelessStatus
		read := rep.nextFn
		rep.nextFn = func() (frame, error) {
			f, err := read()
			if err == nil {
				// An answer that came while the call was parked names
				// the earlier request's id.
				if isResponse(f.data) {
					f.data = setMember(f.data, json.RawMessage(id.String()), "id")
				}
				f.data = completeResult(f.data)
			}
			return f, err
		}
	}
	return rep
}

func isResponse(data []byte) bool {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(data, &head) == nil && head.Method == "" && len(head.ID) > 0
}

// listen opens the caller's GET stream: list changes, resource updates
// and, while only this caller has requests in flight, the process's
// requests and notifications. It outlives process restarts.
func (c *sharedConn) listen(ctx context.Context, _ http.Header) (*reply, error) {
	s := &pstream{ch: make(chan frame, streamQueue), gone: make(chan struct{})}
	c.mu.Lock()
	if c.listener != nil {
		c.mu.Unlock()
		return nil, errListening
	}
	c.listener = s
	c.mu.Unlock()
	return &reply{status: http.StatusOK, stream: true, nextFn: func() (frame, error) {
		select {
		case f := <-s.ch:
			return f, nil
		case <-ctx.Done():
			return frame{}, ctx.Err()
		}
	}, closeFn: func() {
		s.goneOnce.Do(func() { close(s.gone) })
		c.mu.Lock()
		if c.listener == s {
			c.listener = nil
		}
		c.mu.Unlock()
	}}, nil
}

// declared reports whether the caller's initialize declared the
// capability a request of the process needs.
func (c *sharedConn) declared(method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch method {
	case "sampling/createMessage":
		return c.caps["sampling"] != nil
	case "elicitation/create":
		return c.caps["elicitation"] != nil
	case "roots/list":
		return c.caps["roots"] != nil
	}
	return true
}

// frameID is the id of a message.
func frameID(f frame) json.RawMessage {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(f.data, &head)
	return head.ID
}

// inputRequired is the input_required answer to the caller's request id
// holding the process's request f (MCP 2026-07-28 "Multi Round-Trip").
func inputRequired(id wire.ID, f frame, token string) *wire.Message {
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(f.data, &req)
	ask := map[string]any{"method": req.Method}
	if len(req.Params) > 0 {
		ask["params"] = req.Params
	}
	m, _ := wire.NewResult(id, map[string]any{"resultType": "input_required", "inputRequests": map[string]any{inputKey: ask}, "requestState": token})
	return m
}

// queueOnParked queues a request of the process on its one parked call
// (its caller has no request in flight but that call's); false when p
// has none, or several, or the queue is full. p.mu is held.
func (sb *sharedBackend) queueOnParked(p *process, f frame) bool {
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	var one *parkedCall
	for _, pc := range sb.parked {
		if pc.p == p {
			if one != nil {
				return false
			}
			one = pc
		}
	}
	if one == nil || len(one.queue) >= maxQueued {
		return false
	}
	one.queue = append(one.queue, f)
	return true
}

// park answers an MCP 2026-07-28 caller's request s with input_required
// holding the process's request f, and keeps s for the caller's retry
// (for the backend's timeout at most).
func (sb *sharedBackend) park(p *process, c *sharedConn, s *pstream, token string, f frame, id json.RawMessage) {
	pc := &parkedCall{p: p, s: s, q: id, owner: c.owner}
	sb.cmu.Lock()
	sb.parked[token] = pc
	pc.timer = time.AfterFunc(sb.m.timeout, func() { sb.expire(token) })
	sb.cmu.Unlock()
	var origID wire.ID
	p.mu.Lock()
	_ = json.Unmarshal(s.origID, &origID)
	p.mu.Unlock()
	select {
	case s.ch <- frame{data: mustEncode(inputRequired(origID, f, token))}:
	case <-s.gone:
		go sb.expire(token)
	}
}

// expire drops a parked call its caller did not retry in time: the
// process's request is refused and its call cancelled.
func (sb *sharedBackend) expire(token string) {
	sb.cmu.Lock()
	pc := sb.parked[token]
	delete(sb.parked, token)
	sb.cmu.Unlock()
	if pc == nil {
		return
	}
	pc.timer.Stop()
	p := pc.p
	p.mu.Lock()
	pc.s.parked = ""
	p.mu.Unlock()
	p.unregister(pc.s)
	sb.release(pc.owner)
	if !p.exited() {
		for _, q := range append([]json.RawMessage{pc.q}, queuedIDs(pc.queue)...) {
			var qid wire.ID
			_ = json.Unmarshal(q, &qid)
			p.write(mustEncode(wire.NewErrorResponse(qid, wire.Errorf(wire.CodeInternalError, "internal error: the caller did not answer"))))
		}
		p.write(mustEncode(mustNotification("notifications/cancelled", map[string]any{"requestId": json.RawMessage(pc.s.key), "reason": "the client did not answer"})))
	}
}

func queuedIDs(queue []frame) []json.RawMessage {
	ids := make([]json.RawMessage, 0, len(queue))
	for _, f := range queue {
		ids = append(ids, frameID(f))
	}
	return ids
}

// statePrefix marks the requestState serve mints for a parked call.
const statePrefix = "agentauth-gateway."

func newToken() string {
	b := make([]byte, 18)
	rand.Read(b)
	return statePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// inputKey names the one input request of an input_required result serve
// makes for a parked call.
const inputKey = "backend"
