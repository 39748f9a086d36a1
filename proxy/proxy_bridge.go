package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// The bridge: a client of MCP 2025-11-25 or earlier (initialize, a
// session) through the proxy to a server that speaks only MCP 2026-07-28
// (no initialize, no session: "Lifecycle"), which refuses the client's
// initialize (a 400 with UNSUPPORTED_PROTOCOL_VERSION, or a 404). The
// proxy then asks the server's server/discover and answers the client's
// initialize from it itself, and from then on:
//
//   - each request of the client goes with the 2026-07-28 request _meta
//     (the revision, the capabilities and clientInfo the client declared
//     in its initialize, the log level it set) and headers;
//   - an input_required result ("Multi Round-Trip Requests") becomes the
//     server-to-client requests of the earlier revisions (elicitation,
//     sampling, roots), each sent to the client, and the request is sent
//     again with the client's answers (inputResponses) and the server's
//     requestState, at most maxBridgeRounds times; the client gets the
//     final result, without resultType;
//   - ping and logging/setLevel, which 2026-07-28 removed, are answered
//     by the proxy; notifications of the client (initialized, cancelled,
//     roots/list_changed) go nowhere: 2026-07-28 has none of them, and a
//     cancelled request's HTTP request is closed instead.
//
// What the bridge cannot carry is not offered: the initialize result
// declares neither resources.subscribe nor any listChanged (2026-07-28
// moves them to subscriptions/listen, which the bridge does not open),
// nor tasks or experimental capabilities (wire.BridgedInitializeResult,
// which serve's gateway uses too).

// maxBridgeRounds bounds the input_required rounds of one request.
const maxBridgeRounds = 8

// maxBridgeInputs bounds the input requests of one round.
const maxBridgeInputs = 16

// methodSetLevel is the MCP 2025-11-25 log-level request; 2026-07-28
// carries the level in each request's _meta instead.
const methodSetLevel = "logging/setLevel"

// bridgeUpstream speaks MCP 2026-07-28 to the server for a client of an
// earlier revision.
type bridgeUpstream struct {
	p    *proxy
	sess *wire.HTTPSession
	// initialize is the result the client's initialize gets.
	initialize json.RawMessage

	mu       sync.Mutex
	logLevel string
	// asked are the requests of the bridge to the client (an input
	// request each), by id, waiting for the client's answer.
	asked   map[string]chan *wire.Message
	nextAsk atomic.Int64
}

// refusesInitialize reports whether err, the answer to a client's
// initialize, may mean a server of MCP 2026-07-28 only: a 400 (the
// revision refused) or a 404 (the method unknown), as a status or as the
// JSON-RPC errors that go with them.
func refusesInitialize(err error) bool {
	var se *wire.HTTPStatusError
	if errors.As(err, &se) {
		return se.StatusCode == http.StatusBadRequest || se.StatusCode == http.StatusNotFound
	}
	var rpc *wire.Error
	return errors.As(err, &rpc) && (rpc.Code == wire.CodeMethodNotFound || rpc.Code == wire.CodeUnsupportedMCPVersion)
}

// bridge opens the bridge for the client's initialize, m: server/discover
// must list MCP 2026-07-28. It returns the upstream and the answer to m.
func (p *proxy) bridge(ctx context.Context, m *wire.Message) (*bridgeUpstream, readFunc, error) {
	var params struct {
		ProtocolVersion string                 `json:"protocolVersion"`
		Capabilities    json.RawMessage        `json:"capabilities"`
		ClientInfo      wire.MCPImplementation `json:"clientInfo"`
	}
	if err := json.Unmarshal(m.Params, &params); err != nil {
		return nil, nil, fmt.Errorf("cannot read the client's initialize: %w", err)
	}
	sess, err := wire.NewHTTPSession(p.req.Target, p.hc, p.auth.Token)
	if err != nil {
		return nil, nil, &client.UsageError{Err: err}
	}
	sess.Header = p.req.Header
	sess.Version = wire.MCPStatelessVersion
	sess.Capabilities = params.Capabilities
	var res *wire.MCPInitializeResult
	err = p.auth.Do(ctx, wire.MethodServerDiscover, func(ctx context.Context) error {
		var err error
		res, err = sess.Initialize(ctx, params.ClientInfo.Name, params.ClientInfo.Version)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	// The client gets the revision it asked for when the proxy speaks it
	// too, else the newest before 2026-07-28 (MCP 2025-11-25 "Lifecycle",
	// Version Negotiation), and the capabilities the bridge carries.
	b := &bridgeUpstream{p: p, sess: sess, asked: map[string]chan *wire.Message{}}
	if b.initialize, err = wire.BridgedInitializeResult(res.Raw, params.ProtocolVersion); err != nil {
		return nil, nil, err
	}
	var answered struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(b.initialize, &answered)
	logger(p.cl).Info("the server speaks MCP 2026-07-28 only: bridging the client's MCP " + answered.ProtocolVersion)
	return b, b.answer(m.ID, b.initialize), nil
}

// answer is a readFunc that hands the client a result of the proxy's own.
func (b *bridgeUpstream) answer(id wire.ID, result json.RawMessage) readFunc {
	return func(ctx context.Context, deliver func(*wire.Message, []byte) error) error {
		m, err := wire.NewResult(id, result)
		if err != nil {
			return err
		}
		raw, err := wire.Encode(m)
		if err != nil {
			return err
		}
		return deliver(m, raw)
	}
}

func (b *bridgeUpstream) send(ctx context.Context, m *wire.Message) (readFunc, error) {
	switch {
	case m.IsResponse():
		b.mu.Lock()
		ch := b.asked[m.ID.String()]
		delete(b.asked, m.ID.String())
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return nil, nil
	case !m.IsRequest():
		return nil, nil // initialized, cancelled, roots/list_changed: none in 2026-07-28
	}
	switch m.Method {
	case wire.MethodInitialize:
		return b.answer(m.ID, b.initialize), nil
	case wire.MethodPing:
		return b.answer(m.ID, json.RawMessage(`{}`)), nil
	case methodSetLevel:
		var params struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(m.Params, &params) != nil || params.Level == "" {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: logging/setLevel needs a level")
		}
		b.mu.Lock()
		b.logLevel = params.Level
		b.mu.Unlock()
		return b.answer(m.ID, json.RawMessage(`{}`)), nil
	}
	out, err := b.envelope(m)
	if err != nil {
		return nil, err
	}
	reply, err := b.forward(ctx, out)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, deliver func(*wire.Message, []byte) error) error {
		return b.read(ctx, out, reply, deliver)
	}, nil
}

// envelope is m with the 2026-07-28 request _meta, and the log level the
// client set.
func (b *bridgeUpstream) envelope(m *wire.Message) (*wire.Message, error) {
	b.mu.Lock()
	level := b.logLevel
	b.mu.Unlock()
	if level != "" {
		var err error
		m, err = wire.WithParams(m, func(params map[string]json.RawMessage) {
			meta := map[string]json.RawMessage{}
			_ = json.Unmarshal(params["_meta"], &meta) // none: a new one
			meta[wire.MetaLogLevel], _ = json.Marshal(level)
			params["_meta"], _ = json.Marshal(meta)
		})
		if err != nil {
			return nil, err
		}
	}
	return b.sess.Envelope(m)
}

// forward posts a request, logging in or refreshing as the proxy does.
func (b *bridgeUpstream) forward(ctx context.Context, m *wire.Message) (*wire.ForwardReply, error) {
	var reply *wire.ForwardReply
	err := b.p.auth.Do(ctx, m.Method, func(ctx context.Context) error {
		var err error
		reply, err = b.sess.Forward(ctx, m)
		return err
	})
	return reply, err
}

// read hands the client what the server sends before its answer
// (progress, log messages), then the answer: a final result without
// resultType, or an error; an input_required result is answered with the
// client's help and the request sent again.
func (b *bridgeUpstream) read(ctx context.Context, m *wire.Message, reply *wire.ForwardReply, deliver func(*wire.Message, []byte) error) error {
	for round := 0; ; round++ {
		var final *wire.Message
		var finalRaw []byte
		err := reply.Read(ctx, func(msg *wire.Message, raw []byte) error {
			if msg.IsResponse() && msg.ID.String() == m.ID.String() {
				final, finalRaw = msg, raw
				return nil
			}
			return deliver(msg, raw)
		})
		if err != nil {
			return err
		}
		if final == nil {
			return errors.New("the server ended its answer without a response")
		}
		if final.Error != nil {
			return deliver(final, finalRaw)
		}
		ir, ok := wire.ParseInputRequired(final.Result)
		if !ok {
			return b.deliverResult(final, deliver)
		}
		if round+1 == maxBridgeRounds {
			return wire.Errorf(wire.CodeInternalError, "agentauth proxy: the server asked for input %d times for one %s; giving up", maxBridgeRounds, m.Method)
		}
		responses, err := b.ask(ctx, m.Method, ir.InputRequests)
		if err != nil {
			return err
		}
		if m, err = wire.WithInputResponses(m, responses, ir.RequestState); err != nil {
			return err
		}
		if reply, err = b.forward(ctx, m); err != nil {
			return err
		}
	}
}

// deliverResult hands the client a final result without the 2026-07-28
// resultType, which earlier revisions do not have.
func (b *bridgeUpstream) deliverResult(final *wire.Message, deliver func(*wire.Message, []byte) error) error {
	c := *final
	c.Result = wire.WithoutResultType(final.Result)
	final = &c
	raw, err := wire.Encode(final)
	if err != nil {
		return err
	}
	return deliver(final, raw)
}

// ask sends each input request to the client as a request of the
// bridge's own and returns the client's results by key. An error the
// client answers with fails the whole request.
func (b *bridgeUpstream) ask(ctx context.Context, method string, reqs map[string]wire.InputRequest) (map[string]json.RawMessage, error) {
	if len(reqs) == 0 || len(reqs) > maxBridgeInputs {
		return nil, wire.Errorf(wire.CodeInternalError, "agentauth proxy: the server asked for %d inputs for %s (1 to %d are passed on)", len(reqs), method, maxBridgeInputs)
	}
	type pending struct {
		key string
		id  string
		ch  chan *wire.Message
	}
	var asked []pending
	defer func() {
		b.mu.Lock()
		for _, a := range asked {
			delete(b.asked, a.id)
		}
		b.mu.Unlock()
	}()
	for key, r := range reqs {
		id := wire.StringID(fmt.Sprintf("agentauth-bridge-%d", b.nextAsk.Add(1)))
		req, err := wire.NewRequest(id, r.Method, r.Params)
		if err != nil {
			return nil, err
		}
		ch := make(chan *wire.Message, 1)
		b.mu.Lock()
		b.asked[id.String()] = ch
		b.mu.Unlock()
		asked = append(asked, pending{key: key, id: id.String(), ch: ch})
		if err := b.p.fromServerMessage(req); err != nil {
			return nil, err
		}
	}
	responses := map[string]json.RawMessage{}
	for _, a := range asked {
		select {
		case m := <-a.ch:
			if m.Error != nil {
				return nil, wire.Errorf(wire.CodeInternalError, "agentauth proxy: the client answered the server's %s with an error: %s", reqs[a.key].Method, m.Error.Message)
			}
			responses[a.key] = m.Result
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return responses, nil
}

// close has nothing to end: 2026-07-28 has no session.
func (b *bridgeUpstream) close(context.Context) {}
