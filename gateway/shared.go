package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// A stdio backend with process "shared" is one process serving every
// caller (see doc.go for the decisions). serve is the process's only MCP
// client: it initializes it once (again after a restart) and answers each
// caller's initialize from that result. Every request gets an id of
// serve's (unique on the process) and, when it has one, a progress token
// of serve's; the answer and the progress notifications get the caller's
// back. A request from the process goes to the caller whose request is in
// flight when exactly one caller has any; otherwise serve answers it with
// an error. MCP 2026-07-28 requests (no session) are served by the same
// process, each as a caller of its own.

// MaxInFlightPerCaller bounds the requests one caller (subject and client
// id) has in flight on a shared process, so that one caller cannot take
// all of MaxInFlight.
const MaxInFlightPerCaller = 32

// sharedVersion is the MCP revision serve asks a shared process for; the
// process may answer with an older one.
const sharedVersion = "2025-11-25"

// legacyVersions are the revisions negotiated by initialize, newest first.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// removedStateless are methods MCP 2026-07-28 removed (initialize and ping
// with the handshake, logging/setLevel by per-request log levels,
// resources/(un)subscribe by subscriptions/listen, which a shared process
// of an older revision cannot serve).
var removedStateless = []string{wire.MethodInitialize, wire.MethodPing, "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// sharedBackend is a stdio backend's one process and the callers on it.
type sharedBackend struct {
	m      *Mount
	nextID atomic.Int64

	mu      sync.Mutex // held while a process starts and is initialized
	proc    *process
	back    backoff
	init    map[string]json.RawMessage // the process's initialize result
	version string                     // the revision it negotiated
	closed  bool

	cmu      sync.Mutex
	conns    map[*sharedConn]bool
	subs     map[string]map[*sharedConn]bool // resources/subscribe by URI
	inFlight map[string]int                  // requests in flight by caller
	parked   map[string]*parkedCall          // by requestState
}

// parkedCall is a request of an MCP 2026-07-28 caller whose process asked
// the caller something: the caller got input_required and the process's
// request waits for the caller's retry (MCP 2026-07-28 "Multi Round-Trip").
type parkedCall struct {
	p     *process
	s     *pstream
	q     json.RawMessage // the process's request id
	owner string
	timer *time.Timer
	// queue are the process's further requests that came while the call
	// waited (an SDK asking for several inputs at once): each is asked in
	// a round of its own after the caller's retry.
	queue []frame
}

// maxQueued bounds a parked call's queue.
const maxQueued = 16

// inputKey names the one input request of an input_required result serve
// makes for a parked call.
const inputKey = "backend"

func newSharedBackend(m *Mount) *sharedBackend {
	return &sharedBackend{m: m, conns: map[*sharedConn]bool{}, subs: map[string]map[*sharedConn]bool{}, inFlight: map[string]int{}, parked: map[string]*parkedCall{}}
}

// shared is the mount's shared process, made on first use.
func (m *Mount) sharedProcess() *sharedBackend {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shared == nil {
		m.shared = newSharedBackend(m)
	}
	return m.shared
}

// sharedConn is one caller on a shared process: an MCP session, or one
// MCP 2026-07-28 request (stateless).
type sharedConn struct {
	sb        *sharedBackend
	owner     string // ownerOf the caller
	stateless bool

	mu       sync.Mutex
	caps     map[string]json.RawMessage // the capabilities its initialize declared
	listener *pstream                   // its GET stream, if open
	subs     []string
	ended    bool
	// kinds are the list_changed notifications a subscriptions/listen
	// stream asked for (nil: a session, which gets them all); listenID is
	// that request's id, put in each notification's _meta.
	kinds    map[string]bool
	listenID json.RawMessage
}

func (sb *sharedBackend) conn(c Caller, stateless bool) *sharedConn {
	sc := &sharedConn{sb: sb, owner: ownerOf(c), stateless: stateless}
	sb.cmu.Lock()
	sb.conns[sc] = true
	sb.cmu.Unlock()
	return sc
}

// running returns the live process, starting and initializing one (after
// the backoff) when there is none.
func (sb *sharedBackend) running(ctx context.Context) (*process, error) {
	name := sb.m.b.Name
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.closed {
		return nil, backendErr(name, "is shutting down")
	}
	if sb.proc != nil && !sb.proc.exited() {
		return sb.proc, nil
	}
	if err := sb.back.await(ctx, name, sb.proc); err != nil {
		return nil, err
	}
	p, err := startProcess(sb.m, "", sb)
	if err != nil {
		return nil, err
	}
	sb.proc = p
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": sb.nextID.Add(1), "method": wire.MethodInitialize, "params": map[string]any{
		"protocolVersion": sharedVersion,
		"capabilities":    map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
		"clientInfo":      map[string]any{"name": "agentauth-gateway", "version": "1"},
	}})
	result, err := p.handshake(ctx, init, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "by serve")
	var r map[string]json.RawMessage
	if err == nil && json.Unmarshal(result, &r) != nil {
		err = backendErr(name, "answered initialize with a result that is not an object")
	}
	if err != nil {
		// A crash for the backoff: the next caller does not start it again at once.
		p.stdin.Close()
		signalGroup(p.cmd, true)
		return nil, err
	}
	v, _ := wire.JSONString(r["protocolVersion"])
	sb.init, sb.version = r, v
	return p, nil
}

// close ends the process (its process group) for good.
func (sb *sharedBackend) close() {
	sb.mu.Lock()
	sb.closed = true
	p := sb.proc
	sb.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

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

// replyFor is the reply to the caller's request id whose process request
// is s: its frames until the answer. A caller that goes away first has
// the process told (MCP "Cancellation"), unless the request is parked or
// a retry of the caller has taken it on: the HTTP answer is flushed before
// close runs, so an MCP 2026-07-28 client can be resuming the call with
// its input (resume makes the retry s's owner) while this reply closes.
func (c *sharedConn) replyFor(ctx context.Context, p *process, s *pstream, id wire.ID) *reply {
	sb := c.sb
	rep := &reply{status: http.StatusOK, stream: true, flexible: true, next: s.reader(ctx, p, sb.m.b.Name, true), close: func() {
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
		read := rep.next
		rep.next = func() (frame, error) {
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
	return &reply{status: http.StatusOK, stream: true, next: func() (frame, error) {
		select {
		case f := <-s.ch:
			return f, nil
		case <-ctx.Done():
			return frame{}, ctx.Err()
		}
	}, close: func() {
		s.goneOnce.Do(func() { close(s.gone) })
		c.mu.Lock()
		if c.listener == s {
			c.listener = nil
		}
		c.mu.Unlock()
	}}, nil
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

// live is the running process, or nil.
func (sb *sharedBackend) live() *process {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.proc == nil || sb.proc.exited() {
		return nil
	}
	return sb.proc
}

// take counts a request of caller owner, false past MaxInFlightPerCaller.
func (sb *sharedBackend) take(owner string) bool {
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	if sb.inFlight[owner] >= MaxInFlightPerCaller {
		return false
	}
	sb.inFlight[owner]++
	return true
}

func (sb *sharedBackend) release(owner string) {
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	if sb.inFlight[owner]--; sb.inFlight[owner] <= 0 {
		delete(sb.inFlight, owner)
	}
}

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
	read, first := rep.next, true
	rep.next = func() (frame, error) {
		if first {
			first = false
			return frame{data: ack}, nil
		}
		return read()
	}
	rep.flexible, rep.longLived = true, true
	return rep
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

// completeResult gives an answer of an older revision the resultType MCP
// 2026-07-28 results carry: input_required when it holds inputRequests
// (an SDK's multi round-trip answering an older client), else complete.
func completeResult(data []byte) []byte {
	var head struct {
		Method string                     `json:"method"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &head) != nil || head.Method != "" || head.Result == nil || head.Result["resultType"] != nil {
		return data
	}
	if head.Result["inputRequests"] != nil {
		return setMember(data, json.RawMessage(`"input_required"`), "result", "resultType")
	}
	return setMember(data, json.RawMessage(`"complete"`), "result", "resultType")
}

// statelessStatus is the HTTP status of an MCP 2026-07-28 answer
// ("Transports", HTTP status codes; serve's own face maps them alike).
func statelessStatus(data []byte) int {
	var head struct {
		Error *wire.Error `json:"error"`
	}
	if json.Unmarshal(data, &head) != nil || head.Error == nil {
		return http.StatusOK
	}
	switch head.Error.Code {
	case wire.CodeMethodNotFound:
		return http.StatusNotFound
	case wire.CodeParseError, wire.CodeInvalidRequest, wire.CodeInvalidParams, -32020, codeMissingClientCapability, -32022:
		return http.StatusBadRequest
	case wire.CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}
