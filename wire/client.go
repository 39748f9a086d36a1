package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Client is the calling side of a JSON-RPC connection: it correlates
// responses with requests by id and hands notifications to a channel.
type Client struct {
	conn    Conn
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[string]chan *Message
	notes   chan *Message
	done    chan struct{}
	err     error
}

// ErrClosed is returned by calls made after the connection ended.
var ErrClosed = errors.New("connection closed")

// NewClient starts reading conn. Notifications are buffered; when the buffer
// is full the oldest are dropped rather than stalling responses.
func NewClient(conn Conn) *Client {
	c := &Client{conn: conn, pending: map[string]chan *Message{}, notes: make(chan *Message, 256), done: make(chan struct{})}
	go c.readLoop()
	return c
}

func (c *Client) readLoop() {
	defer close(c.notes)
	for {
		data, err := c.conn.Read(context.Background())
		if err != nil {
			if errors.Is(err, ErrSkippedMessage) {
				continue
			}
			c.mu.Lock()
			c.err = err
			for _, ch := range c.pending {
				close(ch)
			}
			c.pending = nil
			c.mu.Unlock()
			close(c.done)
			return
		}
		m, derr := Decode(data)
		if derr != nil {
			continue
		}
		switch {
		case m.IsResponse():
			c.mu.Lock()
			ch := c.pending[m.ID.String()]
			delete(c.pending, m.ID.String())
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.IsNotification():
			select {
			case c.notes <- m:
			default:
				select {
				case <-c.notes:
				default:
				}
				c.notes <- m
			}
		case m.IsRequest():
			// This client serves no methods.
			resp := NewErrorResponse(m.ID, Errorf(CodeMethodNotFound, "method %q not found", m.Method))
			if b, err := Encode(resp); err == nil {
				_ = c.conn.Write(context.Background(), b)
			}
		}
	}
}

// Call sends a request and waits for its response. A JSON-RPC error comes
// back as *Error; result (may be nil) receives the result.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	id := NumberID(c.nextID.Add(1))
	req, err := NewRequest(id, method, params)
	if err != nil {
		return err
	}
	ch := make(chan *Message, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return c.closedErr()
	}
	c.pending[id.String()] = ch
	c.mu.Unlock()
	b, err := Encode(req)
	if err != nil {
		return err
	}
	if err := c.conn.Write(ctx, b); err != nil {
		c.forget(id)
		return fmt.Errorf("cannot send %s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	case m, ok := <-ch:
		if !ok {
			return c.closedErr()
		}
		return m.decodeResult(method, result)
	}
}

func (c *Client) forget(id ID) {
	c.mu.Lock()
	if c.pending != nil {
		delete(c.pending, id.String())
	}
	c.mu.Unlock()
}

func (c *Client) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, c.err)
	}
	return ErrClosed
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	m, err := NewNotification(method, params)
	if err != nil {
		return err
	}
	b, err := Encode(m)
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, b)
}

// Notifications yields every notification the server sends; it is closed
// when the connection ends.
func (c *Client) Notifications() <-chan *Message { return c.notes }

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
