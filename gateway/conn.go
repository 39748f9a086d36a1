package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// conn is one MCP session's link to a backend: an HTTP session
// (httpConn) or a stdio process (stdioConn).
type conn interface {
	// post sends one client message (raw JSON). out holds the headers the
	// backend may see (see forwardHeaders) plus the ones its config adds.
	post(ctx context.Context, msg *wire.Message, raw []byte, out http.Header) (*reply, error)
	// listen opens the stream of messages not tied to a request (the GET
	// stream of MCP Streamable HTTP), resuming after out's Last-Event-ID.
	listen(ctx context.Context, out http.Header) (*reply, error)
	// end ends the backend session: DELETE, or the process group killed.
	end(ctx context.Context)
}

// frame is one message of a backend's answer, with its SSE event id ("" for
// none). An event without data (a resumption priming event) has no data.
type frame struct {
	id       string
	retry    string
	data     []byte
	dataSeen bool
}

// reply is a backend's answer to one POST or GET.
type reply struct {
	status int
	// stream: the answer is an event stream; otherwise at most one frame.
	stream bool
	// flexible: a stdio process's answer, sent as JSON when its first
	// message is the response and as an event stream otherwise.
	flexible bool
	// statusOf, when set, is the HTTP status of a one-message answer (a
	// stdio backend's answer to MCP 2026-07-28, whose errors map to
	// statuses); otherwise status.
	statusOf func(data []byte) int
	// longLived: a stream that may stay silent (subscriptions/listen),
	// not cut off by the backend's timeout.
	longLived bool
	// sessionID is the backend's Mcp-Session-Id, if it set one.
	sessionID string
	next      func() (frame, error) // io.EOF after the last frame
	close     func()
}

// errBackend is a failure to talk to a backend; its text names the backend
// and never holds a token.
type errBackend struct {
	backend string
	msg     string
}

func (e *errBackend) Error() string { return fmt.Sprintf("backend %s %s", e.backend, e.msg) }

func backendErr(name, format string, args ...any) error {
	return &errBackend{backend: name, msg: fmt.Sprintf(format, args...)}
}

// errSessionGone says the backend no longer knows the session (HTTP 404 to
// a request with its Mcp-Session-Id): the client must initialize again.
var errSessionGone = errors.New("session gone")

// forwardHeaders are the request headers a backend may see: MCP's own
// (MCP 2026-07-28 "Transports": the standard headers and Mcp-Param-*)
// and content negotiation. Authorization, DPoP, Cookie and everything else
// the caller sent stay at serve.
func forwardHeaders(in http.Header) http.Header {
	out := http.Header{}
	for k, v := range in {
		switch {
		case k == "Accept", k == "Content-Type", k == "Mcp-Protocol-Version", k == "Mcp-Method", k == "Mcp-Name", k == "Last-Event-Id",
			strings.HasPrefix(k, "Mcp-Param-"):
			out[k] = v
		}
	}
	return out
}

// httpConn is a session with a Streamable HTTP backend.
type httpConn struct {
	m         *Mount
	stateless bool
	mu        sync.Mutex
	sid       string // the backend's Mcp-Session-Id
	// auth and upstream are the credential headers (Authorization and
	// the config's upstreamHeader) of the session's last request, which
	// its DELETE carries too: a backend that wants a token for every
	// request would refuse a DELETE without one.
	auth, upstream string
	// bridge, once the session's initialize found a backend of MCP
	// 2026-07-28 only (bridge.go), carries the session from then on.
	bridge *bridge
}

// bridged is the session's bridge, or nil.
func (c *httpConn) bridged() *bridge {
	if c.stateless {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bridge
}

// do sends one request to the backend; sentSID says whether it carried
// the backend's session id.
func (c *httpConn) do(ctx context.Context, method string, body []byte, out http.Header) (resp *http.Response, sentSID bool, err error) {
	if !c.stateless {
		c.mu.Lock()
		if c.sid != "" {
			out.Set("Mcp-Session-Id", c.sid)
			sentSID = true
		}
		if method != http.MethodDelete {
			c.auth = out.Get("Authorization")
			if h := c.m.b.UpstreamHeader; h != "" {
				c.upstream = out.Get(h)
			}
		}
		c.mu.Unlock()
	}
	if t := c.m.g.pool; t != nil && c.m.target != nil {
		resp, err = t.send(ctx, method, c.m.target, out, body)
	} else {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, rerr := http.NewRequestWithContext(ctx, method, c.m.b.URL, rd)
		if rerr != nil {
			return nil, false, backendErr(c.m.b.Name, "cannot be reached: bad url")
		}
		req.Header = out
		resp, err = c.m.g.transport.RoundTrip(req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, backendErr(c.m.b.Name, "cannot be reached: %v", err)
	}
	return resp, sentSID, nil
}

func (c *httpConn) post(ctx context.Context, msg *wire.Message, raw []byte, out http.Header) (*reply, error) {
	if b := c.bridged(); b != nil {
		return b.post(ctx, msg, raw, out)
	}
	resp, sentSID, err := c.do(ctx, http.MethodPost, raw, out)
	if err != nil {
		return nil, err
	}
	r, err := c.reply(resp, http.MethodPost, sentSID)
	if err == nil && msg.Method == wire.MethodInitialize && !c.stateless && (r.status == http.StatusBadRequest || r.status == http.StatusNotFound) {
		return c.probe(ctx, msg, out, r)
	}
	if err == nil && r.sessionID != "" && msg.Method == wire.MethodInitialize && !c.stateless {
		c.mu.Lock()
		c.sid = r.sessionID
		c.mu.Unlock()
	}
	return r, err
}

func (c *httpConn) listen(ctx context.Context, out http.Header) (*reply, error) {
	if b := c.bridged(); b != nil {
		return b.listen(ctx, out)
	}
	resp, sentSID, err := c.do(ctx, http.MethodGet, nil, out)
	if err != nil {
		return nil, err
	}
	return c.reply(resp, http.MethodGet, sentSID)
}

func (c *httpConn) end(ctx context.Context) {
	if b := c.bridged(); b != nil {
		b.end(ctx)
		return
	}
	c.mu.Lock()
	sid, auth, upstream := c.sid, c.auth, c.upstream
	c.mu.Unlock()
	if sid == "" {
		return
	}
	out := http.Header{}
	if auth != "" {
		out.Set("Authorization", auth)
	}
	if upstream != "" {
		out.Set(c.m.b.UpstreamHeader, upstream)
	}
	ctx, cancel := context.WithTimeout(ctx, c.m.timeout)
	defer cancel()
	if resp, _, err := c.do(ctx, http.MethodDelete, nil, out); err == nil {
		resp.Body.Close()
	}
}

// reply turns a backend's HTTP answer into frames. A 401 or 403 is the
// backend refusing serve, never passed on as a challenge to the caller
// (whose token is not the backend's business). method and sentSID are
// the request's.
func (c *httpConn) reply(resp *http.Response, method string, sentSID bool) (*reply, error) {
	name := c.m.b.Name
	r := &reply{status: resp.StatusCode, sessionID: resp.Header.Get("Mcp-Session-Id"), close: func() { resp.Body.Close() }}
	ct := resp.Header.Get("Content-Type")
	if ct != "application/json" && ct != "text/event-stream" { // the common forms need no parsing
		ct, _, _ = mime.ParseMediaType(ct)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		resp.Body.Close()
		return nil, backendErr(name, "refused serve's request (HTTP %d): check the credentials its config gives it", resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound && sentSID:
		resp.Body.Close()
		return nil, errSessionGone
	case resp.StatusCode == http.StatusMethodNotAllowed && method == http.MethodGet:
		// No stream at GET (MCP 2025-11-25 "Transports": the server
		// answers 405): passed on as such, not as a failure.
		resp.Body.Close()
		r.next = func() (frame, error) { return frame{}, io.EOF }
	case resp.StatusCode >= 500 && ct != "application/json":
		resp.Body.Close()
		return nil, backendErr(name, "failed (HTTP %d)", resp.StatusCode)
	case ct == "text/event-stream":
		r.stream = true
		sr := newSSEReader(resp.Body, c.m.maxMsg)
		r.next = func() (frame, error) {
			f, err := sr.next()
			switch {
			case err == nil:
				return f, nil
			case errors.Is(err, errFrameTooLarge):
				return frame{}, backendErr(name, "sent a message over %d bytes", c.m.maxMsg)
			case errors.Is(err, io.EOF):
				return frame{}, io.EOF
			case errors.Is(err, context.Canceled):
				// serve ended the request: its caller went away or the
				// call timed out (front.go tells which), not the backend.
				return frame{}, err
			}
			return frame{}, backendErr(name, "broke off its event stream: %v", err)
		}
	case ct == "application/json":
		done := false
		r.next = func() (frame, error) {
			if done {
				return frame{}, io.EOF
			}
			done = true
			b, err := readMessage(resp.Body, resp.ContentLength, c.m.maxMsg)
			switch {
			case errors.Is(err, context.Canceled):
				return frame{}, err // as for an event stream
			case errors.Is(err, errFrameTooLarge):
				return frame{}, backendErr(name, "sent a message over %d bytes", c.m.maxMsg)
			case err != nil:
				return frame{}, backendErr(name, "broke off its answer: %v", err)
			case len(bytes.TrimSpace(b)) == 0:
				return frame{}, io.EOF
			}
			return frame{data: b}, nil
		}
	case resp.StatusCode/100 == 2 && resp.ContentLength <= 0 || resp.StatusCode == http.StatusAccepted:
		resp.Body.Close()
		r.next = func() (frame, error) { return frame{}, io.EOF }
	default:
		resp.Body.Close()
		return nil, backendErr(name, "answered HTTP %d with %s, not JSON or an event stream", resp.StatusCode, cmpOr(ct, "no content type"))
	}
	return r, nil
}

// readMessage reads a one-message body of length n (-1: unknown), of at
// most max bytes (errFrameTooLarge): a known length is read into a buffer
// of that size (io.ReadAll grows one from 512 bytes), and refused unread
// when it is over max.
func readMessage(r io.Reader, n, max int64) ([]byte, error) {
	if n < 0 {
		b, err := io.ReadAll(io.LimitReader(r, max+1))
		if err == nil && int64(len(b)) > max {
			err = errFrameTooLarge
		}
		return b, err
	}
	if n > max {
		return nil, errFrameTooLarge
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}
