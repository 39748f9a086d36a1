//go:build unix

package gateway

import (
	"net"
	"syscall"
)

// peerClosed reports whether an idle keep-alive connection was closed by
// the backend (or has bytes nobody asked for): a non-blocking MSG_PEEK
// read, one system call, so that a request is never written to a
// connection the backend already closed (Node.js closes idle ones after
// 5 s) and need not be retried, which a tools/call must not be.
func peerClosed(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || err == nil || err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true
	})
	return closed || err != nil
}
