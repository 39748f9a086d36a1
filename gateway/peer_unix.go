//go:build unix

package gateway

import (
	"net"
	"syscall"
)

// peeker tells whether an idle keep-alive connection was closed by the
// backend (or has bytes nobody asked for): a non-blocking MSG_PEEK read,
// one system call, so that a request is never written to a connection
// the backend already closed (Node.js closes idle ones after 5 s) and
// need not be retried, which a tools/call must not be. It is made once
// per connection: the raw connection and the function it runs are not
// made again for every request.
type peeker struct {
	rc     syscall.RawConn
	look   func(fd uintptr) bool
	closed bool
	buf    [1]byte
}

func newPeeker(nc net.Conn) *peeker {
	p := &peeker{}
	if sc, ok := nc.(syscall.Conn); ok {
		p.rc, _ = sc.SyscallConn()
	}
	p.look = func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		p.closed = n > 0 || err == nil || err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true
	}
	return p
}

// peerClosed looks; the connection is in no one else's hands.
func (p *peeker) peerClosed() bool {
	if p.rc == nil {
		return false
	}
	p.closed = false
	err := p.rc.Read(p.look)
	return p.closed || err != nil
}
