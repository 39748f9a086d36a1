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
	return func() (*[]byte, int, error) {
		var buf *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			b := readBuffers.Get().(*[]byte)
			for {
				n, rerr = syscall.Read(int(fd), *b)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				readBuffers.Put(b)
				return false // wait until readable, holding nothing
			}
			buf = b
			return true
		})
		switch {
		case err != nil: // closed, or past a deadline: as c.Read says it
			var op *net.OpError
			if errors.As(err, &op) {
				err = op.Err
			}
			return nil, 0, readError(c, err)
		case rerr != nil:
			return buf, 0, readError(c, os.NewSyscallError("read", rerr))
		case n == 0:
			return buf, 0, io.EOF
		}
		return buf, n, nil
	}
}

// readError is err as c.Read returns it.
func readError(c net.Conn, err error) error {
	return &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
