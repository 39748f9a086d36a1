package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// Forwarding (agentauth proxy): messages another MCP client wrote pass
// through an HTTPSession as they are, with the session's token, session
// id and headers added, and every message the server sends back is handed
// over as the server wrote it.

// maxResumes bounds the reconnections of one broken event stream (MCP
// 2025-11-25 "Transports", Resumability and Redelivery).
const maxResumes = 3

// maxRetryWait bounds the wait before a reconnection, whatever the
// stream's "retry" field says.
const maxRetryWait = 5 * time.Second

// ForwardReply is the server's answer to a forwarded request: a JSON body
// or an event stream, read by Read.
type ForwardReply struct {
	s      *HTTPSession
	resp   *http.Response
	id     ID
	method string
}

// Forward posts m, a message another client wrote, and returns once the
// server answered with its status. A notification or response gets no
// reply (nil; the server answers 202 Accepted); a request gets the reply
// to Read. A message whose _meta names MCP 2026-07-28 goes with that
// version's headers (Mcp-Protocol-Version, Mcp-Method, Mcp-Name).
// Errors are those of Call: *HTTPAuthError, *HTTPStatusError, *Error (a
// 2026-07-28 refusal), ErrSessionExpired.
func (s *HTTPSession) Forward(ctx context.Context, m *Message) (*ForwardReply, error) {
	if v := metaVersion(m); v == MCPStatelessVersion {
		// The client speaks 2026-07-28: so does the session, with its
		// headers (and its JSON-RPC errors on 4xx answers).
		s.mu.Lock()
		s.protocolVersion = v
		s.mu.Unlock()
	}
	body, err := Encode(m)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the message: %w", err)
	}
	resp, err := s.do(ctx, http.MethodPost, body, m, nil)
	var rpcErr *Error
	if m.Method == methodToolsCall && s.stateless() && errors.As(err, &rpcErr) && rpcErr.Code == codeHeaderMismatch {
		// As Call does: the tool wants arguments repeated in
		// Mcp-Param-* headers (2026-07-28 "Transports"); once more.
		if headers, herr := s.paramHeaders(ctx, m.Params); herr == nil && len(headers) > 0 {
			resp, err = s.do(ctx, http.MethodPost, body, m, headers)
		}
	}
	if err != nil {
		return nil, err
	}
	if m.Method == MethodInitialize {
		if err := s.keepSessionID(resp.Header.Get(headerSessionID)); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	if !m.IsRequest() || resp.StatusCode == http.StatusAccepted {
		return nil, drain(resp)
	}
	return &ForwardReply{s: s, resp: resp, id: m.ID, method: m.Method}, nil
}

// metaVersion is the protocol version a request names in its _meta (MCP
// 2026-07-28 "Lifecycle"), or "".
func metaVersion(m *Message) string {
	if len(m.Params) == 0 || m.Params[0] != '{' {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var v string
	if json.Unmarshal(m.Params, &p) != nil || json.Unmarshal(p.Meta[MetaProtocolVersion], &v) != nil {
		return ""
	}
	return v
}

// Read hands each message of the reply to deliver, as the server wrote it
// (raw) and decoded, up to and including the response to the request. An
// event stream that breaks before the response is resumed with GET and
// Last-Event-ID when the server gave its events ids (MCP 2025-11-25
// "Transports", Resumability and Redelivery), at most maxResumes times.
// The response to initialize sets the version later requests carry in
// Mcp-Protocol-Version.
func (r *ForwardReply) Read(ctx context.Context, deliver func(m *Message, raw []byte) error) error {
	resp := r.resp
	defer func() { resp.Body.Close() }()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, r.s.limit+1))
		if err != nil {
			return fmt.Errorf("cannot read the response to %s: %w", r.method, err)
		}
		if int64(len(data)) > r.s.limit {
			return &TooLargeError{Limit: r.s.limit}
		}
		m, err := decodeMessage(data)
		if err != nil {
			return err
		}
		if !answers(m, r.id) {
			return errors.New("the server's JSON body is not the response to this request")
		}
		r.answered(m)
		return deliver(m, data)
	case "text/event-stream":
	default:
		return fmt.Errorf("unexpected content type %q", resp.Header.Get("Content-Type"))
	}
	var lastID string
	var retry time.Duration
	for resumes := 0; ; resumes++ {
		done, err := r.s.readStream(resp.Body, &lastID, &retry, func(m *Message, raw []byte) (bool, error) {
			if answers(m, r.id) {
				r.answered(m)
				return true, deliver(m, raw)
			}
			return false, deliver(m, raw)
		})
		if done || ctx.Err() != nil {
			return err
		}
		if lastID == "" || resumes == maxResumes {
			if err == nil {
				err = errors.New("the server ended the event stream without a response")
			}
			return fmt.Errorf("cannot read the response to %s: %w", r.method, err)
		}
		resp.Body.Close()
		// A failed resume leaves resp, closed, for the deferred Close: a
		// nil one there was a crash (an event id the GET cannot carry).
		next, err := r.s.resume(ctx, lastID, retry)
		if err != nil {
			return fmt.Errorf("cannot resume the response stream of %s: %w", r.method, err)
		}
		resp = next
	}
}

// answered keeps what the response to initialize settles: the version.
func (r *ForwardReply) answered(m *Message) {
	if r.method != MethodInitialize || m.Result == nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(m.Result, &res) == nil && res.ProtocolVersion != "" {
		r.s.mu.Lock()
		r.s.protocolVersion = res.ProtocolVersion
		r.s.mu.Unlock()
	}
}

// readStream reads events until body ends (nil error: the server closed
// it), an error, or handle says done. It keeps the last event id and the
// stream's retry time.
func (s *HTTPSession) readStream(body io.Reader, lastID *string, retry *time.Duration, handle func(*Message, []byte) (bool, error)) (bool, error) {
	events := NewSSEReader(body, s.limit)
	for {
		ev, err := events.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		*lastID, *retry = ev.ID, ev.Retry
		if ev.Type != "message" || ev.Data == "" {
			continue // a priming event (id only) or another event type
		}
		raw := []byte(ev.Data)
		m, err := decodeMessage(raw)
		if err != nil {
			return false, err
		}
		if done, err := handle(m, raw); done || err != nil {
			return done, err
		}
	}
}

// resume opens the stream again after lastID, once the stream's retry
// time (at most maxRetryWait) has passed.
func (s *HTTPSession) resume(ctx context.Context, lastID string, retry time.Duration) (*http.Response, error) {
	if err := sleepCtx(ctx, min(retry, maxRetryWait)); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	resp, err := s.do(ctx, http.MethodGet, nil, nil, h)
	if err != nil {
		return nil, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("the server answered the GET with %q, not an event stream", resp.Header.Get("Content-Type"))
	}
	return resp, nil
}

// ErrNoListenStream is Listen's answer when the server offers no GET
// stream (405, MCP 2025-11-25 "Transports").
var ErrNoListenStream = errors.New("the server offers no stream for messages of its own")

// Listen opens the GET stream on which a server sends requests and
// notifications outside any request (MCP 2025-11-25 "Transports",
// Listening for Messages from the Server) and hands each to deliver until
// ctx ends. A stream the server ends is opened again, with Last-Event-ID
// when its events had ids; maxResumes failures in a row end Listen with
// the last error. A 405 is ErrNoListenStream; a 401 or 403 an
// *HTTPAuthError, for the caller to authorize and Listen again. opened
// (may be nil) is called after each attempt to open the stream, whether
// it opened or not: a caller can hold its next message until the server
// has somewhere to send what that message causes.
func (s *HTTPSession) Listen(ctx context.Context, deliver func(m *Message, raw []byte) error, opened func()) error {
	var lastID string
	var retry time.Duration
	failures := 0
	for first := true; ; first = false {
		var wait time.Duration
		if !first {
			wait = max(retry, time.Second)
		}
		resp, err := s.resume(ctx, lastID, wait)
		if opened != nil {
			opened()
		}
		var se *HTTPStatusError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &se) && se.StatusCode == http.StatusMethodNotAllowed:
			return ErrNoListenStream
		case errors.As(err, new(*HTTPAuthError)) || errors.Is(err, ErrSessionExpired):
			return err
		case err != nil:
			if failures++; failures > maxResumes {
				return err
			}
			continue
		}
		failures = 0
		_, err = s.readStream(resp.Body, &lastID, &retry, func(m *Message, raw []byte) (bool, error) {
			return false, deliver(m, raw)
		})
		resp.Body.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			failures++
		}
	}
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Compact is msg on one line, for a newline-delimited transport: JSON
// from an event stream may span lines.
func Compact(msg []byte) []byte {
	if !bytes.ContainsAny(msg, "\r\n") {
		return msg
	}
	var b bytes.Buffer
	if json.Compact(&b, msg) != nil {
		return msg
	}
	return b.Bytes()
}
