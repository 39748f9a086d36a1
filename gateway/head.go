package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/agentauth/agentauth/wire"
)

// The head of a backend's common answer to a POST, read without
// net/http's parser: ReadResponse builds a header map, a string for every
// field and three readers, about ten of the sixty allocations a forwarded
// call cost serve's process. plainAnswer reads only an answer whose head
// is already whole in the buffer and is written
// plainly (RFC 9112 §4, §5): "HTTP/1.1", a final status other than 204
// and 304, a Content-Length of digits and no Transfer-Encoding, every
// field once among those it reads, names that are tokens right before
// their colon, values without control characters, CRLF line ends, no
// line folding. Whatever else it finds, it consumes nothing and leaves
// the answer to ReadResponse, which reads it (or refuses it) as before:
// so it accepts nothing ReadResponse refuses and reads what it accepts as
// ReadResponse would.

// The headers of a plain answer, shared by every answer and never
// written: only Content-Type, which reply reads, in one of its two common
// forms. An answer with any other Content-Type, or with an
// Mcp-Session-Id, goes to ReadResponse.
var (
	jsonAnswerHeader  = http.Header{"Content-Type": {"application/json"}}
	eventAnswerHeader = http.Header{"Content-Type": {"text/event-stream"}}
)

// plainAnswer reads the head of a plain answer from br (see above) into
// an http.Response without a Body, or reports false having consumed
// nothing. It waits for the answer's first bytes; the head must be in
// the buffer then.
func plainAnswer(br *bufio.Reader, resp *http.Response) bool {
	if _, err := br.Peek(1); err != nil {
		return false
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return false
	}
	head := buf[:end+2] // every line with its CRLF
	line, head := cutLine(head)
	// status-line = HTTP-version SP status-code SP [ reason-phrase ]
	// (net/http takes the line without " reason" too)
	if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || len(line) > 12 && line[12] != ' ' {
		return false
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified || !plainValue(line[min(len(line), 13):]) {
		return false
	}
	length := int64(-1)
	var header http.Header
	closing := false
	for len(head) > 0 {
		line, head = cutLine(head)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return false
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !plainValue(value) {
			return false
		}
		switch {
		case asciiFold(name, "Content-Length"):
			n, ok := digits(value)
			if !ok || length >= 0 {
				return false
			}
			length = n
		case asciiFold(name, "Content-Type"):
			if header != nil {
				return false
			}
			switch string(value) {
			case "application/json":
				header = jsonAnswerHeader
			case "text/event-stream":
				header = eventAnswerHeader
			default:
				return false
			}
		case asciiFold(name, "Connection"):
			switch {
			case asciiFold(value, "close"):
				closing = true
			case !asciiFold(value, "keep-alive"):
				return false
			}
		case asciiFold(name, "Transfer-Encoding"), asciiFold(name, "Trailer"), asciiFold(name, "Mcp-Session-Id"):
			return false
		}
	}
	if length < 0 {
		return false
	}
	br.Discard(end + 4)
	*resp = http.Response{Status: statusOf(code), StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, ContentLength: length, Close: closing}
	return true
}

// cutLine cuts the first CRLF-ended line off head.
func cutLine(head []byte) (line, rest []byte) {
	i := bytes.Index(head, []byte("\r\n"))
	return head[:i], head[i+2:]
}

// plainValue reports whether a field value (or reason phrase) holds no
// control character but HTAB (RFC 9110 §5.5) and no byte net/http would
// read otherwise (obs-text passes, as there).
func plainValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// isToken reports whether b is an RFC 9110 §5.6.2 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !wire.IsTokenChar(c) {
			return false
		}
	}
	return true
}

// asciiFold reports whether b equals s, ASCII letters compared without
// case (as field names and these values are, RFC 9110 §5.1).
func asciiFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// digits is a Content-Length (RFC 9110 §8.6): one or more digits, at
// most 18 (no overflow).
func digits(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// statusOf is the Status of a response with the status code, without
// allocating for the common ones.
func statusOf(code int) string {
	switch code {
	case http.StatusOK:
		return "200 OK"
	case http.StatusAccepted:
		return "202 Accepted"
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// lengthReader reads the left bytes of a body of known length: io.EOF
// after them, io.ErrUnexpectedEOF when the connection ends before (as
// net/http's body does).
type lengthReader struct {
	r    io.Reader
	left int64
}

func (l *lengthReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	switch {
	case l.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}
