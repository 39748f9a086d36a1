package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// Bounds of the proxy's queues (refusing new work when reached).
const (
	// maxProxyInFlight bounds the client's requests under way: the next
	// one waits (stdin is not read) until one is answered.
	maxProxyInFlight = 64
	// proxyOutQueue bounds the messages waiting to be written to stdout:
	// the server's streams are not read while it is full.
	proxyOutQueue = 256
	// proxyCloseTimeout bounds the goodbye: cancellations, DELETE.
	proxyCloseTimeout = 3 * time.Second
)

// codeProxyError is the JSON-RPC error of a request the proxy could not
// forward (the server unreachable, authorization refused): -32603
// Internal error (JSON-RPC 2.0 §5.1), the message says why.
const codeProxyError = wire.CodeInternalError

// Request is what proxy serves.
type Request struct {
	// Target is the MCP server's URL (http or https).
	Target string
	// Transport is one of Transports ("": http-first).
	Transport string
	// Header is added to every request to the server (proxy --header).
	Header http.Header
	// Choices are how to log in when the server asks.
	Choices client.Choices
	// SignIn says how a URL elicitation agentauth answers itself is
	// followed.
	SignIn client.SignInOptions
}

// proxy is one run of the bridge.
type proxy struct {
	cl   *client.Client
	req  Request
	hc   *http.Client
	auth *client.SharedAuth
	out  chan []byte
	ctx  context.Context

	mu sync.Mutex
	up upstream
	// pending are the client's requests under way, by id.
	pending map[string]*pendingRequest
	// clientURL says the client declared elicitation.url.
	clientURL bool
	inFlight  chan struct{}
	wg        sync.WaitGroup
}

type pendingRequest struct {
	method string
	id     wire.ID
	cancel context.CancelFunc
	// request is the client's request, to send again after a sign-in.
	request *wire.Message
	settled sync.Once
}

// Run serves req for cl's user: JSON-RPC messages read from in (one per
// line) go to the target, the server's come back on out, one per line;
// nothing else is written to out. It returns nil when in ends or ctx is
// done, after cancelling the requests under way (notifications/cancelled
// to the server) and ending the session. A request the server cannot be
// reached for, or refuses for good, is answered with a JSON-RPC error;
// the proxy goes on.
func Run(ctx context.Context, cl *client.Client, req Request, in io.Reader, out io.Writer) error {
	if !client.IsHTTPTarget(req.Target) {
		return client.Usagef("proxy needs an http or https MCP server URL, not %q", wire.RedactTarget(req.Target))
	}
	return serve(ctx, cl, req, cl.NewSharedAuth(ctx, req.Target, req.Choices), in, out)
}

// serve is Run with the credential auth, which several bridges of one
// process share (proxy --listen).
func serve(ctx context.Context, cl *client.Client, req Request, auth *client.SharedAuth, in io.Reader, out io.Writer) error {
	hc := http.Client{}
	if cl.HTTPClient != nil {
		hc = *cl.HTTPClient
	}
	hc.Timeout = 0 // streams live long; each request has its context
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &proxy{cl: cl, req: req, hc: &hc, auth: auth, out: make(chan []byte, proxyOutQueue), ctx: ctx,
		pending: map[string]*pendingRequest{}, inFlight: make(chan struct{}, maxProxyInFlight)}

	written := make(chan error, 1)
	go func() { written <- p.write(ctx, out) }()
	conn := wire.NewStdioConn(in, io.Discard, nil, 0)
	read := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		for {
			line, err := conn.Read(ctx)
			if errors.Is(err, wire.ErrSkippedMessage) {
				p.emit(wire.NewErrorResponse(wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "%v", err)))
				continue
			}
			if err != nil {
				readErr <- err
				return
			}
			select {
			case read <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	var result error
loop:
	for {
		select {
		case line := <-read:
			p.handle(ctx, line)
		case err := <-readErr:
			if err != io.EOF {
				result = fmt.Errorf("cannot read stdin: %w", err)
			}
			break loop
		case err := <-written:
			result = fmt.Errorf("cannot write stdout: %w", err)
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	p.shutdown()
	cancel()
	p.wg.Wait()
	if result == nil {
		result = <-written // what was queued is written
		if result != nil {
			result = fmt.Errorf("cannot write stdout: %w", result)
		}
	}
	return result
}

// handle forwards one line from the client.
func (p *proxy) handle(ctx context.Context, line []byte) {
	m, rpcErr := wire.Decode(line)
	if rpcErr != nil {
		var id wire.ID
		if m != nil {
			id = m.ID
		}
		p.emit(wire.NewErrorResponse(id, rpcErr))
		return
	}
	switch {
	case m.IsRequest():
		if m.Method == wire.MethodInitialize {
			m = p.declareURLElicitation(m)
		}
		select {
		case p.inFlight <- struct{}{}:
		case <-ctx.Done():
			return
		}
		rctx, cancel := context.WithCancel(ctx)
		pr := &pendingRequest{method: m.Method, id: m.ID, cancel: cancel, request: m}
		p.mu.Lock()
		p.pending[m.ID.String()] = pr
		p.mu.Unlock()
		// The first message chooses the transport: nothing else goes
		// before it. Later requests are sent concurrently (a server that
		// answers with JSON sends its headers only with the result).
		p.mu.Lock()
		first := p.up == nil
		p.mu.Unlock()
		if !first {
			p.spawn(func(context.Context) { p.request(rctx, pr, m) })
			return
		}
		read, err := p.send(rctx, m)
		if err != nil || read == nil {
			p.finish(rctx, pr, nil, err)
			return
		}
		p.spawn(func(context.Context) { p.finish(rctx, pr, read, nil) })
	case m.Method == methodCancelled:
		p.cancelled(ctx, m)
	default: // a notification, or a response to the server's request
		if _, err := p.send(ctx, m); err != nil && ctx.Err() == nil {
			p.cl.UI.Warn(fmt.Sprintf("cannot forward %s: %v", describe(m), err))
		}
	}
}

// request sends a request of the client and reads its answer.
func (p *proxy) request(ctx context.Context, pr *pendingRequest, m *wire.Message) {
	read, err := p.send(ctx, m)
	p.finish(ctx, pr, read, err)
}

// finish reads a request's answer (read; nil when it comes on the legacy
// SSE stream) or reports the failure to send it (err). A client that did
// not declare elicitation.url gets no -32042 URLElicitationRequired: the
// proxy follows the sign-ins as call does and sends the request once more
// (its answer, whatever it is, goes to the client).
func (p *proxy) finish(ctx context.Context, pr *pendingRequest, read readFunc, err error) {
	if err == nil && read != nil {
		var held *wire.Message
		deliver := p.fromServer
		if !p.clientURLElicitation() && pr.request != nil {
			deliver = func(m *wire.Message, raw []byte) error {
				if m.IsResponse() && m.Error != nil && m.Error.Code == wire.CodeURLElicitationRequired && held == nil {
					held = m
					return nil
				}
				return p.fromServer(m, raw)
			}
		}
		err = read(ctx, deliver)
		if err == nil && held != nil {
			err = p.followAndRetry(ctx, pr, held)
		}
		if ctx.Err() != nil {
			err = nil // cancelled: by the client, or the proxy ends
		}
	}
	if err != nil {
		p.fail(pr, err)
	}
	if err != nil || read != nil {
		p.settle(pr)
	}
}

// followAndRetry follows the URL elicitations of a -32042 answer (shown
// on stderr, opened in the browser, completion awaited as call does) and
// sends the request once more, its answer going to the client.
func (p *proxy) followAndRetry(ctx context.Context, pr *pendingRequest, answer *wire.Message) error {
	token := ""
	if held := p.auth.Current(); held != nil {
		token = held.AccessToken
	}
	asked, err := p.cl.FollowSignIns(ctx, p.req.Target, pr.method, answer.Error, pr.request.Params, p.req.SignIn, token)
	if !asked {
		return p.fromServerMessage(answer)
	}
	if err != nil {
		p.cl.UI.Warn(err.Error())
		return p.fromServerMessage(answer)
	}
	read, err := p.send(ctx, pr.request)
	if err != nil || read == nil {
		return err
	}
	return read(ctx, p.fromServer)
}

// fromServerMessage passes a decoded message of the server to the client.
func (p *proxy) fromServerMessage(m *wire.Message) error {
	b, err := wire.Encode(m)
	if err != nil {
		return err
	}
	return p.fromServer(m, b)
}

// send sends m upstream, connecting first (the first message chooses the
// transport).
func (p *proxy) send(ctx context.Context, m *wire.Message) (readFunc, error) {
	p.mu.Lock()
	up := p.up
	p.mu.Unlock()
	if up != nil {
		return up.send(ctx, m)
	}
	up, read, err := p.connect(ctx, m)
	if up != nil {
		p.mu.Lock()
		p.up = up
		p.mu.Unlock()
	}
	return read, err
}

// settle forgets a request once its answer was given or failed, or it
// was cancelled: it leaves pending, its reading stops, and its in-flight
// slot is free. A legacy SSE request stays (slot held) until its response
// comes on the stream.
func (p *proxy) settle(pr *pendingRequest) {
	pr.settled.Do(func() {
		p.mu.Lock()
		if p.pending[pr.id.String()] == pr {
			delete(p.pending, pr.id.String())
		}
		p.mu.Unlock()
		pr.cancel()
		<-p.inFlight
	})
}

// cancelled forwards the client's notifications/cancelled and stops
// reading the cancelled request's answer (MCP "Cancellation": the server
// sends none).
func (p *proxy) cancelled(ctx context.Context, m *wire.Message) {
	if _, err := p.send(ctx, m); err != nil && ctx.Err() == nil {
		logger(p.cl).Debug("cannot forward the cancellation", "err", err)
	}
	var params struct {
		RequestID wire.ID `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &params) != nil || params.RequestID.IsZero() {
		return
	}
	p.mu.Lock()
	pr := p.pending[params.RequestID.String()]
	p.mu.Unlock()
	if pr != nil {
		p.settle(pr)
	}
}

// fromServer passes a message of the server to the client, except a URL
// elicitation the client cannot show, which agentauth answers itself.
func (p *proxy) fromServer(m *wire.Message, raw []byte) error {
	switch {
	case m.IsResponse():
		p.mu.Lock()
		pr := p.pending[m.ID.String()]
		p.mu.Unlock()
		if pr != nil {
			defer p.settle(pr) // its answer is read
		}
	case m.IsRequest() && m.Method == wire.MethodElicitationCreate && !p.clientURLElicitation() && isURLMode(m):
		p.spawn(func(ctx context.Context) { p.elicit(ctx, m) })
		return nil
	}
	select {
	case p.out <- wire.Compact(raw):
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// elicit answers a URL elicitation as call does (show, open, accept).
func (p *proxy) elicit(ctx context.Context, m *wire.Message) {
	res, rerr := p.cl.AnswerServerRequest(ctx, p.req.Target, p.req.SignIn, m)
	reply := wire.NewErrorResponse(m.ID, rerr)
	if rerr == nil {
		var err error
		if reply, err = wire.NewResult(m.ID, res); err != nil {
			return
		}
	}
	if _, err := p.send(ctx, reply); err != nil && ctx.Err() == nil {
		p.cl.UI.Warn(fmt.Sprintf("cannot answer the server's elicitation: %v", err))
	}
}

func isURLMode(m *wire.Message) bool {
	var el wire.URLElicitation
	return json.Unmarshal(m.Params, &el) == nil && el.Mode == "url"
}

func (p *proxy) clientURLElicitation() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clientURL
}

// declareURLElicitation notes whether the client's initialize declares
// elicitation.url and, when it does not, declares it on its behalf:
// agentauth then opens such elicitations itself.
func (p *proxy) declareURLElicitation(m *wire.Message) *wire.Message {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return m
	}
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(params["capabilities"], &caps) // absent or not an object: none
	var elicitation map[string]json.RawMessage
	_ = json.Unmarshal(caps["elicitation"], &elicitation)
	if _, ok := elicitation["url"]; ok {
		p.mu.Lock()
		p.clientURL = true
		p.mu.Unlock()
		return m
	}
	if elicitation == nil {
		elicitation = map[string]json.RawMessage{}
	} else if len(elicitation) == 0 {
		// An empty elicitation object declares form mode (MCP 2025-11-25
		// "Elicitation", Capabilities): keep it declared.
		elicitation["form"] = json.RawMessage(`{}`)
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	elicitation["url"] = json.RawMessage(`{}`)
	caps["elicitation"], _ = json.Marshal(elicitation)
	params["capabilities"], _ = json.Marshal(caps)
	raw, err := json.Marshal(params)
	if err != nil {
		return m
	}
	out := *m
	out.Params = raw
	return &out
}

// fail answers a request with the JSON-RPC error its failure means.
func (p *proxy) fail(pr *pendingRequest, err error) {
	p.mu.Lock()
	_, still := p.pending[pr.id.String()]
	p.mu.Unlock()
	if !still {
		return // answered, or cancelled by the client
	}
	var rpc *wire.Error
	if errors.As(err, &rpc) {
		p.emit(wire.NewErrorResponse(pr.id, rpc))
		return
	}
	msg := fmt.Sprintf("agentauth proxy: %s failed: %v", pr.method, err)
	var auth *client.AuthError
	if errors.As(err, &auth) && auth.Hint != "" {
		msg += " (to log in, run: " + auth.Hint + ")"
	}
	p.cl.UI.Warn(msg)
	p.emit(wire.NewErrorResponse(pr.id, wire.Errorf(codeProxyError, "%s", msg)))
}

// failPending answers every request under way with an error (the legacy
// stream ended).
func (p *proxy) failPending(why string) {
	p.mu.Lock()
	var prs []*pendingRequest
	for _, pr := range p.pending {
		prs = append(prs, pr)
	}
	p.mu.Unlock()
	for _, pr := range prs {
		p.fail(pr, errors.New(why))
		p.settle(pr)
	}
}

// shutdown cancels the requests under way at the server and ends the
// session, within proxyCloseTimeout.
func (p *proxy) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), proxyCloseTimeout)
	defer cancel()
	p.mu.Lock()
	up := p.up
	var prs []*pendingRequest
	for _, pr := range p.pending {
		prs = append(prs, pr)
	}
	p.pending = map[string]*pendingRequest{}
	p.mu.Unlock()
	for _, pr := range prs {
		pr.cancel()
		if up == nil {
			continue
		}
		n, err := wire.NewNotification(methodCancelled, map[string]any{"requestId": pr.id, "reason": "the client went away"})
		if err == nil {
			_, _ = up.send(ctx, n)
		}
	}
	if up != nil {
		up.close(ctx)
	}
}

// emit queues a message of the proxy's own for stdout.
func (p *proxy) emit(m *wire.Message) {
	b, err := wire.Encode(m)
	if err != nil {
		return
	}
	select {
	case p.out <- b:
	case <-p.ctx.Done():
	}
}

// write copies the queue to out, one message per line; once ctx ends it
// writes what is still queued and returns.
func (p *proxy) write(ctx context.Context, out io.Writer) error {
	line := func(b []byte) error {
		buf := make([]byte, 0, len(b)+1)
		_, err := out.Write(append(append(buf, b...), '\n'))
		return err
	}
	for {
		select {
		case b := <-p.out:
			if err := line(b); err != nil {
				return err
			}
		case <-ctx.Done():
			for {
				select {
				case b := <-p.out:
					if err := line(b); err != nil {
						return err
					}
				default:
					return nil
				}
			}
		}
	}
}

// spawn runs f in a goroutine Proxy waits for.
func (p *proxy) spawn(f func(ctx context.Context)) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f(p.ctx)
	}()
}

// describe names a message for a log line (never its params).
func describe(m *wire.Message) string {
	if m.Method != "" {
		return m.Method
	}
	return "the response to request " + m.ID.String()
}

// logger is cl's Logger, or one that discards.
func logger(cl *client.Client) *slog.Logger {
	if cl.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cl.Logger
}
