package host

import (
	"io"
	"net"
	"sync"
)

// pooledConn is a WebSocket's connection whose reads go through a
// pooledReader (coder/websocket reads the connection it is handed, behind
// the bytes its bufio.Reader holds, with that reader).
type pooledConn struct {
	net.Conn
	r pooledReader
}

func (c *pooledConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// minBufioSize is the least size of a bufio.Reader's buffer.
const minBufioSize = 16

// readBuffers are the read buffers of WebSocket connections (pooledReader).
var readBuffers = sync.Pool{New: func() any { b := make([]byte, wsBufferSize); return &b }}

// pooledReader reads r, a connection, as a bufio.Reader of wsBufferSize
// would: a short read goes through a buffer of wsBufferSize, one read(2)
// for a message's header and the start of its payload, or a small
// message whole. The buffer comes from readBuffers once r is readable
// (fill) and goes back as soon as its bytes are consumed, where a
// bufio.Reader's stays with the connection while it idles; a read of at
// least wsBufferSize reads r directly. pending are bytes read before r
// (what net/http read past the upgrade request).
type pooledReader struct {
	r       io.Reader
	fill    func() (*[]byte, int, error) // readWhenReady
	pending []byte
	buf     *[]byte // from readBuffers, nil when none is held
	off, n  int     // the unread bytes of *buf
	err     error   // r's error, returned once the bytes read with it are
}

func (p *pooledReader) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		if p.pending = p.pending[n:]; len(p.pending) == 0 {
			p.pending = nil
		}
		return n, nil
	}
	if p.buf == nil {
		switch {
		case p.err != nil:
			return 0, p.err
		case len(b) >= wsBufferSize:
			return p.r.Read(b)
		}
		buf, n, err := p.fill()
		if n == 0 {
			if buf != nil {
				readBuffers.Put(buf)
			}
			return 0, err
		}
		p.buf, p.off, p.n, p.err = buf, 0, n, err
	}
	n := copy(b, (*p.buf)[p.off:p.n])
	if p.off += n; p.off == p.n {
		readBuffers.Put(p.buf)
		p.buf = nil
	}
	return n, nil
}

// readAfterBuffer is fill for a connection whose readiness cannot be
// awaited apart from its read: the buffer is held while the read waits.
func readAfterBuffer(c net.Conn) func() (*[]byte, int, error) {
	return func() (*[]byte, int, error) {
		buf := readBuffers.Get().(*[]byte)
		n, err := c.Read(*buf)
		return buf, n, err
	}
}
