package gateway

import (
	"context"
	"log/slog"
	"net/http"
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
	r.AddAttrs(slog.String("principal", k.c.Subject()), slog.String("client_id", k.c.ClientID()),
		slog.String("backend", k.m.b.Name), slog.String("method", k.msg.Method), slog.String("decision", k.decision),
		slog.Int64("redactions", k.redacted.Load()), slog.Float64("latency_ms", float64(now.Sub(k.started).Microseconds())/1000))
	if k.tool != "" {
		r.AddAttrs(slog.String("tool", k.tool))
	}
	if k.reason != "" {
		r.AddAttrs(slog.String("reason", k.reason))
	}
	if k.errCode != 0 {
		r.AddAttrs(slog.Int("error_code", k.errCode))
	}
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
