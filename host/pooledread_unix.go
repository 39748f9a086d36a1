//go:build unix

package host

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// readWhenReady is pooledReader's fill for c: it waits until c is
// readable without holding a buffer (syscall.RawConn's Read, on the
// runtime's network poller, as c.Read waits), then reads into one from
// readBuffers, with c.Read's results: io.EOF at the end, errors as a
// *net.OpError. A connection without a file descriptor (TLS) reads after
// taking its buffer (readAfterBuffer).
func readWhenReady(c net.Conn) func() (*[]byte, int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return readAfterBuffer(c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return readAfterBuffer(c)
	}
	r := &rawReader{c: c, rc: rc}
	r.try = r.tryRead // made once: a read allocates nothing
	return r.fill
}

// rawReader reads a connection by its file descriptor (readWhenReady).
type rawReader struct {
	c   net.Conn
	rc  syscall.RawConn
	try func(fd uintptr) bool // tryRead
	// the last tryRead's buffer and results
	buf  *[]byte
	n    int
	rerr error
}

// tryRead reads what fd holds into a buffer from readBuffers, or, when
// it holds nothing yet, gives the buffer back and says to wait.
func (r *rawReader) tryRead(fd uintptr) bool {
	b := readBuffers.Get().(*[]byte)
	for {
		r.n, r.rerr = syscall.Read(int(fd), *b)
		if r.rerr != syscall.EINTR {
			break
		}
	}
	if r.rerr == syscall.EAGAIN {
		readBuffers.Put(b)
		return false // wait until readable, holding nothing
	}
	r.buf = b
	return true
}

func (r *rawReader) fill() (*[]byte, int, error) {
	err := r.rc.Read(r.try)
	buf, n, rerr := r.buf, r.n, r.rerr
	r.buf, r.n, r.rerr = nil, 0, nil
	switch {
	case err != nil: // closed, or past a deadline: as c.Read says it
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return buf, 0, readError(r.c, err)
	case rerr != nil:
		return buf, 0, readError(r.c, os.NewSyscallError("read", rerr))
	case n == 0:
		return buf, 0, io.EOF
	}
	return buf, n, nil
}

// readError is err as c.Read returns it.
func readError(c net.Conn, err error) error {
	return &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
