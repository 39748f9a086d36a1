package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// plainAnswers are answers plainAnswer reads (true) or leaves to
// ReadResponse (false).
var plainAnswers = []struct {
	raw   string
	plain bool
}{
	{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", true},
	{"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nDate: Sun, 06 Dec 2026 08:00:00 GMT\r\ncontent-length:  2 \t\r\n\r\n{}", true},
	{"HTTP/1.1 200\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", true},
	{"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", true},
	{"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}", true},
	{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 9\r\nX-Other: caf\xc3\xa9\r\n\r\ndata: x\n\n", true},
	{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}", true}, // the body ends early: io.ErrUnexpectedEOF
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n", true},

	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\n Content-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\nX-A: b\r\n\r\n{}", false},
	{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\n", false},
	{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 20x OK\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nMcp-Session-Id: s1\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Type: text/event-stream\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nTrailer: X\r\nContent-Length: 2\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\n\r\n{}", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", false},
	{"", false},
}

// TestPlainAnswer: plainAnswer reads the plain answers as ReadResponse
// does (status, length, Connection: close, Content-Type, body and its
// error) and leaves every other answer to ReadResponse unread.
func TestPlainAnswer(t *testing.T) {
	for _, tc := range plainAnswers {
		if got := checkPlainAnswer(t, []byte(tc.raw)); got != tc.plain {
			t.Errorf("%q: read by plainAnswer %v, want %v", tc.raw, got, tc.plain)
		}
	}
	// A head not whole in the buffer is ReadResponse's too.
	raw := plainAnswers[0].raw
	br := bufio.NewReaderSize(strings.NewReader(raw), 16)
	if plainAnswer(br, &http.Response{}) {
		t.Errorf("a head longer than the buffer: read by plainAnswer")
	}
	if rest, _ := io.ReadAll(br); string(rest) != raw {
		t.Errorf("a head longer than the buffer: %q left, want all", rest)
	}
}

// FuzzPlainAnswer: whatever a backend sends, plainAnswer accepts nothing
// ReadResponse refuses, reads what it accepts as ReadResponse does, and
// consumes nothing of what it leaves.
func FuzzPlainAnswer(f *testing.F) {
	for _, tc := range plainAnswers {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkPlainAnswer(t, raw) })
}

// checkPlainAnswer reads raw with plainAnswer and with ReadResponse, fails
// t where they differ, and reports whether plainAnswer read it.
func checkPlainAnswer(t *testing.T, raw []byte) bool {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(raw))
	var r http.Response
	if !plainAnswer(br, &r) {
		if rest, _ := io.ReadAll(br); !bytes.Equal(rest, raw) {
			t.Fatalf("%q: left to ReadResponse, but %q of it left", raw, rest)
		}
		return false
	}
	ref, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: http.MethodPost})
	if err != nil {
		t.Fatalf("%q: read by plainAnswer, refused by ReadResponse: %v", raw, err)
	}
	if r.StatusCode != ref.StatusCode || r.Status != ref.Status && !strings.HasPrefix(ref.Status, r.Status[:3]) || r.ContentLength != ref.ContentLength ||
		r.Close != ref.Close || r.Header.Get("Content-Type") != ref.Header.Get("Content-Type") || ref.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("%q: plainAnswer reads %d %q length %d close %v type %q; ReadResponse %d %q length %d close %v type %q",
			raw, r.StatusCode, r.Status, r.ContentLength, r.Close, r.Header.Get("Content-Type"),
			ref.StatusCode, ref.Status, ref.ContentLength, ref.Close, ref.Header.Get("Content-Type"))
	}
	got, gerr := io.ReadAll(&lengthReader{r: br, left: r.ContentLength})
	want, werr := io.ReadAll(ref.Body)
	if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: plainAnswer's body %q (%v), ReadResponse's %q (%v)", raw, got, gerr, want, werr)
	}
	return true
}
