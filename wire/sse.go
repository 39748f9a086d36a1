package wire

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"
)

// SSEEvent is one dispatched server-sent event (WHATWG HTML §9.2.6
// "Interpreting an event stream").
type SSEEvent struct {
	// Type is the event type: the last "event" field, or "message".
	Type string
	// ID is the last event ID in force when the event was dispatched; like
	// the browser's lastEventId it carries over to later events.
	ID string
	// Data is the "data" fields joined by "\n".
	Data string
	// Retry is the reconnection time the stream last set with a "retry"
	// field, or 0 when it set none.
	Retry time.Duration
}

// SSEReader parses a text/event-stream (WHATWG HTML §9.2.5, §9.2.6): UTF-8,
// an optional leading BOM, lines ended by CRLF, LF or CR, comments, fields
// with or without a colon. It reads as bytes arrive and holds at most one
// event in memory.
type SSEReader struct {
	r        *bufio.Reader
	limit    int64
	started  bool // the leading BOM has been dealt with
	afterCR  bool // the previous line ended with CR: a following LF belongs to it
	line     []byte
	data     strings.Builder
	hasData  bool
	typ      string
	lastID   string
	retry    time.Duration
	err      error
	received int64 // bytes of data kept for the event being built
}

// NewSSEReader reads events from r. An event whose fields, or any single
// line, exceed maxEventSize bytes ends the stream with a *TooLargeError
// instead of growing without bound. maxEventSize <= 0 means
// DefaultMaxMessageSize.
func NewSSEReader(r io.Reader, maxEventSize int64) *SSEReader {
	if maxEventSize <= 0 {
		maxEventSize = DefaultMaxMessageSize
	}
	return &SSEReader{r: bufio.NewReader(r), limit: maxEventSize}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// an event left unfinished at the end is discarded, as the standard says.
// After any error, Next keeps returning that error.
func (s *SSEReader) Next() (SSEEvent, error) {
	if s.err != nil {
		return SSEEvent{}, s.err
	}
	for {
		line, err := s.readLine()
		if err != nil {
			s.err = err
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if err := s.field(line); err != nil {
			s.err = err
			return SSEEvent{}, err
		}
	}
}

// readLine returns the next line without its end. A final line with no end
// is dropped with its event: no blank line can follow to dispatch it.
func (s *SSEReader) readLine() ([]byte, error) {
	if !s.started {
		s.started = true
		if b, _ := s.r.Peek(3); string(b) == "\uFEFF" {
			_, _ = s.r.Discard(3)
		}
	}
	s.line = s.line[:0]
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return nil, err
		}
		afterCR := s.afterCR
		s.afterCR = false
		switch c {
		case '\n':
			if afterCR {
				continue // the LF of a CRLF pair
			}
			return s.line, nil
		case '\r':
			s.afterCR = true
			return s.line, nil
		}
		if int64(len(s.line)) >= s.limit {
			return nil, &TooLargeError{Limit: s.limit}
		}
		s.line = append(s.line, c)
	}
}

// field processes one non-empty line (WHATWG HTML §9.2.6 "process the field").
func (s *SSEReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // a comment
	}
	name, value := string(line), ""
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name, value = name[:i], strings.TrimPrefix(name[i+1:], " ")
	}
	switch name {
	case "event":
		s.typ = value
	case "data":
		s.received += int64(len(value)) + 1
		if s.received > s.limit {
			return &TooLargeError{Limit: s.limit}
		}
		if s.hasData {
			s.data.WriteByte('\n')
		}
		s.data.WriteString(value)
		s.hasData = true
	case "id":
		if !strings.ContainsRune(value, 0) {
			s.lastID = value
		}
	case "retry":
		// Only ASCII digits (ParseUint takes no sign); values past 32 bits
		// of milliseconds are ignored.
		if ms, err := strconv.ParseUint(value, 10, 32); err == nil {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}

// dispatch ends the event being built; ok is false when it had no data.
func (s *SSEReader) dispatch() (SSEEvent, bool) {
	ev := SSEEvent{
		Type:  s.typ,
		ID:    strings.ToValidUTF8(s.lastID, "\uFFFD"),
		Data:  strings.ToValidUTF8(s.data.String(), "\uFFFD"),
		Retry: s.retry,
	}
	ok := s.hasData
	s.data.Reset()
	s.hasData = false
	s.typ = ""
	s.received = 0
	if ev.Type == "" {
		ev.Type = "message"
	}
	ev.Type = strings.ToValidUTF8(ev.Type, "\uFFFD")
	return ev, ok
}
