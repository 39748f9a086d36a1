package wire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

func readAll(t *testing.T, c wire.Conn) (msgs []string, tooLarge int) {
	t.Helper()
	for {
		b, err := c.Read(context.Background())
		var tl *wire.TooLargeError
		switch {
		case err == nil:
			msgs = append(msgs, string(b))
		case errors.As(err, &tl):
			if !errors.Is(err, wire.ErrMessageTooLarge) {
				t.Fatalf("TooLargeError does not match ErrMessageTooLarge")
			}
			tooLarge++
		case errors.Is(err, io.EOF):
			return msgs, tooLarge
		default:
			t.Fatalf("Read: %v", err)
		}
	}
}

func TestStdioFraming(t *testing.T) {
	in := "{\"a\":1}\n\n{\"b\":2}\r\n   \n{\"c\":3}" // blank lines skipped, CRLF accepted, last line without newline
	c := wire.NewStdioConn(strings.NewReader(in), io.Discard, nil, 0)
	msgs, tooLarge := readAll(t, c)
	want := []string{`{"a":1}`, `{"b":2}`, `   `, `{"c":3}`}
	if tooLarge != 0 || fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Fatalf("got %q (%d too large), want %q", msgs, tooLarge, want)
	}
}

// An oversized line is reported once and skipped; the following messages
// still arrive. The big line is longer than the reader's buffer.
func TestStdioSizeLimit(t *testing.T) {
	const limit = 1000
	exact := `{"x":"` + strings.Repeat("a", limit-8) + `"}`
	if len(exact) != limit {
		t.Fatalf("test setup: exact line is %d bytes", len(exact))
	}
	big := strings.Repeat("b", 200*1024)
	in := `{"first":1}` + "\n" + big + "\n" + exact + "\n" + exact + "x\n" + `{"last":1}` + "\n"
	c := wire.NewStdioConn(strings.NewReader(in), io.Discard, nil, limit)
	msgs, tooLarge := readAll(t, c)
	want := []string{`{"first":1}`, exact, `{"last":1}`}
	if tooLarge != 2 || fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Fatalf("got %d messages (%d too large), want %d messages and 2 too large", len(msgs), tooLarge, len(want))
	}
}

func TestStdioWriteAndRoundTrip(t *testing.T) {
	pr, pw := io.Pipe()
	writer := wire.NewStdioConn(strings.NewReader(""), pw, pw, 0)
	reader := wire.NewStdioConn(pr, io.Discard, nil, 0)

	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := wire.NewRequest(wire.NumberID(int64(i)), "echo", map[string]string{"text": strings.Repeat("z", 5000)})
			b, _ := wire.Encode(req)
			if err := writer.Write(context.Background(), b); err != nil {
				t.Errorf("Write: %v", err)
			}
		}()
	}
	go func() { wg.Wait(); writer.Close() }()

	seen := map[string]bool{}
	for {
		b, err := reader.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		m, derr := wire.Decode(b)
		if derr != nil {
			t.Fatalf("concurrent writes interleaved: %v", derr)
		}
		seen[m.ID.String()] = true
	}
	if len(seen) != n {
		t.Fatalf("read %d distinct messages, want %d", len(seen), n)
	}
}

// wsEcho serves one WebSocket connection: it answers each message with the
// message itself, and each oversized message with a -32600 error, keeping
// the connection open.
func wsEcho(t *testing.T, limit int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := wire.AcceptWebSocket(w, r, limit)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			b, err := c.Read(r.Context())
			if errors.Is(err, wire.ErrMessageTooLarge) {
				resp, _ := wire.Encode(wire.NewErrorResponse(wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "%v", err)))
				if c.Write(r.Context(), resp) != nil {
					return
				}
				continue
			}
			if err != nil {
				return
			}
			if c.Write(r.Context(), b) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWebSocketSizeLimitKeepsConnection(t *testing.T) {
	const limit = 64 * 1024 // above the library's 32 KiB default, so raising it matters
	srv := wsEcho(t, limit)
	ctx := context.Background()
	c, err := wire.DialWebSocket(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	roundTrip := func(msg []byte) string {
		t.Helper()
		if err := c.Write(ctx, msg); err != nil {
			t.Fatalf("Write: %v", err)
		}
		b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		return string(b)
	}

	atLimit := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), limit-8)...)
	atLimit = append(atLimit, `"}`...)
	if got := roundTrip(atLimit); got != string(atLimit) {
		t.Fatalf("a message of exactly the limit was not echoed (got %d bytes)", len(got))
	}
	over := append(bytes.Clone(atLimit), ' ')
	got := roundTrip(over)
	m, derr := wire.Decode([]byte(got))
	if derr != nil || m.Error == nil || m.Error.Code != wire.CodeInvalidRequest {
		t.Fatalf("oversized message answered with %s, want a -32600 error", got)
	}
	if got := roundTrip([]byte(`{"after":true}`)); got != `{"after":true}` {
		t.Fatalf("after an oversized message: got %s", got)
	}
}

// The client side enforces its own limit on what the server sends.
func TestWebSocketClientLimit(t *testing.T) {
	srv := wsEcho(t, 0)
	ctx := context.Background()
	c, err := wire.DialWebSocket(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Write(ctx, bytes.Repeat([]byte("x"), 101)); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, []byte(`{"ok":1}`)); err != nil {
		t.Fatal(err)
	}
	var tl *wire.TooLargeError
	if _, err := c.Read(ctx); !errors.As(err, &tl) || tl.Limit != 100 {
		t.Fatalf("Read of an oversized echo: %v, want TooLargeError{100}", err)
	}
	if b, err := c.Read(ctx); err != nil || string(b) != `{"ok":1}` {
		t.Fatalf("Read after oversized: %q, %v", b, err)
	}
}

func TestWebSocketHandshakeRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "wrong connection token", http.StatusForbidden)
	}))
	defer srv.Close()
	_, err := wire.DialWebSocket(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/?tkn=bad", nil, 0)
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("DialWebSocket = %v, want an error naming HTTP 403", err)
	}
}
