//go:build !unix

package host

import "net"

// readWhenReady is pooledReader's fill for c: where the wait for
// readiness cannot be had apart from the read, the buffer is held while
// the read waits.
func readWhenReady(c net.Conn) func() (*[]byte, int, error) { return readAfterBuffer(c) }
