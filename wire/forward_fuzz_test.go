package wire_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// fuzzServer answers every request with the body and content type the
// current fuzz input set; a fuzz worker runs one input at a time, the
// mutex guards against the server's goroutines.
type fuzzServer struct {
	mu          sync.Mutex
	contentType string
	body        []byte
	srv         *httptest.Server
}

func newFuzzServer(f *testing.F) *fuzzServer {
	fs := &fuzzServer{}
	fs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		ct, body := fs.contentType, fs.body
		fs.mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Path == "/messages" { // the legacy transport's POST
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", ct)
		w.Write(body)
	}))
	f.Cleanup(fs.srv.Close)
	return fs
}

func (fs *fuzzServer) answer(ct string, body []byte) {
	fs.mu.Lock()
	fs.contentType, fs.body = ct, body
	fs.mu.Unlock()
}

// FuzzForwardReply: whatever a server answers a forwarded request with (a
// JSON body or an event stream of any bytes, resumed with GET when its
// events have ids), Read hands over only messages that decode and fit the
// size bound, nothing after the response to the request, and returns nil
// only once that response was handed over.
func FuzzForwardReply(f *testing.F) {
	for _, s := range []struct {
		stream bool
		body   string
	}{
		{false, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{false, `{"jsonrpc":"2.0","id":8,"result":{}}`},
		{false, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`},
		{false, `[{"jsonrpc":"2.0","id":7,"result":{}}]`},
		{true, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"},
		{true, "id: e1\nretry: 1\ndata: \n\n"},
		{true, "event: ping\ndata: x\n\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":7,\"result\":{}}\r\n\r\n"},
		{true, ": comment\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"},
		{true, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n"},
		{true, "data:\xff\xfe\n\n"},
	} {
		f.Add(s.stream, []byte(s.body))
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, stream bool, body []byte) {
		ct := "application/json"
		if stream {
			ct = "text/event-stream"
		}
		fs.answer(ct, body)
		sess, err := wire.NewHTTPSession(fs.srv.URL+"/mcp", fs.srv.Client(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := wire.Decode([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}`))
		// Resumes wait for the stream's retry time: the deadline bounds them.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		reply, err := sess.Forward(ctx, m)
		if err != nil || reply == nil {
			return
		}
		answered := false
		err = reply.Read(ctx, func(got *wire.Message, raw []byte) error {
			if answered {
				t.Fatalf("%q: a message was handed over after the response", body)
			}
			if len(raw) > wire.DefaultMaxMessageSize {
				t.Fatalf("%q: a message of %d bytes passed the bound", body, len(raw))
			}
			if again, derr := wire.Decode(raw); derr != nil || again.Method != got.Method || again.ID.String() != got.ID.String() {
				t.Fatalf("%q: handed over %q, which is not the message decoded", body, raw)
			}
			answered = got.IsResponse() && (got.ID.String() == "7" || got.ID.IsZero() && got.Error != nil)
			return nil
		})
		if err == nil && !answered {
			t.Fatalf("%q: Read returned without the response", body)
		}
	})
}

// FuzzLegacySSE: whatever the event stream of an HTTP+SSE server (MCP
// 2024-11-05) holds, Connect accepts only an endpoint on the stream's
// origin (the token goes there: the client's transport refuses any other
// host and the target fails if one is asked for), and Read hands over only
// messages that decode and fit the size bound.
func FuzzLegacySSE(f *testing.F) {
	for _, s := range []string{
		"event: endpoint\ndata: /messages?sessionId=s1\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"event: endpoint\ndata: http://evil.example/messages\n\n",
		"event: endpoint\ndata: //evil.example/messages\n\n",
		"event: endpoint\ndata: /\\evil.example/messages\n\n",
		"event: endpoint\ndata: http://127.0.0.1:1/messages\n\n",
		"event: endpoint\ndata: %zz\n\n",
		"event: endpoint\r\ndata: messages\r\n\r\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n",
		"data: {}\n\nevent: endpoint\ndata:\n\n",
		"retry: 10\nid: 3\nevent: endpoint\ndata: ?x=1\ndata: 2\n\n",
	} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	origin, _ := url.Parse(fs.srv.URL)
	var mu sync.Mutex
	var leaked string // a request that left the stream's origin
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != origin.Host || r.URL.Scheme != origin.Scheme {
			mu.Lock()
			leaked = r.URL.Redacted()
			mu.Unlock()
			return nil, errors.New("not the stream's origin")
		}
		return fs.srv.Client().Transport.RoundTrip(r)
	})}
	f.Fuzz(func(t *testing.T, body []byte) {
		mu.Lock()
		leaked = ""
		mu.Unlock()
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			if leaked != "" {
				t.Fatalf("%q: the session sent a request to %s, not the stream's origin", body, leaked)
			}
		}()
		fs.answer("text/event-stream", body)
		token := func(context.Context) (string, error) { return "tok", nil }
		sess, err := wire.NewLegacySSESession(fs.srv.URL+"/sse", client, token)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := sess.Connect(ctx); err != nil {
			return
		}
		defer sess.Close()
		m, _ := wire.Decode([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		sess.Send(ctx, m) // the transport records it if it leaves the origin
		sess.Read(func(got *wire.Message, raw []byte) error {
			if len(raw) > wire.DefaultMaxMessageSize {
				t.Fatalf("%q: a message of %d bytes passed the bound", body, len(raw))
			}
			if again, derr := wire.Decode(raw); derr != nil || again.Method != got.Method {
				t.Fatalf("%q: handed over %q, which is not the message decoded", body, raw)
			}
			return nil
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
