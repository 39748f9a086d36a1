package wire_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// collect gathers what Read or Listen delivers.
type collect struct {
	mu  sync.Mutex
	raw []string
}

func (c *collect) deliver(m *wire.Message, raw []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, string(raw))
	return nil
}

func (c *collect) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.raw...)
}

// A response stream that breaks after a progress notification is resumed
// with GET and Last-Event-ID (MCP 2025-11-25 "Transports", Resumability
// and Redelivery); the client's message goes out as written, with the
// token and the extra header.
func TestForwardResumesBrokenStream(t *testing.T) {
	var lastEventID, apiKey, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			apiKey, auth = r.Header.Get("X-Api-Key"), r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: e0\nretry: 1\ndata: \n\n")
			fmt.Fprint(w, "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\n")
			fmt.Fprint(w, "data: \"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n")
			// The stream breaks here, before the response.
		case http.MethodGet:
			lastEventID = r.Header.Get("Last-Event-ID")
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n\n")
		}
	}))
	defer srv.Close()
	sess, err := wire.NewHTTPSession(srv.URL, srv.Client(), func(context.Context) (string, error) { return "tok", nil })
	if err != nil {
		t.Fatal(err)
	}
	sess.Header = http.Header{"X-Api-Key": {"k"}}
	m, rpcErr := wire.Decode([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`))
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	reply, err := sess.Forward(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	var c collect
	if err := reply.Read(context.Background(), c.deliver); err != nil {
		t.Fatal(err)
	}
	got := c.got()
	if len(got) != 2 || !strings.Contains(got[0], "notifications/progress") || !strings.Contains(got[0], "\n") || got[1] != `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}` {
		t.Errorf("delivered %q", got)
	}
	if lastEventID != "e1" || apiKey != "k" || auth != "Bearer tok" {
		t.Errorf("Last-Event-ID %q, X-Api-Key %q, Authorization %q", lastEventID, apiKey, auth)
	}
	if one := wire.Compact([]byte(got[0])); strings.Contains(string(one), "\n") {
		t.Errorf("Compact left a newline: %q", one)
	}
}

// A stream without event ids cannot be resumed: the request fails.
func TestForwardStreamWithoutIDs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
	}))
	defer srv.Close()
	sess, _ := wire.NewHTTPSession(srv.URL, srv.Client(), nil)
	m, _ := wire.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	reply, err := sess.Forward(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	var c collect
	err = reply.Read(context.Background(), c.deliver)
	if err == nil || !strings.Contains(err.Error(), "ended the event stream without a response") || len(c.got()) != 1 {
		t.Errorf("err %v, delivered %q", err, c.got())
	}
}

// Listen: 405 means no GET stream; a 401 is for the caller to handle.
func TestListen(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   func(error) bool
	}{
		{http.StatusMethodNotAllowed, func(err error) bool { return errors.Is(err, wire.ErrNoListenStream) }},
		{http.StatusUnauthorized, func(err error) bool { return errors.As(err, new(*wire.HTTPAuthError)) }},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept") != "text/event-stream" {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			w.WriteHeader(tc.status)
		}))
		sess, _ := wire.NewHTTPSession(srv.URL, srv.Client(), nil)
		opened := 0
		err := sess.Listen(context.Background(), (&collect{}).deliver, func() { opened++ })
		if !tc.want(err) || opened != 1 {
			t.Errorf("HTTP %d: err %v, opened %d", tc.status, err, opened)
		}
		srv.Close()
	}
}

// The legacy HTTP+SSE transport: the endpoint event names where to POST
// (resolved against the stream's URL); one on another origin is refused,
// since the token would go there.
func TestLegacySSESession(t *testing.T) {
	posted := make(chan string, 1)
	var other *httptest.Server
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: endpoint\ndata: /messages?sessionId=s1\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodGet && r.URL.Path == "/evil":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: %s/messages\n\n", other.URL)
		case r.Method == http.MethodPost && r.URL.Path == "/messages":
			posted <- r.URL.RawQuery + " " + r.Header.Get("Authorization")
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	other = httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	token := func(context.Context) (string, error) { return "tok", nil }

	sess, _ := wire.NewLegacySSESession(srv.URL+"/sse", srv.Client(), token)
	if err := sess.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m, _ := wire.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err := sess.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if got := <-posted; got != "sessionId=s1 Bearer tok" {
		t.Errorf("posted %q", got)
	}

	evil, _ := wire.NewLegacySSESession(srv.URL+"/evil", srv.Client(), token)
	if err := evil.Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "where the token is for") {
		t.Errorf("a cross-origin endpoint: %v", err)
	}
}
