package ops

import (
	"io"
	"sync"
	"time"
)

// LogWriter sizes: held records are written within LogFlushInterval, and
// at most LogBufferSize bytes of them are held.
const (
	LogFlushInterval = 10 * time.Millisecond
	LogBufferSize    = 64 << 10
)

// LogWriter is serve's log output (the log file or stderr). Records
// written to it directly go out at once, each with one write(2), as a log
// reader expects. Records written through Held (the gateway's record of
// every forwarded call, one per request under load) are held and written
// together: within LogFlushInterval, as soon as LogBufferSize bytes are
// waiting (the writer then blocks while they are written: nothing is
// dropped), with the next direct record (which keeps the file in order),
// or at Close. So a busy gateway makes one write(2) per LogFlushInterval
// for its call records instead of one per call.
//
// What a crash may lose: Close (serve's clean exit on SIGINT or SIGTERM,
// or the end of --stdio) writes everything held; a process killed
// outright (SIGKILL, a panic, the machine going down) loses at most the
// held records of its last LogFlushInterval, as with other buffered
// loggers (zap's BufferedWriteSyncer, glog). Each record is written whole:
// slog hands over one record per Write.
type LogWriter struct {
	w io.Writer

	mu      sync.Mutex
	buf     []byte // held records
	pending bool   // a flush is scheduled
	closed  bool
}

// NewLogWriter writes to w (see LogWriter).
func NewLogWriter(w io.Writer) *LogWriter {
	return &LogWriter{w: w}
}

// Write writes one record at once, after the held ones.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	l.flushLocked()
	return len(p), nil
}

// Held is the writer of records that may wait up to LogFlushInterval.
func (l *LogWriter) Held() io.Writer { return heldWriter{l} }

type heldWriter struct{ l *LogWriter }

func (h heldWriter) Write(p []byte) (int, error) {
	l := h.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.w.Write(p)
	}
	if len(l.buf)+len(p) > LogBufferSize {
		l.flushLocked()
		if len(p) > LogBufferSize {
			return l.w.Write(p)
		}
	}
	l.buf = append(l.buf, p...)
	if !l.pending {
		l.pending = true
		time.AfterFunc(LogFlushInterval, l.Flush)
	}
	return len(p), nil
}

// Flush writes the records held.
func (l *LogWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = false
	l.flushLocked()
}

func (l *LogWriter) flushLocked() {
	if len(l.buf) == 0 {
		return
	}
	l.w.Write(l.buf) // a failed log write has nowhere to be reported
	if cap(l.buf) > 2*LogBufferSize {
		l.buf = nil
	} else {
		l.buf = l.buf[:0]
	}
}

// Close writes the records held; later ones are written at once. It
// does not close the underlying writer.
func (l *LogWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.closed = true
	return nil
}
