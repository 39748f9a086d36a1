package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// nextFn reads the next frame (io.EOF after the last), and closeFn
	// ends the answer. Without them, resp is an HTTP backend's answer and
	// jsonOf, until read, what reads the one JSON message its body holds;
	// a reply with none of these has no frame (next is io.EOF) and
	// nothing to close.
	nextFn  func() (frame, error)
	closeFn func()
	resp    *http.Response
	jsonOf  jsonReader
}

// jsonReader reads an HTTP answer's body, one JSON message, as a frame
// (httpConn).
type jsonReader interface {
	readJSON(resp *http.Response) (frame, error)
}

// next is the answer's next frame; io.EOF after the last.
func (r *reply) next() (frame, error) {
	if r.nextFn != nil {
		return r.nextFn()
	}
	if c := r.jsonOf; c != nil {
		r.jsonOf = nil
		return c.readJSON(r.resp)
	}
	return frame{}, io.EOF
}

// close ends the answer, what is left of it unread.
func (r *reply) close() {
	switch {
	case r.closeFn != nil:
		r.closeFn()
	case r.resp != nil:
		r.resp.Body.Close()
	}
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
	out := headerPool.Get().(http.Header)
	for k, v := range in {
		switch {
		case k == "Accept", k == "Content-Type", k == "Mcp-Protocol-Version", k == "Mcp-Method", k == "Mcp-Name", k == "Last-Event-Id",
			strings.HasPrefix(k, "Mcp-Param-"):
			out[k] = v
		}
	}
	return out
}

// maxPooledHeader is the most fields of a header headerPool keeps (the
// header a call sends its backend has about six).
const maxPooledHeader = 16

// headerPool holds the headers of calls that ended (putHeader), for
// forwardHeaders.
var headerPool = sync.Pool{New: func() any { return http.Header{} }}

// putHeader gives h, which nothing holds any more, back to headerPool,
// unless it grew past maxPooledHeader fields: a pooled header stays
// small.
func putHeader(h http.Header) {
	if len(h) > maxPooledHeader {
		return
	}
	clear(h)
	headerPool.Put(h)
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func accepted() *reply {
	return &reply{status: http.StatusAccepted}
}

// answered is a reply serve makes itself: one JSON message.
func answered(m *wire.Message) *reply {
	b := mustEncode(m)
	done := false
	return &reply{status: http.StatusOK, nextFn: func() (frame, error) {
		if done {
			return frame{}, io.EOF
		}
		done = true
		return frame{data: b}, nil
	}}
}
