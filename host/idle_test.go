package host

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// A connection keeps the token it authenticated with only when it will
// validate it again (introspection with a cache TTL): otherwise the
// grant is all it holds, which keeps an idle connection small and no
// secret in memory longer than needed.
func TestHeldTokenKeptOnlyToRecheck(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	c := initialized(t, h, wire.DialectDesign)
	if err := authenticate(t, c, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.conns {
		v := s.own.view(h.now())
		if v["dev"].grant == nil {
			t.Fatal("no grant held after authenticate")
		}
		s.own.mu.Lock()
		if e := s.own.held.get("dev"); e.token != "" {
			t.Errorf("a static scheme's grant keeps its token %q; want none (nothing re-checks it)", e.token)
		}
		s.own.mu.Unlock()
	}
}

// initialize's scheme metadata, built once per config, follows a reload:
// a connection opened after it sees the new schemes.
func TestInitializeAfterReload(t *testing.T) {
	h := newTestHost(t, twoSchemes, Options{})
	schemes := func() []string {
		c := dial(t, h)
		res, err := wire.Initialize(context.Background(), c, wire.DialectDesign, "test")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range res.ResourceMetadata.AuthSchemes {
			ids = append(ids, s.ID)
		}
		return ids
	}
	if got := schemes(); len(got) != 2 {
		t.Fatalf("before the reload: schemes %v, want a and b", got)
	}
	cfg, err := ParseConfig([]byte(oneScheme))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resolve("http://127.0.0.1:7777")
	if err := h.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if got := schemes(); len(got) != 1 || got[0] != "a" {
		t.Errorf("after the reload: schemes %v, want [a]", got)
	}
}

// A client may send its first message right behind the upgrade request,
// before the 101 answer: net/http has read it already when the
// connection is handed to the WebSocket, which must start with it
// (smallBuffers carries it into the smaller buffer).
func TestWebSocketMessageBehindUpgradeRequest(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	srv := httptest.NewServer(h.WebSocketHandler(""))
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(pushWait))
	upgrade := "GET / HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	// One masked text frame (RFC 6455 §5.2), in the same write.
	payload := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	key := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x81, 0x80 | byte(len(payload))}, key[:]...)
	for i, b := range payload {
		frame = append(frame, b^key[i%4])
	}
	if _, err := c.Write(append([]byte(upgrade), frame...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	head := make([]byte, 2)
	if _, err := io.ReadFull(br, head); err != nil {
		t.Fatalf("no answer to the message sent with the upgrade: %v", err)
	}
	answer := make([]byte, head[1]&0x7f)
	if _, err := io.ReadFull(br, answer); err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{}}`; string(answer) != want {
		t.Errorf("answer %s, want %s", answer, want)
	}
}

// A WebSocket connection keeps a write buffer of wsBufferSize and a read
// buffer of 16 bytes, not net/http's 4 KiB ones; it reads through a
// pooledReader.
func TestWebSocketBuffersAreSmall(t *testing.T) {
	sizes := make(chan [2]int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := smallBuffers{w}.Hijack()
		if err != nil {
			t.Error(err)
			sizes <- [2]int{}
			return
		}
		sizes <- [2]int{brw.Reader.Size(), brw.Writer.Size()}
		c.Close()
	}))
	t.Cleanup(srv.Close)
	if resp, err := http.Get(srv.URL); err == nil {
		resp.Body.Close()
	}
	if got := <-sizes; got != [2]int{minBufioSize, wsBufferSize} {
		t.Errorf("buffers of %d and %d bytes, want %d and %d", got[0], got[1], minBufioSize, wsBufferSize)
	}
}

// pooledReader returns its pending bytes, then what it reads, whole and
// in order, through reads of any size, with the error after the bytes
// read with it; it holds a buffer only while bytes of it are unread, and
// reads of at least wsBufferSize bypass it.
func TestPooledReader(t *testing.T) {
	var src bytes.Buffer
	for i := range 3 * wsBufferSize {
		src.WriteByte(byte(i))
	}
	want := append([]byte("pending"), src.Bytes()...)
	chunks := &chunkReader{data: src.Bytes(), sizes: []int{700, 3, 100, 512, 1, 2000}, err: io.ErrUnexpectedEOF}
	p := &pooledReader{r: chunks, pending: []byte("pending"), fill: func() (*[]byte, int, error) {
		buf := readBuffers.Get().(*[]byte)
		n, err := chunks.Read(*buf)
		return buf, n, err
	}}
	var got []byte
	var err error
	for i := 0; err == nil; i++ {
		b := make([]byte, []int{2, 16, 5, 600, 1, 40}[i%6])
		var n int
		n, err = p.Read(b)
		got = append(got, b[:n]...)
		if p.buf != nil && p.off == p.n {
			t.Fatalf("read %d: holds a buffer with no unread bytes", i)
		}
	}
	if !bytes.Equal(got, want) {
		t.Errorf("read %d bytes, not the %d sent in order", len(got), len(want))
	}
	if err != io.ErrUnexpectedEOF || p.buf != nil {
		t.Errorf("ended with %v, holding a buffer: %v; want io.ErrUnexpectedEOF, none", err, p.buf != nil)
	}
	if _, err := p.Read(make([]byte, 4)); err != io.ErrUnexpectedEOF {
		t.Errorf("a read after the error: %v, want it again", err)
	}
}

// Over a TCP connection, pooledReader reads what was sent whole and in
// order, ends with io.EOF when the peer closes, and a read waiting when
// the connection is closed here ends as c.Read's would (net.ErrClosed, in
// a *net.OpError).
func TestPooledReaderTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, closer := range []string{"peer", "here"} {
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		pc := &pooledConn{Conn: c}
		pc.r.r, pc.r.fill = c, readWhenReady(c)
		for _, msg := range []string{"short", strings.Repeat("x", 3*wsBufferSize), "tail"} {
			if _, err := peer.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(msg))
			for off := 0; off < len(got); {
				n, err := pc.Read(got[off:min(len(got), off+10)])
				if err != nil {
					t.Fatalf("%s: read: %v", closer, err)
				}
				off += n
			}
			if string(got) != msg {
				t.Fatalf("%s: read %q, sent %q", closer, got, msg)
			}
			if pc.r.buf != nil {
				t.Errorf("%s: holds a read buffer with nothing left to read", closer)
			}
		}
		var want error = io.EOF
		if closer == "peer" {
			peer.Close()
		} else {
			done := make(chan error, 1)
			go func() { _, err := pc.Read(make([]byte, 8)); done <- err }()
			c.Close()
			want = net.ErrClosed
			err := <-done
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != "read" {
				t.Errorf("%s: error %v (%T), want a *net.OpError of a read", closer, err, err)
			}
			if !errors.Is(err, want) {
				t.Errorf("%s: error %v, want %v", closer, err, want)
			}
			peer.Close()
			continue
		}
		if _, err := pc.Read(make([]byte, 8)); !errors.Is(err, want) {
			t.Errorf("%s: error %v, want %v", closer, err, want)
		}
		c.Close()
	}
}

// chunkReader returns data in reads of at most sizes[i] bytes, the last
// one with err.
type chunkReader struct {
	data  []byte
	sizes []int
	err   error
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, c.err
	}
	size := len(c.data)
	if len(c.sizes) > 0 {
		size, c.sizes = min(size, c.sizes[0]), c.sizes[1:]
	}
	n := copy(b, c.data[:size])
	c.data = c.data[n:]
	if len(c.data) == 0 {
		return n, c.err
	}
	return n, nil
}

// Messages many times the connection's buffers (wsBufferSize) go through
// whole, both ways.
func TestWebSocketMessagesLargerThanBuffers(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	c := initializedWebSocket(t, h)
	if err := authenticate(t, c, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("0123456789abcdef", 20*wsBufferSize/16)
	var got struct {
		Text string `json:"text"`
	}
	if err := c.Call(ctx, wire.MethodEcho, map[string]string{"text": text}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != text {
		t.Errorf("echo of %d bytes came back as %d bytes", len(text), len(got.Text))
	}
}
