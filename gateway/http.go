package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// A session with a Streamable HTTP backend (MCP "Transports"), and the
// probe that hands it to a bridge (bridge.go).

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
	r := &reply{status: resp.StatusCode, sessionID: resp.Header.Get("Mcp-Session-Id"), resp: resp}
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
		resp.Body.Close() // no frame: next is io.EOF
	case resp.StatusCode >= 500 && ct != "application/json":
		resp.Body.Close()
		return nil, backendErr(name, "failed (HTTP %d)", resp.StatusCode)
	case ct == "text/event-stream":
		r.stream = true
		sr := newSSEReader(resp.Body, c.m.maxMsg)
		r.nextFn = func() (frame, error) {
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
		r.jsonOf = c
	case resp.StatusCode/100 == 2 && resp.ContentLength <= 0 || resp.StatusCode == http.StatusAccepted:
		resp.Body.Close() // no frame: next is io.EOF
	default:
		resp.Body.Close()
		return nil, backendErr(name, "answered HTTP %d with %s, not JSON or an event stream", resp.StatusCode, cmpOr(ct, "no content type"))
	}
	return r, nil
}

// readJSON reads resp's body, one JSON message, as reply.next's frame.
func (c *httpConn) readJSON(resp *http.Response) (frame, error) {
	name := c.m.b.Name
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

// refusesInitialize reports whether a backend's answer to initialize
// (its HTTP status and first message) may mean MCP 2026-07-28 only: 404,
// or 400 with UNSUPPORTED_PROTOCOL_VERSION, as the TypeScript SDK v2
// answers with legacy: 'reject' (@modelcontextprotocol/server 2.4.0,
// dist/src-DdvbAHrR.mjs, modernOnlyStrictRejection: 400,
// {"code": -32022, "data": {"supported": [...], "requested": "..."}}).
func refusesInitialize(status int, data []byte) bool {
	if status == http.StatusNotFound {
		return true
	}
	h, ok := readHead(data, true)
	return status == http.StatusBadRequest && ok && h.Error != nil && h.Error.Code == wire.CodeUnsupportedMCPVersion
}

// earlierCaller reports whether initialize msg (with the caller's
// headers out) is a caller's of MCP 2025-11-25, 2025-06-18 or 2025-03-26,
// the revisions the bridge serves: not one of 2026-07-28 (its header, or
// its _meta envelope), whose initialize is a removed method the backend
// must refuse (MCP 2026-07-28 "Lifecycle"), nor of another revision.
func earlierCaller(msg *wire.Message, out http.Header) bool {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Meta            struct {
			ProtocolVersion json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	return json.Unmarshal(msg.Params, &p) == nil && p.Meta.ProtocolVersion == nil &&
		slices.Contains(wire.BridgedVersions, p.ProtocolVersion) && out.Get("Mcp-Protocol-Version") != statelessVersion
}

// probe answers a caller's initialize that the backend refused (rep, its
// answer): from a bridge when the caller is of an earlier revision and
// the backend's server/discover lists MCP 2026-07-28, else with the
// backend's refusal as it was.
func (c *httpConn) probe(ctx context.Context, msg *wire.Message, out http.Header, rep *reply) (*reply, error) {
	f, err := rep.next()
	rep.close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	refusal := &reply{status: rep.status, nextFn: once(f)}
	if !refusesInitialize(rep.status, f.data) || !earlierCaller(msg, out) {
		return refusal, nil
	}
	b, result, err := newBridge(ctx, c.m, msg, out)
	if err != nil {
		c.m.g.log.Debug("backend refused initialize and cannot be bridged", "backend", c.m.b.Name, "err", err)
		return refusal, nil
	}
	c.mu.Lock()
	c.bridge = b
	c.mu.Unlock()
	c.m.g.log.Info("backend speaks MCP 2026-07-28 only: bridging the caller's session", "backend", c.m.b.Name)
	m, err := wire.NewResult(msg.ID, result)
	if err != nil {
		return nil, err
	}
	return answered(m), nil
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
