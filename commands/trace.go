package commands

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// This file is --verbose (or AGENTAUTH_DEBUG=api): a trace on stderr of
// every HTTP request and response line and every JSON-RPC method, with
// secrets masked.

// maxTracedBody bounds the request body read to trace a form or a
// JSON-RPC method; a larger one is traced by its size only. It bounds
// too the response body (or SSE line) kept to trace a JSON-RPC answer; a
// larger one is not traced.
const maxTracedBody = 64 << 10

// maxTracedErrorMessage bounds, in bytes, the JSON-RPC error message the
// trace shows; a longer one is cut with "…".
const maxTracedErrorMessage = 200

// secretParams are the query and form parameters whose values --verbose
// masks: tokens, codes, verifiers, secrets (RFC 6749, 7636, 7009, 7523,
// 8628, 8693) and the agent host's connection token.
var secretParams = map[string]bool{
	"code": true, "code_verifier": true, "state": true, "client_secret": true, "refresh_token": true,
	"access_token": true, "token": true, "id_token": true, "device_code": true, "user_code": true,
	"assertion": true, "client_assertion": true, "subject_token": true, "actor_token": true,
	"password": true, "nonce": true, "tkn": true,
}

// debugWanted says whether AGENTAUTH_DEBUG asks for the API trace:
// "api", "1" or "true", or a comma-separated list holding "api".
func debugWanted() bool {
	for _, v := range strings.Split(os.Getenv("AGENTAUTH_DEBUG"), ",") {
		switch strings.TrimSpace(strings.ToLower(v)) {
		case "api", "1", "true":
			return true
		}
	}
	return false
}

// tracer writes the trace lines, one at a time.
type tracer struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *tracer) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "[trace] "+format+"\n", args...)
}

// traceHTTP returns hc with a transport that traces through t.
func (t *tracer) traceHTTP(hc *http.Client) *http.Client {
	c := *hc
	c.Transport = &traceTransport{base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), t: t}
	return &c
}

// traceTransport traces each request line (method, URL with secret
// parameters masked, the Authorization scheme without its credentials, a
// form body masked, a JSON-RPC method) and each response line (status,
// content type, WWW-Authenticate).
type traceTransport struct {
	base http.RoundTripper
	t    *tracer
}

func (tr *traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	line := "> " + req.Method + " " + maskURL(req.URL)
	if a := req.Header.Get("Authorization"); a != "" {
		scheme, _, _ := strings.Cut(a, " ")
		line += " (Authorization: " + scheme + " ***)"
	}
	tr.t.printf("%s", safeText(line))
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength >= 0 && req.ContentLength <= maxTracedBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if s := describeBody(req.Header.Get("Content-Type"), body); s != "" {
			tr.t.printf(">   %s", safeText(s))
		}
	}
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		tr.t.printf("< error: %s", safeText(wire.RedactTarget(err.Error())))
		return nil, err
	}
	line = "< " + resp.Proto + " " + resp.Status
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		line += " (" + ct + ")"
	}
	tr.t.printf("%s", safeText(line))
	ct := resp.Header.Get("Content-Type")
	if sse := strings.HasPrefix(ct, "text/event-stream"); sse || strings.HasPrefix(ct, "application/json") {
		resp.Body = &traceBody{ReadCloser: resp.Body, t: tr.t, sse: sse}
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		tr.t.printf("<   WWW-Authenticate: %s", safeText(h))
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		if u, err := url.Parse(loc); err == nil {
			tr.t.printf("<   Location: %s", safeText(maskURL(u)))
		}
	}
	return resp, nil
}

// traceBody traces the JSON-RPC answers of a response body as it is
// read: a JSON body once, at its end or when closed; an event stream at
// each complete "data:" line.
type traceBody struct {
	io.ReadCloser
	t    *tracer
	sse  bool
	buf  []byte
	over bool // buf passed maxTracedBody: this body (line) is not traced
	done bool
}

func (b *traceBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if b.sse && c == '\n' {
			b.flush()
			continue
		}
		if len(b.buf) >= maxTracedBody {
			b.over = true
			continue
		}
		b.buf = append(b.buf, c)
	}
	if err == io.EOF {
		b.flush()
	}
	return n, err
}

func (b *traceBody) Close() error {
	b.flush()
	return b.ReadCloser.Close()
}

// flush traces the JSON-RPC answer held in buf, if any, and empties it.
func (b *traceBody) flush() {
	msg, over := b.buf, b.over
	b.buf, b.over = b.buf[:0], false
	if b.sse {
		data, ok := bytes.CutPrefix(bytes.TrimRight(msg, "\r"), []byte("data:"))
		if !ok || over {
			return
		}
		msg = data
	} else {
		if b.done || over {
			return
		}
		b.done = true
	}
	if s := rpcSummary(msg); s != "" {
		b.t.printf("<   %s", safeText(s))
	}
}

// maskURL is u with the values of secretParams replaced by ***.
func maskURL(u *url.URL) string {
	m := *u
	m.User = nil
	if m.RawQuery != "" {
		m.RawQuery = maskValues(m.RawQuery)
	}
	return m.String()
}

// maskValues masks the secret values of a query or form string, keeping
// the order of its parameters.
func maskValues(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if ok && (err != nil || secretParams[name]) {
			parts[i] = k + "=***"
		}
	}
	return strings.Join(parts, "&")
}

// describeBody is what the trace shows of a request body: a form with its
// secrets masked, a JSON-RPC method (never its params), else nothing.
func describeBody(contentType string, body []byte) string {
	switch {
	case strings.HasPrefix(contentType, "application/x-www-form-urlencoded"):
		return "form: " + maskValues(string(body))
	case strings.HasPrefix(contentType, "application/json"):
		return rpcSummary(body)
	}
	return ""
}

// rpcSummary names a JSON-RPC message (or batch) by method, id and
// outcome, never by params, result or error data; an error shows its code
// and message (JSON-RPC 2.0 section 5.1), so the trace says why a server
// refused. "" when body is none.
func rpcSummary(body []byte) string {
	var one struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(body, &one) != nil {
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) == nil {
			return fmt.Sprintf("rpc batch of %d", len(batch))
		}
		return ""
	}
	id := ""
	if len(one.ID) > 0 && string(one.ID) != "null" {
		id = " id=" + string(one.ID)
	}
	switch {
	case one.Method != "" && id != "":
		return "rpc request " + one.Method + id
	case one.Method != "":
		return "rpc notification " + one.Method
	case one.Error != nil:
		msg := strings.ToValidUTF8(one.Error.Message, "")
		if len(msg) > maxTracedErrorMessage {
			msg = strings.ToValidUTF8(msg[:maxTracedErrorMessage], "") + "…"
		}
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Sprintf("rpc error %d%s%s", one.Error.Code, id, msg)
	case one.Result != nil:
		return "rpc result" + id
	}
	return ""
}

// traceRPC is the wire.TraceFunc of --verbose.
func (t *tracer) traceRPC(out bool, msg []byte) {
	dir := "<"
	if out {
		dir = ">"
	}
	if s := rpcSummary(msg); s != "" {
		t.printf("%s %s", dir, safeText(s))
	}
}
