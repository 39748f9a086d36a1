package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

// A call on its way through the controls: its refusals and its audit
// record.

// call is one request on its way through the gateway.
type call struct {
	m         *Mount
	c         Caller
	msg       *wire.Message
	tool      string
	stateless bool
	secrets   []string  // tokens serve holds for this call: scrubbed from answers
	secretBuf [2]string // secrets' first backing array
	started   time.Time
	redacted  atomic.Int64
	decision  string
	reason    string
	errCode   int
	audited   bool
	// ctx is the call's context for the backend, ended when the caller
	// goes away, the backend's timeout passes (timedOut) or the call is
	// over.
	ctx      callCtx
	timedOut atomic.Bool
	// The watch of the caller (watchCaller, endWatch).
	watchMu   sync.Mutex
	watchOver bool
	stopWatch func() bool
}

// callCtx is a call's context: its parent's values and deadline, ended
// by end or its parent's end. It is context.WithCancel's context that
// also runs one function when it ends (abortWatch, for the connection the
// backend answers on), which saves the call a context.AfterFunc and the
// channel and child map of a second context. Its Err says it ended;
// context.Cause of it is its parent's (the gateway reads Err, and a
// context made from it gets Err as its cause).
type callCtx struct {
	parent context.Context
	mu     sync.Mutex
	done   chan struct{} // made by Done, closed by end
	err    error
	abort  func() // watch's, run once by end
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *callCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end ends the context (context.Canceled), once, and runs the watched
// function.
func (c *callCtx) end() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	f := c.abort
	c.abort = nil
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// watch arranges for f to run once when the context ends, at once if it
// has; it reports false, doing nothing, while it watches another.
func (c *callCtx) watch(f func()) bool {
	c.mu.Lock()
	if c.abort != nil {
		c.mu.Unlock()
		return false
	}
	if c.err != nil {
		c.mu.Unlock()
		f()
		return true
	}
	c.abort = f
	c.mu.Unlock()
	return true
}

// unwatch reports whether the watched function had not run, and now
// will not.
func (c *callCtx) unwatch() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := c.abort != nil
	c.abort = nil
	return ok
}

// stop ends the call's context when its caller goes away (the parent
// context ended; see watchCaller) or else, called by the call's timer,
// when the backend's timeout passes (timedOut).
func (k *call) stop() {
	if k.ctx.parent.Err() == nil {
		k.timedOut.Store(true)
	}
	k.ctx.end()
}

// callerWatchAfter is how long a call waits for its backend before it
// watches its caller: from then on the caller going away (its request's
// context ending: net/http notices a closed connection) ends the call's
// context, and so the backend's request. A call answered sooner does not
// watch at all: context.AfterFunc on every request's context (a child
// entry in net/http's context, made and removed for each call) was about
// 2 % of serve's CPU per forwarded call, where a call that is not
// watched costs a timer. A caller gone before then costs its backend at
// most this long.
const callerWatchAfter = 50 * time.Millisecond

// watchCaller, run by the call's timer once it has waited
// callerWatchAfter, watches the caller until endWatch.
func (k *call) watchCaller() {
	k.watchMu.Lock()
	defer k.watchMu.Unlock()
	if !k.watchOver {
		k.stopWatch = context.AfterFunc(k.ctx.parent, k.stop)
	}
}

// endWatch stops the call's watch timer t, and the watch if it started.
func (k *call) endWatch(t *time.Timer) {
	if t.Stop() {
		return // it never ran
	}
	k.watchMu.Lock()
	k.watchOver = true
	stop := k.stopWatch
	k.watchMu.Unlock()
	if stop != nil {
		stop()
	}
}

// refuse answers a call the gateway does not forward, and audits it.
func (k *call) refuse(w http.ResponseWriter, status int, rerr *wire.Error, reason string) {
	k.decision, k.errCode = "denied", rerr.Code
	if reason != "" {
		k.reason = reason
	} else if k.reason == "" {
		k.reason = rerr.Message
	}
	writeError(w, status, k.msg.ID, rerr)
	if k.msg.IsRequest() {
		k.audit()
	}
}

func writeError(w http.ResponseWriter, status int, id wire.ID, rerr *wire.Error) {
	setJSONHeaders(w.Header())
	w.WriteHeader(status)
	w.Write(mustEncode(wire.NewErrorResponse(id, rerr)))
}

// audit writes the call's one audit record: who, which backend and
// method or tool, the decision, redactions and latency; never arguments,
// results or tokens.
func (k *call) audit() {
	if k.audited {
		return
	}
	k.audited = true
	if k.decision == "denied" {
		k.m.g.tel.Refusal("policy")
		k.m.g.tel.Audit(ops.EventPolicyDenied, "face", "gateway", "sub", k.c.Subject(), "client_id", k.c.ClientID(),
			"backend", k.m.b.Name, "method", k.msg.Method, "tool", k.tool, "reason", k.reason)
	}
	// The record goes to the handler directly: Logger.LogAttrs would
	// also look up its caller's program counter (runtime.Callers), which
	// serve's handlers do not print (no AddSource).
	h := k.m.g.callLog.Handler()
	if !h.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	now := time.Now()
	r := slog.NewRecord(now, slog.LevelInfo, "gateway call", 0)
	// One AddAttrs: the record keeps five attributes in itself and
	// allocates once for the rest.
	attrs := [10]slog.Attr{slog.String("principal", k.c.Subject()), slog.String("client_id", k.c.ClientID()),
		slog.String("backend", k.m.b.Name), slog.String("method", k.msg.Method), slog.String("decision", k.decision),
		slog.Int64("redactions", k.redacted.Load()), slog.Float64("latency_ms", float64(now.Sub(k.started).Microseconds())/1000)}
	n := 7
	if k.tool != "" {
		attrs[n], n = slog.String("tool", k.tool), n+1
	}
	if k.reason != "" {
		attrs[n], n = slog.String("reason", k.reason), n+1
	}
	if k.errCode != 0 {
		attrs[n], n = slog.Int("error_code", k.errCode), n+1
	}
	r.AddAttrs(attrs[:n]...)
	_ = h.Handle(context.Background(), r)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	setJSONHeaders(w.Header())
	w.WriteHeader(status)
	w.Write(b)
}

// The values setJSONHeaders shares between answers: a header's value
// slice is replaced, never written in place (Header.Add appends to a
// full slice, which copies it).
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// setJSONHeaders is Set of Content-Type application/json and
// Cache-Control no-store without allocating their values.
func setJSONHeaders(h http.Header) {
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
}
