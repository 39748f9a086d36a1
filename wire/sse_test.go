package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readAll collects every event until the stream ends.
func readAll(t *testing.T, r *SSEReader) []SSEEvent {
	t.Helper()
	var out []SSEEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, ev)
	}
}

func msg(data string) SSEEvent { return SSEEvent{Type: "message", Data: data} }

func TestSSEReaderParsesStreams(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []SSEEvent
	}{
		{"single event", "data: hello\n\n", []SSEEvent{msg("hello")}},
		{"multi-line data joined by newline", "data: YHOO\ndata: +2\ndata: 10\n\n", []SSEEvent{msg("YHOO\n+2\n10")}},
		{"comments ignored", ": keep-alive\ndata: a\n:another\n\n:\n\n", []SSEEvent{msg("a")}},
		{"CRLF line endings", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []SSEEvent{msg("a\nb"), msg("c")}},
		{"CR line endings", "data: a\rdata: b\r\rdata: c\r\r", []SSEEvent{msg("a\nb"), msg("c")}},
		{"mixed line endings", "data: a\r\n\ndata: b\r\rdata: c\n\r\n", []SSEEvent{msg("a"), msg("b"), msg("c")}},
		{"leading BOM skipped", "\uFEFFdata: a\n\n", []SSEEvent{msg("a")}},
		{"only the first BOM is skipped", "\uFEFF\uFEFFdata: a\n\n", nil},
		{"one leading space stripped", "data:  two\ndata:none\n\n", []SSEEvent{msg(" two\nnone")}},
		{"field without colon has an empty value", "data\n\ndata\ndata\n\ndata:", []SSEEvent{msg(""), msg("\n")}},
		{"colon in the value kept", `data: {"a":"b:c"}` + "\n\n", []SSEEvent{msg(`{"a":"b:c"}`)}},
		{"event type", "event: ping\ndata: x\n\ndata: y\n\n", []SSEEvent{{Type: "ping", Data: "x"}, msg("y")}},
		{"event without data is not dispatched", "event: ping\nid: 1\n\ndata: y\n\n", []SSEEvent{{Type: "message", ID: "1", Data: "y"}}},
		{"id carries over", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
			[]SSEEvent{{Type: "message", ID: "7", Data: "a"}, {Type: "message", ID: "7", Data: "b"}, msg("c")}},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
			[]SSEEvent{{Type: "message", ID: "1", Data: "a"}, {Type: "message", ID: "1", Data: "b"}}},
		{"retry sets the reconnection time", "retry: 1500\ndata: a\n\nretry: 1x\ndata: b\n\nretry: +3\ndata: c\n\n",
			[]SSEEvent{{Type: "message", Data: "a", Retry: 1500 * time.Millisecond}, {Type: "message", Data: "b", Retry: 1500 * time.Millisecond}, {Type: "message", Data: "c", Retry: 1500 * time.Millisecond}}},
		{"unknown fields ignored", "foo: bar\ndata: a\nData: b\n\n", []SSEEvent{msg("a")}},
		{"empty data line is an event", "id: 1\ndata:\n\n", []SSEEvent{{Type: "message", ID: "1", Data: ""}}},
		{"unfinished event at the end is discarded", "data: a\n\ndata: b\n", []SSEEvent{msg("a")}},
		{"invalid UTF-8 replaced", "data: a\xffb\n\n", []SSEEvent{msg("a\uFFFDb")}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		readers := map[string]func(string) io.Reader{
			"whole":    func(s string) io.Reader { return strings.NewReader(s) },
			"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
			"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		}
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got := readAll(t, NewSSEReader(mk(tt.in), 1<<10))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// stallReader hands out its bytes, then fails every further read: the
// stream has nothing more yet. A reader that wants bytes past the end of an
// event before dispatching it would see errStalled instead of the event.
type stallReader struct{ r io.Reader }

var errStalled = errors.New("read past the end of the event")

func (s stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		return n, errStalled
	}
	return n, err
}

func TestSSEReaderDispatchesWithoutReadingAhead(t *testing.T) {
	for _, in := range []string{"data: x\n\n", "data: x\r\n\r\n", "data: x\r\r"} {
		r := NewSSEReader(stallReader{iotest.OneByteReader(strings.NewReader(in))}, 0)
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("%q: Next: %v", in, err)
		}
		if ev.Data != "x" {
			t.Errorf("%q: data = %q, want x", in, ev.Data)
		}
		if _, err := r.Next(); !errors.Is(err, errStalled) {
			t.Errorf("%q: second Next = %v, want the stalled read", in, err)
		}
	}
}

// endless is an infinite stream of one byte.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

func TestSSEReaderBoundsEventSize(t *testing.T) {
	line := "data: " + strings.Repeat("b", 60) + "\n"
	tests := []struct {
		name string
		in   io.Reader
	}{
		{"one endless line", io.MultiReader(strings.NewReader("data: "), endless('a'))},
		{"endless comment", io.MultiReader(strings.NewReader(":"), endless('a'))},
		{"many data lines", strings.NewReader(strings.Repeat(line, 100) + "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(tt.in, 256)
			_, err := r.Next()
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.Limit != 256 {
				t.Fatalf("Next = %v, want *TooLargeError with limit 256", err)
			}
			if !errors.Is(err, ErrMessageTooLarge) {
				t.Errorf("errors.Is(%v, ErrMessageTooLarge) = false", err)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("Next after the error = %v, want the same error", again)
			}
		})
	}
}

// Blank lines and comments keep nothing: a long run of them is not an
// oversized event.
func TestSSEReaderBlankLinesKeepNothing(t *testing.T) {
	in := io.MultiReader(io.LimitReader(endless('\n'), 1<<16), strings.NewReader(strings.Repeat(":ping\n", 1000)+"data: a\n\n"))
	r := NewSSEReader(in, 256)
	if ev, err := r.Next(); err != nil || ev.Data != "a" {
		t.Fatalf("Next = %q, %v; want the event after the blank lines", ev.Data, err)
	}
}

func TestSSEReaderAcceptsEventAtTheLimit(t *testing.T) {
	data := strings.Repeat("x", 100)
	r := NewSSEReader(strings.NewReader("data:"+data+"\n\n"), 105)
	ev, err := r.Next()
	if err != nil || ev.Data != data {
		t.Fatalf("Next = %q, %v; want the 100-byte event", ev.Data, err)
	}
}
