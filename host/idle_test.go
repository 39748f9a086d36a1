package host

import (
	"bufio"
	"context"
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
		if e := s.own.held["dev"]; e.token != "" {
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

// A WebSocket connection keeps read and write buffers of wsBufferSize,
// not net/http's 4 KiB ones.
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
	if got := <-sizes; got != [2]int{wsBufferSize, wsBufferSize} {
		t.Errorf("buffers of %d and %d bytes, want %d", got[0], got[1], wsBufferSize)
	}
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
