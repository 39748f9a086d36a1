package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentauth/agentauth/wire"
)

// Serve answers one HTTP request to the backend's path for caller c, whose
// token serve has checked (MCP Streamable HTTP: POST a message, GET the
// session's stream, DELETE the session).
func (m *Mount) Serve(w http.ResponseWriter, r *http.Request, c Caller) {
	switch r.Method {
	case http.MethodPost:
		m.servePost(w, r, c)
	case http.MethodGet:
		m.serveGet(w, r, c)
	case http.MethodDelete:
		m.serveDelete(w, r, c)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: %s is not served here; POST a JSON-RPC message, GET the session's stream or DELETE the session", r.Method))
	}
}

func (m *Mount) servePost(w http.ResponseWriter, r *http.Request, c Caller) {
	taken, ok := m.admit(w, r, c)
	if !ok {
		return
	}
	defer taken.release()
	body, msg, ok := m.readMessage(w, r)
	if !ok {
		return
	}
	k := &call{m: m, c: c, msg: msg, started: time.Now(), decision: "allowed",
		stateless: strings.TrimSpace(r.Header.Get("Mcp-Protocol-Version")) == statelessVersion}
	k.secrets = k.secretBuf[:0]
	if tok := bearerToken(r); tok != "" {
		k.secrets = append(k.secrets, tok)
	}

	// The session: the caller's own, a new one for initialize, or none.
	var s *session
	var cn conn
	stateless := false // cn is the mount's stateless HTTP session
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" && m.b.Command != "" && m.g.check != nil {
		// serve answers or bridges it itself: no backend checks it.
		if status, rerr := m.g.check(r, msg, nil); rerr != nil {
			k.refuse(w, status, rerr, "invalid request")
			return
		}
	}
	switch {
	case sid != "":
		if s = m.session(sid, c); s == nil {
			k.refuse(w, http.StatusNotFound, wire.Errorf(wire.CodeInvalidRequest, "invalid request: session not found (it ended or serve restarted); initialize a new session"), "unknown session")
			return
		}
		cn = s.conn
	case m.b.Command != "" && k.stateless && m.b.UpstreamEnv == "":
		// MCP 2026-07-28 to a stdio backend: the backend's shared
		// process, with this request as a caller of its own.
		sc := m.sharedProcess().conn(c, true)
		defer sc.end(context.Background())
		cn = sc
	case m.b.Command != "" && k.stateless:
		k.refuse(w, http.StatusBadRequest, wire.Errorf(wire.CodeInvalidRequest,
			"invalid request: backend %s runs one process per session with the session's upstream token: send initialize (MCP-Protocol-Version 2025-11-25 or older), then its Mcp-Session-Id", m.b.Name), "no session")
		return
	case msg.Method == wire.MethodInitialize:
		cn = m.dial(c)
		var err error
		if s, err = m.newSession(c, cn); err != nil {
			k.refuse(w, http.StatusServiceUnavailable, wire.Errorf(wire.CodeInternalError, "internal error: %v", err), "too many sessions")
			return
		}
	case m.b.Command != "":
		k.refuse(w, http.StatusBadRequest, wire.Errorf(wire.CodeInvalidRequest,
			"invalid request: backend %s (stdio) needs a session: send initialize first, then its Mcp-Session-Id (or MCP-Protocol-Version %s, which needs none)", m.b.Name, statelessVersion), "no session")
		return
	default:
		cn = m.statelessConn()
		stateless = true
	}

	out := forwardHeaders(r.Header)
	if stateless && len(out) <= maxPooledHeader {
		// The stateless HTTP session keeps nothing of out past the call.
		defer putHeader(out)
	}
	// The backend's credential is set before the checks, whose own
	// tools/list (schema.go) must carry it too.
	if !m.identify(w, r, k, out) {
		if s != nil && msg.Method == wire.MethodInitialize {
			m.dropSession(s)
		}
		return
	}
	if m.b.Upstream != "" {
		if tok := m.upstreamToken(r.Context(), c); tok != "" {
			k.secrets = append(k.secrets, tok)
			if m.b.UpstreamHeader != "" {
				out.Set(m.b.UpstreamHeader, tok)
			}
			if sc, ok := cn.(*stdioConn); ok {
				sc.setToken(tok)
			}
		}
	}
	raw := body
	if msg.IsRequest() {
		var ok bool
		if raw, ok = k.check(w, r, cn, out, body); !ok {
			return
		}
		if k.tool != "" && sid == "" && m.b.Command != "" && m.g.check != nil {
			// The Mcp-Param-* headers of the tool's schema, now known.
			if hp := m.tools.headerParams(k.tool); len(hp) > 0 {
				if status, rerr := m.g.check(r, msg, hp); rerr != nil {
					k.refuse(w, status, rerr, "header mismatch")
					return
				}
			}
		}
	}
	if !k.standardHeaders(w, r, out) {
		return
	}

	k.ctx.parent = r.Context()
	defer k.ctx.end()
	defer k.endWatch(time.AfterFunc(callerWatchAfter, k.watchCaller))
	timer := time.AfterFunc(m.timeout, k.stop)
	defer timer.Stop()
	rep, err := cn.post(&k.ctx, msg, raw, out)
	if err != nil {
		if s != nil && (errors.Is(err, errSessionGone) || msg.Method == wire.MethodInitialize) {
			m.dropSession(s)
		}
		k.fail(w, err, k.timedOut.Load(), false)
		return
	}
	defer rep.close()
	if s != nil && msg.Method == wire.MethodInitialize && rep.status < http.StatusMultipleChoices {
		// A refusal (400 -32022, 404) names no session: serve drops it.
		w.Header().Set("Mcp-Session-Id", s.id)
	}
	if !msg.IsRequest() {
		// A notification or the client's answer to a backend's request.
		for {
			if _, err := rep.next(); err != nil {
				break
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	k.relay(w, rep, timer, &k.timedOut)
	if msg.Method == wire.MethodInitialize && k.errCode != 0 && s != nil {
		m.dropSession(s)
		s.conn.end(context.Background())
	}
	k.audit()
}

// readMessage reads a POST's JSON-RPC message, or answers why not (413,
// 400) and reports false: one message, not a batch, that names no member
// of its envelope twice, since the body goes on as sent and must say one
// thing to every parser.
func (m *Mount) readMessage(w http.ResponseWriter, r *http.Request) ([]byte, *wire.Message, bool) {
	body, err := readBody(w, r, m.maxMsg)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: the message exceeds %d bytes", m.maxMsg))
			return nil, nil, false
		}
		writeError(w, http.StatusBadRequest, wire.ID{}, wire.Errorf(wire.CodeParseError, "parse error: cannot read the body"))
		return nil, nil, false
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		writeError(w, http.StatusBadRequest, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: this gateway takes one JSON-RPC message per POST, not a batch"))
		return nil, nil, false
	}
	// body is this call's own and never written: the message may share it.
	msg, derr := wire.DecodeOwned(body)
	if derr != nil {
		var id wire.ID
		if msg != nil {
			id = msg.ID
		}
		writeError(w, http.StatusBadRequest, id, derr)
		return nil, nil, false
	}
	if name, dup := envelopeDuplicate(body); dup {
		writeError(w, http.StatusBadRequest, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest,
			"invalid request: the message names the member %s twice (names that differ only in case count as one); send each once", wire.QuoteValue(name)))
		return nil, nil, false
	}
	return body, msg, true
}

// readBody reads a request's body of at most max bytes: into a buffer of
// its Content-Length when it has one (io.ReadAll grows one from 512
// bytes), else through http.MaxBytesReader. Both end with net/http
// seeing the body's end, which starts its watch for the caller going
// away (the request's context).
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= max {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}

// relay writes a backend's answer to a request: one JSON message, or an
// event stream of its frames (each scrubbed, the answer to tools/list
// filtered), ending with an error naming the backend if it fails.
func (k *call) relay(w http.ResponseWriter, rep *reply, timer *time.Timer, timedOut *atomic.Bool) {
	if rep.longLived {
		timer.Stop()
	}
	next := func() (frame, error) {
		if !rep.longLived {
			timer.Reset(k.m.timeout)
		}
		return rep.next()
	}
	first, err := next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = backendErr(k.m.b.Name, "ended its answer without a response")
		}
		k.fail(w, err, timedOut.Load(), false)
		return
	}
	if !rep.stream || rep.flexible && k.isAnswer(first.data) {
		data := k.process(first.data)
		setJSONHeaders(w.Header())
		status := rep.status
		if rep.statusOf != nil {
			status = rep.statusOf(data)
		}
		w.WriteHeader(status)
		w.Write(data)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	f := first
	resumable, answered := false, false
	for {
		resumable = resumable || f.id != ""
		answered = k.isAnswer(f.data)
		writeEvent(w, f, k.process(f.data))
		rc.Flush()
		if answered {
			// The stream ends with the answer (MCP "Transports"); a
			// client may close its side as soon as it has it.
			return
		}
		if f, err = next(); err != nil {
			break
		}
	}
	// A stream closed before the answer but after an event id is one the
	// client resumes with GET and Last-Event-ID (MCP 2025-11-25
	// "Transports", Resumability and Redelivery).
	if !errors.Is(err, io.EOF) || !resumable {
		if errors.Is(err, io.EOF) {
			err = backendErr(k.m.b.Name, "ended its answer without a response")
		}
		k.fail(w, err, timedOut.Load(), true)
	}
}

// writeEvent writes one frame as a server-sent event, its id and retry
// kept (a data-less priming event stays data-less).
func writeEvent(w io.Writer, f frame, data []byte) {
	var b bytes.Buffer
	if f.id != "" {
		b.WriteString("id: ")
		b.WriteString(f.id)
		b.WriteByte('\n')
	}
	if f.retry != "" {
		b.WriteString("retry: ")
		b.WriteString(f.retry)
		b.WriteByte('\n')
	}
	if f.dataSeen || len(data) > 0 {
		b.WriteString("event: message\n")
		for _, line := range bytes.Split(data, []byte("\n")) {
			b.WriteString("data: ")
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	w.Write(b.Bytes())
}

// isAnswer reports whether data is the response to the call's request.
func (k *call) isAnswer(data []byte) bool {
	head, ok := readHead(data, false)
	return ok && head.Method == "" && sameID(head.ID, k.msg.ID)
}

// process applies the gateway's controls to one backend message: the
// answer to tools/list is filtered by policy and teaches the schemas;
// every message is scrubbed.
func (k *call) process(data []byte) []byte {
	if len(data) == 0 {
		return data
	}
	if !utf8.Valid(data) {
		// JSON text is UTF-8 (RFC 8259 §8.1): what a backend sends
		// otherwise reaches no client raw; each run of invalid bytes
		// becomes a U+FFFD, as decoders show it.
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	// The result is not copied out (it can be large) but for tools/list.
	head, ok := readHead(data, true)
	if !ok {
		k.errCode = wire.CodeInternalError
		return mustEncode(wire.NewErrorResponse(k.msg.ID, wire.Errorf(wire.CodeInternalError, "internal error: backend %s sent a message that is not JSON", k.m.b.Name)))
	}
	if head.Method == "" && sameID(head.ID, k.msg.ID) {
		if head.Error != nil {
			k.errCode = head.Error.Code
		}
		if k.msg.Method == methodToolsList {
			data = k.listed(data)
		}
	}
	out, n := k.m.g.scrubber.scrub(data, k.secrets)
	k.redacted.Add(int64(n))
	return out
}

// listed learns the tools of the answer data to tools/list and returns
// it with the tools the caller may not call taken out.
func (k *call) listed(data []byte) []byte {
	var list struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &list) == nil && list.Result != nil {
		k.m.learnTools(list.Result)
		if filtered, ok := k.m.filterTools(list.Result, k.c); ok {
			data = replaceResult(data, filtered)
		}
	}
	return data
}

// replaceResult swaps a response's result.
func replaceResult(data []byte, result json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	m["result"] = result
	b, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return b
}

// fail answers a call the backend could not complete with a JSON-RPC error
// naming the backend: in the open event stream, or as the body.
func (k *call) fail(w http.ResponseWriter, err error, timedOut, streaming bool) {
	var rerr *wire.Error
	var be *errBackend
	switch {
	case timedOut:
		rerr = wire.Errorf(wire.CodeInternalError, "internal error: backend %s did not answer within %s", k.m.b.Name, k.m.timeout)
		k.reason = "timeout"
	case errors.Is(err, errSessionGone):
		k.refuse(w, http.StatusNotFound, wire.Errorf(wire.CodeInvalidRequest, "invalid request: backend %s no longer knows the session; initialize a new session", k.m.b.Name), "session gone")
		return
	case errors.As(err, &be):
		rerr = wire.Errorf(wire.CodeInternalError, "internal error: %v", be)
		k.reason = be.msg
	case errors.Is(err, context.Canceled):
		k.decision, k.reason = "error", "caller went away"
		k.audit()
		return
	default:
		rerr = wire.Errorf(wire.CodeInternalError, "internal error: backend %s failed: %v", k.m.b.Name, err)
		k.reason = err.Error()
	}
	k.decision, k.errCode = "error", rerr.Code
	k.m.g.log.Warn("backend call failed", "backend", k.m.b.Name, "method", k.msg.Method, "err", k.reason)
	if !k.msg.IsRequest() {
		writeError(w, http.StatusBadGateway, wire.ID{}, rerr)
		return
	}
	if streaming {
		writeEvent(w, frame{}, mustEncode(wire.NewErrorResponse(k.msg.ID, rerr)))
	} else {
		status := http.StatusOK
		if k.stateless {
			status = http.StatusInternalServerError
		}
		writeError(w, status, k.msg.ID, rerr)
	}
	k.audit()
}

func (m *Mount) serveGet(w http.ResponseWriter, r *http.Request, c Caller) {
	sid := r.Header.Get("Mcp-Session-Id")
	var cn conn
	switch {
	case sid != "":
		s := m.session(sid, c)
		if s == nil {
			writeError(w, http.StatusNotFound, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: session not found; initialize a new session"))
			return
		}
		cn = s.conn
	case m.b.Command == "":
		cn = m.statelessConn()
	default:
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: GET needs the Mcp-Session-Id of a session"))
		return
	}
	k := &call{m: m, c: c, msg: &wire.Message{}, started: time.Now()}
	k.secrets = k.secretBuf[:0]
	if tok := bearerToken(r); tok != "" {
		k.secrets = append(k.secrets, tok)
	}
	out := forwardHeaders(r.Header)
	if m.b.Upstream != "" && m.b.UpstreamHeader != "" {
		if tok := m.upstreamToken(r.Context(), c); tok != "" {
			k.secrets = append(k.secrets, tok)
			out.Set(m.b.UpstreamHeader, tok)
		}
	}
	if !m.identify(w, r, k, out) {
		return
	}
	rep, err := cn.listen(r.Context(), out)
	if err != nil {
		if errors.Is(err, errListening) {
			writeError(w, http.StatusConflict, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: %v", err))
			return
		}
		if errors.Is(err, errSessionGone) {
			writeError(w, http.StatusNotFound, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: backend %s no longer knows the session; initialize a new session", m.b.Name))
			return
		}
		writeError(w, http.StatusBadGateway, wire.ID{}, wire.Errorf(wire.CodeInternalError, "internal error: %v", err))
		return
	}
	defer rep.close()
	if !rep.stream {
		if rep.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", "POST, DELETE")
		}
		w.WriteHeader(rep.status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	for {
		f, err := rep.next()
		if err != nil {
			return
		}
		writeEvent(w, f, k.process(f.data))
		rc.Flush()
	}
}

func (m *Mount) serveDelete(w http.ResponseWriter, r *http.Request, c Caller) {
	s := m.session(r.Header.Get("Mcp-Session-Id"), c)
	if s == nil {
		writeError(w, http.StatusNotFound, wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: session not found"))
		return
	}
	m.dropSession(s)
	s.conn.end(r.Context())
	w.WriteHeader(http.StatusNoContent)
}
