package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// A stdio backend is one process per MCP session speaking newline-delimited
// JSON-RPC on stdin and stdout (MCP "Transports", stdio). Its answers are
// routed back by request id; notifications/progress by progress token;
// server-to-client requests and other notifications to the session's GET
// stream when one is open, else to the stream of the oldest request in
// flight (MCP Streamable HTTP lets a server send them on either).
//
// A process that exits is started again with exponential backoff (see
// restartDelay), and the session's initialize and notifications/initialized
// are replayed to it, so the client's session survives a crash; requests in
// flight at the crash get an error naming the backend.

type stdioConn struct {
	m      *Mount
	caller Caller

	mu          sync.Mutex
	proc        *process
	init        []byte // the client's initialize request
	initialized []byte // its notifications/initialized
	back        backoff
	envToken    string
	ended       bool
	everStarted bool // a process ran before: a new one gets the session's initialize again
}

func newStdioConn(m *Mount, c Caller) *stdioConn { return &stdioConn{m: m, caller: c} }

// running returns the live process, starting one (after the backoff, and
// replaying the session's initialize) when there is none.
func (c *stdioConn) running(ctx context.Context) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil, backendErr(c.m.b.Name, "session ended")
	}
	if c.proc != nil && !c.proc.exited() {
		return c.proc, nil
	}
	if err := c.back.await(ctx, c.m.b.Name, c.proc); err != nil {
		return nil, err
	}
	restart := c.everStarted
	p, err := startProcess(c.m, c.envToken, nil)
	if err != nil {
		return nil, err
	}
	c.proc, c.everStarted = p, true
	if restart && c.init != nil {
		if _, err := p.handshake(ctx, c.init, c.initialized, "after a restart"); err != nil {
			p.kill()
			return nil, err
		}
	}
	return p, nil
}

// setToken makes the process run with the upstream token tok in its
// environment: a process started with another one is ended, and the next
// request starts one with tok (replaying initialize).
func (c *stdioConn) setToken(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tok == c.envToken {
		return
	}
	c.envToken = tok
	if c.proc != nil {
		go c.proc.kill()
		c.proc = nil
	}
}

func (c *stdioConn) post(ctx context.Context, msg *wire.Message, raw []byte, _ http.Header) (*reply, error) {
	if msg.Method == wire.MethodInitialize {
		c.mu.Lock()
		if c.init == nil {
			c.init = append([]byte(nil), raw...)
		}
		c.mu.Unlock()
	} else if msg.Method == "notifications/initialized" {
		c.mu.Lock()
		c.initialized = append([]byte(nil), raw...)
		c.mu.Unlock()
	}
	p, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	if !msg.IsRequest() {
		if err := p.write(raw); err != nil {
			return nil, err
		}
		return &reply{status: http.StatusAccepted}, nil
	}
	s, err := p.register(msg.ID.String(), progressToken(msg.Params))
	if err != nil {
		return nil, err
	}
	if err := p.write(raw); err != nil {
		p.unregister(s)
		return nil, err
	}
	return &reply{status: http.StatusOK, stream: true, flexible: true, nextFn: s.reader(ctx, p, c.m.b.Name, true), closeFn: func() {
		p.unregister(s)
		p.mu.Lock()
		answered := s.answered
		p.mu.Unlock()
		if !answered && !p.exited() {
			// The client went away (or timed out) first: tell the process
			// (MCP "Cancellation"), as an HTTP backend learns from its
			// closed connection.
			if m, err := wire.NewNotification("notifications/cancelled", map[string]any{"requestId": msg.ID, "reason": "the client went away"}); err == nil {
				if b, err := json.Marshal(m); err == nil {
					p.write(b)
				}
			}
		}
	}}, nil
}

// listen opens the session's GET stream; it outlives the process: when one
// exits, the stream goes on from the restarted one.
func (c *stdioConn) listen(ctx context.Context, _ http.Header) (*reply, error) {
	p, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	s, err := p.listen()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	read := s.reader(ctx, p, c.m.b.Name, false)
	next := func() (frame, error) {
		for {
			f, err := read()
			if err == nil || ctx.Err() != nil {
				return f, err
			}
			c.mu.Lock()
			ended := c.ended
			c.mu.Unlock()
			if ended {
				return frame{}, io.EOF
			}
			np, err := c.running(ctx)
			if err != nil {
				return frame{}, err
			}
			ns, err := np.listen()
			if err != nil {
				return frame{}, err
			}
			mu.Lock()
			p, s, read = np, ns, ns.reader(ctx, np, c.m.b.Name, false)
			mu.Unlock()
		}
	}
	return &reply{status: http.StatusOK, stream: true, nextFn: next, closeFn: func() {
		mu.Lock()
		defer mu.Unlock()
		p.unregister(s)
	}}, nil
}

func (c *stdioConn) end(context.Context) {
	c.mu.Lock()
	c.ended = true
	p := c.proc
	c.mu.Unlock()
	if p != nil {
		p.kill()
	}
}
