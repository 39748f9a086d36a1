package ops

import (
	"io"
	"sync"
	"time"
)

// LogWriter sizes: records are held at most LogFlushInterval, and at most
// LogBufferSize bytes of them.
const (
	LogFlushInterval = 10 * time.Millisecond
	LogBufferSize    = 64 << 10
)

// LogWriter is serve's log output: a bounded buffer in front of the log
// file or stderr, so that a busy serve (an audit record per gateway call)
// makes one write(2) per LogFlushInterval rather than one per record.
// A record that comes after a quiet spell (nothing written for
// LogFlushInterval) is written at once, as are all records once Close has
// run; the ones that follow it within the interval are held and written
// together when it ends, or as soon as LogBufferSize bytes are waiting (the
// writer then blocks while the buffer is written, and drops nothing).
//
// What a crash may lose: Close (serve's clean exit, SIGINT or SIGTERM)
// writes everything held; a process killed outright (SIGKILL, a panic, the
// machine going down) loses the records of its last LogFlushInterval at
// most, as with other buffered loggers (zap's BufferedWriteSyncer, glog).
// Each record is written whole: slog hands over one record per Write.
type LogWriter struct {
	w io.Writer

	mu      sync.Mutex
	buf     []byte
	quiet   time.Time // records before then are held
	pending bool      // a flush is scheduled
	closed  bool
}

// NewLogWriter buffers writes to w (see LogWriter).
func NewLogWriter(w io.Writer) *LogWriter {
	return &LogWriter{w: w}
}

// Write writes one log record, or holds it for the next flush.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.closed || len(l.buf) == 0 && now.After(l.quiet) {
		l.quiet = now.Add(LogFlushInterval)
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
		time.AfterFunc(max(l.quiet.Sub(now), time.Millisecond), l.Flush)
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
	l.quiet = time.Now().Add(LogFlushInterval)
	if cap(l.buf) > LogBufferSize {
		l.buf = nil
	} else {
		l.buf = l.buf[:0]
	}
}

// Close writes the records held; later records are written at once.
// It does not close the underlying writer.
func (l *LogWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.closed = true
	return nil
}
