package host

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
	"github.com/coder/websocket"
)

// connOwner is what a connection's I/O needs of its session (an interface
// holding the *session, which costs no allocation).
type connOwner interface {
	stop(cause error)
	endCause() error
}

// connIO is a connection's I/O, apart from what its messages mean: every
// message goes through its bounded send queue (sendQueueSize), written by
// one writer at a time within writeTimeout (overrun), and the connection
// closes once, with WebSocket status 1008 when the queue overflowed.
type connIO struct {
	id   uint64
	log  *slog.Logger
	conn wire.Conn
	// owner is the session the connection serves: its I/O ends the session
	// when a write fails or the queue overflows, and closes as it ended.
	owner connOwner
	// ioCtx is the context of reads and writes: it ends with ServeConn's
	// context or the host (cancelIO; nil for a WebSocket, whose ioCtx
	// never ends: see open); ioEnded says it did.
	ioCtx    context.Context
	cancelIO context.CancelFunc
	ioEnded  atomic.Bool
	// readAsync, when set, reads a connection whose Read ignores its
	// context (see readAsync).
	readAsync func(context.Context) ([]byte, error)
	closing   sync.Once // the connection is closed
	// overrun aborts a write that takes longer than writeTimeout (one
	// timer per connection, not per message).
	overrun *time.Timer
	// wmu serialises writes: whoever holds it writes the queued pushes
	// first, then its own answer (see send, notify).
	wmu sync.Mutex
	// qmu guards the send queue of pushes, whether a goroutine is
	// writing it (draining) and whether writes have ended.
	qmu      sync.Mutex
	queue    [][]byte
	draining bool
	ended    bool
}

// send writes an answer from the connection's reading goroutine, after
// the pushes queued before it: while the peer does not read, the write
// waits, and the connection reads nothing more, which slows its peer down.
func (c *connIO) send(ctx context.Context, m *wire.Message) {
	if b := c.encode(m); b != nil {
		c.sendEncoded(ctx, b)
	}
}

// sendEncoded is send for a message already encoded.
func (c *connIO) sendEncoded(ctx context.Context, b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if ctx.Err() == nil && c.flush() {
		c.write(b)
	}
}

// notify queues a push without waiting, and starts a goroutine to write
// the queue unless one runs (an idle connection has none). When the queue
// is full the peer has stopped reading: the connection is closed rather
// than let it hold back the pushes to everyone else.
func (c *connIO) notify(m *wire.Message) {
	b := c.encode(m)
	if b == nil {
		return
	}
	c.qmu.Lock()
	if c.ended {
		c.qmu.Unlock()
		return
	}
	if len(c.queue) >= sendQueueSize {
		c.qmu.Unlock()
		c.log.Warn("send queue full; closing the connection", "conn", c.id, "queued", sendQueueSize)
		c.owner.stop(errQueueFull)
		return
	}
	c.queue = append(c.queue, b)
	start := !c.draining
	c.draining = true
	c.qmu.Unlock()
	if start {
		go func() {
			for {
				c.flushQueue()
				c.qmu.Lock()
				if c.ended || len(c.queue) == 0 {
					c.draining = false
					c.qmu.Unlock()
					return
				}
				c.qmu.Unlock()
			}
		}()
	}
}

// flushQueue writes the queued pushes.
func (c *connIO) flushQueue() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.flush()
}

// flush writes the queued pushes, c.wmu held; false when writes have
// ended or one failed.
func (c *connIO) flush() bool {
	for {
		c.qmu.Lock()
		if c.ended || len(c.queue) == 0 {
			ok := !c.ended
			c.qmu.Unlock()
			return ok
		}
		b := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.qmu.Unlock()
		if !c.write(b) {
			return false
		}
	}
}

// endWrites drops the queue, refuses further writes and waits for the
// write under way, if any.
func (c *connIO) endWrites() {
	c.qmu.Lock()
	c.ended, c.queue = true, nil
	c.qmu.Unlock()
	c.wmu.Lock()
	c.wmu.Unlock()
}

// write writes one message, c.wmu held, within writeTimeout; a failed
// write ends the connection.
func (c *connIO) write(b []byte) bool {
	c.overrun.Reset(writeTimeout)
	err := c.conn.Write(c.ioCtx, b)
	c.overrun.Stop()
	if err != nil {
		c.log.Debug("cannot write", "conn", c.id, "err", err)
		c.qmu.Lock()
		c.ended = true
		c.qmu.Unlock()
		c.owner.stop(fmt.Errorf("cannot write: %w", err))
		return false
	}
	return true
}

func (c *connIO) encode(m *wire.Message) []byte {
	b, err := wire.Encode(m)
	if err != nil {
		c.log.Error("cannot encode a message", "conn", c.id, "err", err)
		return nil
	}
	return b
}

// writeTimeout bounds one message write to a peer.
const writeTimeout = 10 * time.Second

// sendQueueSize bounds the messages waiting to be written to one
// connection (see ServeConn).
const sendQueueSize = 64

// WebSocketHandler upgrades requests to WebSocket connections served by
// the host (mount it on "/" and "/ws"). When connectionToken is not empty
// the request must carry ?tkn= equal to it, compared in constant time, or
// it gets HTTP 403 before any upgrade. Behind a guard (NewGuard), which
// has vetted the Origin, the upgrade skips coder/websocket's own check
// (Origin host equal to Host); without one, that check applies.
func (h *Host) WebSocketHandler(connectionToken string) http.Handler {
	want := sha256.Sum256([]byte(connectionToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if connectionToken != "" {
			got := sha256.Sum256([]byte(r.URL.Query().Get("tkn")))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				h.log.Warn("websocket upgrade refused", "remote", r.RemoteAddr, "reason", "wrong or missing connection token")
				http.Error(w, "forbidden: wrong or missing connection token (?tkn=)", http.StatusForbidden)
				return
			}
		}
		_, guarded := GuardedOrigin(r.Context())
		c, err := websocket.Accept(smallBuffers{w}, r, &websocket.AcceptOptions{InsecureSkipVerify: guarded})
		if err != nil {
			h.log.Warn("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
			return
		}
		// The session runs on a goroutine of its own and the handler
		// returns: net/http's goroutine for the connection ends, with its
		// grown stack and the buffers it keeps after the hijack (half the
		// memory of an idle connection). The session is opened (and
		// logged) here, and its first messages handled aside
		// (asideMessages), so that the goroutine that reads it keeps the
		// small stack reading needs (4 KiB, not 8) while it idles.
		conn := &wsConn{WSConn: wire.NewWSConn(c, h.maxMsg), ws: c}
		if s := h.open(h.ctx, conn); s != nil {
			go h.run(s)
		} else {
			conn.Close()
		}
	})
}

// wsBufferSize is the size of a WebSocket connection's read and write
// buffers: JSON-RPC messages are small (a longer message is read into its
// own buffer past this one, and written in parts of this size). The write
// buffer is the connection's own; the read buffer is taken from a pool
// for each read and given back as soon as its bytes are consumed
// (pooledReader), so that an idle connection holds none.
const wsBufferSize = 512

// smallBuffers hands coder/websocket, which keeps the buffers of the
// hijacked HTTP connection for the WebSocket's life, a write buffer of
// wsBufferSize instead of net/http's 4 KiB one, and a read buffer of the
// 16 bytes bufio allows at least; the connection it gets reads through a
// pooledReader, which starts with the bytes the client sent after the
// upgrade request and net/http already read.
type smallBuffers struct{ http.ResponseWriter }

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	pc := &pooledConn{Conn: c}
	pc.r.r, pc.r.fill = c, readWhenReady(c)
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ := brw.Reader.Peek(n)
		pc.r.pending = bytes.Clone(buffered)
	}
	return pc, bufio.NewReadWriter(bufio.NewReaderSize(pc, minBufioSize), bufio.NewWriterSize(c, wsBufferSize)), nil
}

// wsConn is a WebSocket connection the host accepted: it can close with a
// status code and a reason.
type wsConn struct {
	*wire.WSConn
	ws *websocket.Conn
}

// closeWith closes the connection with an RFC 6455 §7.4 status code and a
// reason (at most 123 bytes).
func (c *wsConn) closeWith(code websocket.StatusCode, reason string) error {
	return c.ws.Close(code, reason)
}

// abort ends a session's connection at once, without a closing handshake:
// a write that overran writeTimeout, or the host shutting down.
func (c *connIO) abort() {
	if wc, ok := c.conn.(*wsConn); ok {
		wc.ws.CloseNow()
		return
	}
	c.conn.Close()
}

// Why a connection ends, besides its peer closing it.
var (
	errShuttingDown = errors.New("host shutting down")
	errQueueFull    = fmt.Errorf("the client does not read its messages: %d are waiting (send queue full)", sendQueueSize)
)

// closeConn closes the connection once; a session stopped because its
// send queue was full closes a WebSocket with status 1008 and the reason.
func (c *connIO) closeConn() {
	c.closing.Do(func() {
		if wc, ok := c.conn.(*wsConn); ok && errors.Is(c.owner.endCause(), errQueueFull) {
			wc.closeWith(websocket.StatusPolicyViolation, "send queue full: the client does not read its messages")
		} else {
			c.conn.Close()
		}
	})
}

// readAsync reads c from a goroutine of its own, for connections whose
// Read ignores its context: the returned read returns ctx's error once ctx
// ends, while the goroutine may stay blocked until c delivers.
func readAsync(ctx context.Context, c wire.Conn) func(context.Context) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	reads := make(chan read)
	var once sync.Once
	return func(ioCtx context.Context) ([]byte, error) {
		once.Do(func() {
			go func() {
				for {
					data, err := c.Read(ioCtx)
					select {
					case reads <- read{data, err}:
					case <-ctx.Done():
						return
					}
					if err != nil && !errors.Is(err, wire.ErrSkippedMessage) {
						return
					}
				}
			}()
		})
		select {
		case r := <-reads:
			return r.data, r.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}
