package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// The bridge: a caller of MCP 2025-11-25, 2025-06-18 or 2025-03-26 (an
// initialize, a session) and an HTTP backend that speaks MCP 2026-07-28
// only (no initialize, no session: "Lifecycle"), which refuses the
// caller's initialize with HTTP 400 and UNSUPPORTED_PROTOCOL_VERSION
// (-32022) or with 404. serve then asks the backend's server/discover
// and, when it lists 2026-07-28, answers the caller's initialize itself
// (wire.BridgedInitializeResult) with serve's session id; the session's
// httpConn hands everything after to its bridge:
//
//   - each request goes to the backend as a 2026-07-28 request: the
//     _meta envelope with the clientInfo and capabilities the caller's
//     initialize declared and the log level it set, and the standard
//     headers (Mcp-Method, Mcp-Name, the Mcp-Param-* of the tool's schema);
//   - an input_required answer becomes the earlier revisions' requests
//     to the caller (elicitation/create, sampling/createMessage,
//     roots/list), sent on the POST's event stream with ids of serve's;
//     the caller's answers (POSTed with serve's session id) go back in
//     inputResponses with the backend's requestState, at most
//     maxBridgeRounds rounds of at most maxBridgeInputs requests, each
//     round waiting for the caller for the backend's timeout at most;
//   - the final result loses its resultType; ping and logging/setLevel
//     are answered by serve; notifications/cancelled closes the call's
//     request to the backend (how 2026-07-28 cancels) and the caller's
//     other notifications (initialized, roots/list_changed) go nowhere,
//     as 2026-07-28 has none; GET has no stream (405); DELETE ends
//     serve's session only, the backend keeping none.
//
// serve probes at every initialize rather than remembering the finding:
// a backend upgraded or rolled back in place is followed at once, for one
// refused request per new session.

// maxBridgeRounds bounds the input_required rounds of one request;
// maxBridgeInputs the input requests of one round; maxBridgeAsked the
// requests to the caller one session waits on at once.
const (
	maxBridgeRounds = 8
	maxBridgeInputs = 16
	maxBridgeAsked  = 64
)

// methodSetLevel is the MCP 2025-11-25 log-level request; 2026-07-28
// carries the level in each request's _meta instead.
const methodSetLevel = "logging/setLevel"

// bridge is one caller's session with a backend of MCP 2026-07-28 only.
type bridge struct {
	m *Mount
	// hc reaches the backend without a session.
	hc *httpConn
	// clientInfo and caps are what the caller's initialize declared;
	// initResult the result it got.
	clientInfo, caps json.RawMessage
	initResult       json.RawMessage

	mu       sync.Mutex
	logLevel string
	// asked are serve's requests to the caller, by id, waiting for its
	// answer; calls the caller's requests in flight, by id (at most
	// MaxInFlight).
	asked map[string]chan *wire.Message
	calls map[string]*bridgeCall
	done  chan struct{}
	ended bool
}

var bridgeAskID atomic.Int64

// once is a reply's next that yields f (when it has data), then io.EOF.
func once(f frame) func() (frame, error) {
	done := len(f.data) == 0 && !f.dataSeen
	return func() (frame, error) {
		if done {
			return frame{}, io.EOF
		}
		done = true
		return f, nil
	}
}

// newBridge asks the backend's server/discover for the caller whose
// initialize is msg, and returns the bridge and the caller's initialize
// result.
func newBridge(ctx context.Context, m *Mount, msg *wire.Message, out http.Header) (*bridge, json.RawMessage, error) {
	var params struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if err := json.Unmarshal(msg.Params, &params); err != nil {
		return nil, nil, err
	}
	b := &bridge{m: m, hc: &httpConn{m: m, stateless: true}, clientInfo: params.ClientInfo, caps: params.Capabilities,
		asked: map[string]chan *wire.Message{}, calls: map[string]*bridgeCall{}, done: make(chan struct{})}
	result, err := m.roundTrip(ctx, b, wire.MethodServerDiscover, nil, out)
	if err != nil {
		return nil, nil, err
	}
	if !wire.DiscoverSpeaksStateless(result) {
		return nil, nil, fmt.Errorf("server/discover does not list MCP %s", statelessVersion)
	}
	if b.initResult, err = wire.BridgedInitializeResult(result, params.ProtocolVersion); err != nil {
		return nil, nil, err
	}
	return b, b.initResult, nil
}

// post takes one message of the caller.
func (b *bridge) post(ctx context.Context, msg *wire.Message, _ []byte, out http.Header) (*reply, error) {
	switch {
	case msg.IsResponse():
		b.answer(msg)
		return accepted(), nil
	case msg.Method == "notifications/cancelled":
		b.cancelled(msg)
		return accepted(), nil
	case !msg.IsRequest():
		return accepted(), nil // initialized, roots/list_changed: none in 2026-07-28
	}
	switch msg.Method {
	case wire.MethodInitialize:
		m, err := wire.NewResult(msg.ID, b.initResult)
		if err != nil {
			return nil, err
		}
		return answered(m), nil
	case wire.MethodPing:
		return answered(wire.Respond(msg.ID, map[string]any{}, nil)), nil
	case methodSetLevel:
		var p struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || p.Level == "" {
			return answered(wire.NewErrorResponse(msg.ID, wire.Errorf(wire.CodeInvalidParams, "invalid params: logging/setLevel needs a level"))), nil
		}
		b.mu.Lock()
		b.logLevel = p.Level
		b.mu.Unlock()
		return answered(wire.Respond(msg.ID, map[string]any{}, nil)), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &bridgeCall{b: b, ctx: ctx, stop: cancel, msg: msg, out: out}
	b.mu.Lock()
	if len(b.calls) >= MaxInFlight {
		b.mu.Unlock()
		cancel()
		return nil, backendErr(b.m.b.Name, "has %d requests of this session in flight, the most serve keeps; try again later", MaxInFlight)
	}
	b.calls[msg.ID.String()] = k
	b.mu.Unlock()
	if err := k.send(); err != nil {
		k.close()
		return nil, err
	}
	return &reply{status: http.StatusOK, stream: true, flexible: true, longLived: true, nextFn: k.next, closeFn: k.close}, nil
}

// send posts request msg to the backend as an MCP 2026-07-28 request.
func (b *bridge) send(ctx context.Context, msg *wire.Message, out http.Header) (*reply, error) {
	b.mu.Lock()
	level := b.logLevel
	b.mu.Unlock()
	env, err := wire.RequestEnvelope(msg, b.clientInfo, b.caps, level)
	if err != nil {
		return nil, err
	}
	raw, err := wire.Encode(env)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for k, v := range out {
		if k != "Mcp-Name" && k != "Mcp-Method" && !strings.HasPrefix(k, "Mcp-Param-") {
			h[k] = v
		}
	}
	h.Set("Mcp-Protocol-Version", statelessVersion)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	wire.SetStandardHeaders(h, env)
	if env.Method == methodToolsCall {
		var p struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(env.Params, &p) == nil {
			wire.SetParamHeaders(h, p.Arguments, b.m.tools.headerParams(p.Name))
		}
	}
	return b.hc.post(ctx, env, raw, h)
}

// cancelled ends the caller's request that notifications/cancelled names.
func (b *bridge) cancelled(msg *wire.Message) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(msg.Params, &p) != nil {
		return
	}
	var id wire.ID
	if json.Unmarshal(p.RequestID, &id) != nil {
		return
	}
	b.mu.Lock()
	k := b.calls[id.String()]
	b.mu.Unlock()
	if k != nil {
		k.stop()
	}
}

// answer hands the caller's answer to the request of serve's it answers.
func (b *bridge) answer(msg *wire.Message) {
	b.mu.Lock()
	ch := b.asked[msg.ID.String()]
	delete(b.asked, msg.ID.String())
	b.mu.Unlock()
	if ch == nil {
		b.m.g.log.Debug("a caller answered a request serve did not send it; dropped", "backend", b.m.b.Name)
		return
	}
	ch <- msg // buffered, one answer each
}

// listen: MCP 2026-07-28 has no stream for the server's own messages.
func (b *bridge) listen(context.Context, http.Header) (*reply, error) {
	return &reply{status: http.StatusMethodNotAllowed}, nil
}

// end ends serve's session: calls waiting for the caller's input fail.
func (b *bridge) end(context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.ended = true
		close(b.done)
	}
}

// bridgeCall is one request of the caller on its way through the bridge.
type bridgeCall struct {
	b   *bridge
	ctx context.Context
	// stop ends ctx: the caller cancelled the request.
	stop context.CancelFunc
	// msg is the request as sent last (with the inputResponses of the
	// rounds so far); out the headers of the caller's POST.
	msg *wire.Message
	out http.Header

	cur      *reply // the backend's answer being read
	cancel   context.CancelFunc
	timer    *time.Timer
	timedOut atomic.Bool

	round   int
	state   string
	queue   []frame // serve's requests to the caller, to be written
	pending []bridgeAsk
	done    bool
}

// bridgeAsk is a request of serve's to the caller, for the input
// request key of the backend's.
type bridgeAsk struct {
	key, id, method string
	ch              chan *wire.Message
}

// send posts k.msg to the backend; the answer's each frame must come
// within the backend's timeout.
func (k *bridgeCall) send() error {
	k.release()
	ctx, cancel := context.WithCancel(k.ctx)
	k.cancel = cancel
	k.timedOut.Store(false)
	k.timer = time.AfterFunc(k.b.m.timeout, func() { k.timedOut.Store(true); cancel() })
	rep, err := k.b.send(ctx, k.msg, k.out)
	if err != nil {
		if k.timedOut.Load() {
			return backendErr(k.b.m.b.Name, "did not answer within %s", k.b.m.timeout)
		}
		return err
	}
	k.cur = rep
	return nil
}

// release ends the backend request of the round before.
func (k *bridgeCall) release() {
	if k.cur != nil {
		k.cur.close()
		k.cur = nil
	}
	if k.timer != nil {
		k.timer.Stop()
	}
	if k.cancel != nil {
		k.cancel()
	}
}

func (k *bridgeCall) close() {
	k.release()
	k.stop()
	k.b.mu.Lock()
	for _, a := range k.pending {
		delete(k.b.asked, a.id)
	}
	if id := k.msg.ID.String(); k.b.calls[id] == k {
		delete(k.b.calls, id)
	}
	k.b.mu.Unlock()
	k.pending = nil
}

// next is the next message for the caller: the backend's notifications,
// serve's requests for input, and at last the answer.
func (k *bridgeCall) next() (frame, error) {
	name := k.b.m.b.Name
	for {
		if len(k.queue) > 0 {
			f := k.queue[0]
			k.queue = k.queue[1:]
			return f, nil
		}
		if k.done {
			return frame{}, io.EOF
		}
		if len(k.pending) > 0 {
			responses, err := k.collect()
			if err != nil {
				return frame{}, err
			}
			if k.msg, err = wire.WithInputResponses(k.msg, responses, k.state); err != nil {
				return frame{}, err
			}
			if int64(len(k.msg.Params)) > k.b.m.maxMsg {
				return frame{}, backendErr(name, "asked for input, and the caller's answers make the request over %d bytes", k.b.m.maxMsg)
			}
			if err := k.send(); err != nil {
				return frame{}, err
			}
			continue
		}
		k.timer.Reset(k.b.m.timeout)
		f, err := k.cur.next()
		if err != nil {
			switch {
			case k.timedOut.Load():
				return frame{}, backendErr(name, "did not answer within %s", k.b.m.timeout)
			case errors.Is(err, io.EOF):
				return frame{}, backendErr(name, "ended its answer without a response")
			}
			return frame{}, err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if len(f.data) == 0 || json.Unmarshal(f.data, &m) != nil {
			continue // a priming event, or garbage front.go would refuse: the answer decides
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			k.b.m.g.log.Debug("backend of MCP 2026-07-28 sent a request on a bridged call; dropped", "backend", name, "method", m.Method)
			continue
		case m.Method != "":
			return frame{data: f.data}, nil // progress, log messages
		case !sameID(m.ID, k.msg.ID):
			continue
		case m.Error != nil && string(m.Error) != "null":
			k.done = true
			return frame{data: f.data}, nil
		}
		ir, ok := wire.ParseInputRequired(m.Result)
		if !ok {
			k.done = true
			return frame{data: mustEncode(&wire.Message{JSONRPC: wire.Version, ID: k.msg.ID, Result: wire.WithoutResultType(m.Result)})}, nil
		}
		if err := k.ask(ir); err != nil {
			return frame{}, err
		}
	}
}

// ask queues serve's requests to the caller for the backend's input
// requests.
func (k *bridgeCall) ask(ir wire.InputRequiredResult) error {
	name := k.b.m.b.Name
	k.round++
	if k.round > maxBridgeRounds {
		return backendErr(name, "asked for input more than %d times for one %s; serve gave up", maxBridgeRounds, k.msg.Method)
	}
	if len(ir.InputRequests) == 0 || len(ir.InputRequests) > maxBridgeInputs {
		return backendErr(name, "asked for %d inputs at once for %s (serve passes on 1 to %d)", len(ir.InputRequests), k.msg.Method, maxBridgeInputs)
	}
	k.release()
	k.state = ir.RequestState
	keys := make([]string, 0, len(ir.InputRequests))
	for key := range ir.InputRequests {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	b := k.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return backendErr(name, "asked for input, and the caller's session has ended")
	}
	if len(b.asked)+len(keys) > maxBridgeAsked {
		return backendErr(name, "asked for input, and the caller has %d requests of serve's unanswered, the most serve keeps", len(b.asked))
	}
	for _, key := range keys {
		in := ir.InputRequests[key]
		id := wire.StringID(fmt.Sprintf("agentauth-bridge-%d", bridgeAskID.Add(1)))
		req, err := wire.NewRequest(id, in.Method, in.Params)
		if err != nil {
			return err
		}
		a := bridgeAsk{key: key, id: id.String(), method: in.Method, ch: make(chan *wire.Message, 1)}
		b.asked[a.id] = a.ch
		k.pending = append(k.pending, a)
		k.queue = append(k.queue, frame{data: mustEncode(req)})
	}
	return nil
}

// collect waits for the caller's answers to the round's requests, for the
// backend's timeout at most.
func (k *bridgeCall) collect() (map[string]json.RawMessage, error) {
	name, timeout := k.b.m.b.Name, k.b.m.timeout
	t := time.NewTimer(timeout)
	defer t.Stop()
	responses := map[string]json.RawMessage{}
	for len(k.pending) > 0 {
		a := k.pending[0]
		select {
		case m := <-a.ch:
			if m.Error != nil {
				return nil, backendErr(name, "asked the caller for %s, and the caller answered with an error: %s", a.method, m.Error.Message)
			}
			responses[a.key] = m.Result
		case <-t.C:
			return nil, backendErr(name, "asked the caller for %s, and the caller did not answer within %s", a.method, timeout)
		case <-k.b.done:
			return nil, backendErr(name, "asked the caller for %s, and the caller's session ended", a.method)
		case <-k.ctx.Done():
			return nil, k.ctx.Err()
		}
		k.pending = k.pending[1:]
		k.b.mu.Lock()
		delete(k.b.asked, a.id) // answered already; also when cut short
		k.b.mu.Unlock()
	}
	return responses, nil
}
