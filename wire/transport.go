package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxMessageSize bounds one message on every transport (1 MiB).
const DefaultMaxMessageSize = 1 << 20

// ErrSkippedMessage matches every Read error after which the connection
// stays usable: the offending message was consumed and skipped, and the
// peer deserves an invalid-request answer rather than a hang-up.
var ErrSkippedMessage = errors.New("message skipped")

// ErrMessageTooLarge is returned by Read when a message exceeds the limit.
// It also matches ErrSkippedMessage.
var ErrMessageTooLarge = errors.New("message exceeds the size limit")

// ErrBinaryFrame is returned by a WebSocket Read for a binary frame: the
// protocol is one JSON text frame per message. It also matches
// ErrSkippedMessage.
var ErrBinaryFrame = &skippedError{msg: "binary frames are not part of the protocol: send each message as one text frame"}

type skippedError struct{ msg string }

func (e *skippedError) Error() string        { return e.msg }
func (e *skippedError) Is(target error) bool { return target == ErrSkippedMessage }

// TooLargeError reports an oversized message and the limit it broke.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("message exceeds the size limit of %d bytes", e.Limit)
}

// Is makes errors.Is(err, ErrMessageTooLarge) and errors.Is(err,
// ErrSkippedMessage) hold.
func (e *TooLargeError) Is(target error) bool {
	return target == ErrMessageTooLarge || target == ErrSkippedMessage
}

// Conn carries one JSON-RPC message per unit, whatever the transport.
// Read and Write may be called from different goroutines; Write is safe for
// concurrent use.
type Conn interface {
	// Read returns the next message. An error matching ErrSkippedMessage
	// (oversized message, binary frame) leaves the Conn usable.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one message.
	Write(ctx context.Context, msg []byte) error
	// Close ends the connection.
	Close() error
}

// StdioConn is newline-delimited JSON over a reader and a writer.
type StdioConn struct {
	r      *bufio.Reader
	limit  int64
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
}

// NewStdioConn frames messages as lines on r and w. closer (may be nil) is
// called by Close. limit <= 0 means DefaultMaxMessageSize.
func NewStdioConn(r io.Reader, w io.Writer, closer io.Closer, limit int64) *StdioConn {
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	return &StdioConn{r: bufio.NewReaderSize(r, 64*1024), w: w, closer: closer, limit: limit}
}

// Read returns the next non-empty line (without its "\n" or "\r\n"; the
// last one may lack its newline). A line longer than the limit is consumed
// to its end and reported as *TooLargeError.
func (c *StdioConn) Read(ctx context.Context) ([]byte, error) {
	for {
		var line []byte
		tooLarge := false
		for {
			chunk, isPrefix, err := c.r.ReadLine()
			if err != nil {
				if err == io.EOF && (len(line) > 0 || tooLarge) {
					break // the last line had no newline
				}
				return nil, err
			}
			if !tooLarge {
				if int64(len(line)+len(chunk)) > c.limit {
					tooLarge = true
					line = nil
				} else {
					line = append(line, chunk...)
				}
			}
			if !isPrefix {
				break
			}
		}
		if tooLarge {
			return nil, &TooLargeError{Limit: c.limit}
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}

// Write sends msg followed by a newline. msg must not contain a newline.
func (c *StdioConn) Write(ctx context.Context, msg []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, err := c.w.Write(buf)
	return err
}

// Close calls the closer given to NewStdioConn.
func (c *StdioConn) Close() error {
	if c.closer != nil {
		return c.closer.Close()
	}
	return nil
}
