package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/coder/websocket"
)

// WSConn is one JSON-RPC message per WebSocket text frame.
type WSConn struct {
	c     *websocket.Conn
	limit int64
}

// NewWSConn wraps an established WebSocket. The library's read limit is
// raised to limit+1 so oversized frames can be reported and skipped rather
// than closing the connection. limit <= 0 means DefaultMaxMessageSize.
func NewWSConn(c *websocket.Conn, limit int64) *WSConn {
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	// No library limit: Read enforces ours while streaming, so an oversized
	// frame is drained and reported instead of killing the connection.
	c.SetReadLimit(-1)
	return &WSConn{c: c, limit: limit}
}

// DialWebSocket connects to a ws:// or wss:// URL.
func DialWebSocket(ctx context.Context, url string, client *http.Client, limit int64) (*WSConn, error) {
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("websocket handshake refused: HTTP %d", resp.StatusCode)
		}
		return nil, err
	}
	return NewWSConn(c, limit), nil
}

// AcceptWebSocket upgrades an HTTP request.
func AcceptWebSocket(w http.ResponseWriter, r *http.Request, limit int64) (*WSConn, error) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil, err
	}
	return NewWSConn(c, limit), nil
}

// readBufs are the buffers messages are read into before being copied
// out at their size: a message costs one allocation of its length, not
// the doublings of io.ReadAll.
var readBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledReadBuf bounds the buffers kept in readBufs.
const maxPooledReadBuf = 64 << 10

// Read returns the next text frame. An oversized frame is drained and
// reported as *TooLargeError, a binary frame as ErrBinaryFrame; the
// connection stays open either way.
func (c *WSConn) Read(ctx context.Context) ([]byte, error) {
	typ, r, err := c.c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	buf := readBufs.Get().(*bytes.Buffer)
	_, err = buf.ReadFrom(io.LimitReader(r, c.limit+1))
	data := bytes.Clone(buf.Bytes())
	if buf.Reset(); buf.Cap() <= maxPooledReadBuf {
		readBufs.Put(buf)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > c.limit {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		return nil, &TooLargeError{Limit: c.limit}
	}
	if typ != websocket.MessageText {
		return nil, ErrBinaryFrame
	}
	return data, nil
}

// Write sends msg as one text frame.
func (c *WSConn) Write(ctx context.Context, msg []byte) error {
	return c.c.Write(ctx, websocket.MessageText, msg)
}

// Close closes the WebSocket with a normal closure.
func (c *WSConn) Close() error {
	return c.c.Close(websocket.StatusNormalClosure, "")
}
