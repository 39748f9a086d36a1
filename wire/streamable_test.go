package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// seen is one HTTP request the fake MCP server received.
type seen struct {
	httpMethod string
	header     http.Header
	msg        *Message // nil for a request without a body
}

// fakeMCP is an httptest MCP endpoint: handle answers each decoded message.
type fakeMCP struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []seen
	handle func(w http.ResponseWriter, r *http.Request, m *Message)
}

func newFakeMCP(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, m *Message)) *fakeMCP {
	f := &fakeMCP{t: t, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m *Message
		if len(body) > 0 {
			var derr *Error
			if m, derr = Decode(body); derr != nil {
				t.Errorf("server got an invalid message %s: %v", body, derr)
				http.Error(w, "bad message", http.StatusBadRequest)
				return
			}
		}
		f.mu.Lock()
		f.got = append(f.got, seen{httpMethod: r.Method, header: r.Header.Clone(), msg: m})
		f.mu.Unlock()
		f.handle(w, r, m)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMCP) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.got...)
}

func (f *fakeMCP) session(t *testing.T, token string) *HTTPSession {
	t.Helper()
	s, err := NewHTTPSession(f.srv.URL+"/mcp", f.srv.Client(), func(context.Context) (string, error) { return token, nil })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func result(t *testing.T, id ID, v any) []byte {
	t.Helper()
	m, err := NewResult(id, v)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Encode(m)
	return b
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// writeSSE sends each message as one event, flushing between them so the
// client reads them as separate arrivals.
func writeSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

func sseData(b []byte) string { return "event: message\ndata: " + string(b) + "\n\n" }

// mcpServer answers initialize (with a session id), notifications (202) and
// tools/list, as JSON or as an event stream.
func mcpServer(t *testing.T, stream bool, sessionID string) func(w http.ResponseWriter, r *http.Request, m *Message) {
	return func(w http.ResponseWriter, r *http.Request, m *Message) {
		var body []byte
		switch {
		case m.IsNotification() || m.IsResponse():
			w.WriteHeader(http.StatusAccepted)
			return
		case m.Method == MethodInitialize:
			w.Header().Set("Mcp-Session-Id", sessionID)
			body = result(t, m.ID, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "fake", "version": "9"}})
		case m.Method == "tools/list":
			body = result(t, m.ID, map[string]any{"tools": []map[string]any{{"name": "whoami"}}})
		default:
			b, _ := Encode(NewErrorResponse(m.ID, Errorf(CodeMethodNotFound, "no %s", m.Method)))
			body = b
		}
		if stream {
			writeSSE(w, ": priming\nid: 1\ndata:\n\n", sseData(body))
		} else {
			writeJSON(w, body)
		}
	}
}

type toolList struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func TestHTTPSessionLifecycleHeaders(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			f := newFakeMCP(t, mcpServer(t, stream, "sess-1"))
			s := f.session(t, "tok-123")
			res, err := s.Initialize(context.Background(), "agentauth", "1.2.3")
			if err != nil {
				t.Fatalf("Initialize: %v", err)
			}
			if res.ServerInfo.Name != "fake" || res.ProtocolVersion != "2025-11-25" || !strings.Contains(string(res.Raw), `"capabilities":{"tools":{}}`) {
				t.Errorf("initialize result = %+v (raw %s)", res, res.Raw)
			}
			var tools toolList
			if err := s.Call(context.Background(), "tools/list", nil, &tools); err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if len(tools.Tools) != 1 || tools.Tools[0].Name != "whoami" {
				t.Errorf("tools = %+v, want whoami", tools)
			}
			if s.SessionID() != "sess-1" || s.ProtocolVersion() != "2025-11-25" {
				t.Errorf("session %q version %q", s.SessionID(), s.ProtocolVersion())
			}

			got := f.requests()
			type row struct{ Method, Accept, ContentType, Auth, Session, Version string }
			var rows []row
			for _, r := range got {
				rows = append(rows, row{r.msg.Method, r.header.Get("Accept"), r.header.Get("Content-Type"),
					r.header.Get("Authorization"), r.header.Get("Mcp-Session-Id"), r.header.Get("MCP-Protocol-Version")})
			}
			const accept, ct, auth = "application/json, text/event-stream", "application/json", "Bearer tok-123"
			want := []row{
				{"server/discover", accept, ct, auth, "", "2026-07-28"}, // -32601: fall back
				{"initialize", accept, ct, auth, "", ""},
				{"notifications/initialized", accept, ct, auth, "sess-1", "2025-11-25"},
				{"tools/list", accept, ct, auth, "sess-1", "2025-11-25"},
			}
			if diff := cmp.Diff(want, rows); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			var params struct {
				ProtocolVersion string            `json:"protocolVersion"`
				ClientInfo      MCPImplementation `json:"clientInfo"`
				Capabilities    map[string]any    `json:"capabilities"`
			}
			if err := json.Unmarshal(got[1].msg.Params, &params); err != nil {
				t.Fatal(err)
			}
			if params.ProtocolVersion != "2025-11-25" || params.ClientInfo != (MCPImplementation{"agentauth", "1.2.3"}) || params.Capabilities == nil {
				t.Errorf("initialize params = %s", got[1].msg.Params)
			}
		})
	}
}

func TestHTTPSessionNoTokenNoAuthorization(t *testing.T) {
	f := newFakeMCP(t, mcpServer(t, false, "sess-1"))
	if err := f.session(t, "").Call(context.Background(), "tools/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if h, ok := f.requests()[0].header["Authorization"]; ok {
		t.Errorf("Authorization sent without a token: %q", h)
	}
}

// answer returns the one response message the client POSTed to the server.
func (f *fakeMCP) answer(t *testing.T) seen {
	t.Helper()
	var out []seen
	for _, r := range f.requests() {
		if r.msg != nil && r.msg.IsResponse() {
			out = append(out, r)
		}
	}
	if len(out) != 1 {
		t.Fatalf("client sent %d answers, want 1", len(out))
	}
	return out[0]
}

func TestHTTPSessionStreamMessagesBeforeResponse(t *testing.T) {
	f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
		if m.IsResponse() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`
		ping := `{"jsonrpc":"2.0","id":"srv-1","method":"ping"}`
		sampling := `{"jsonrpc":"2.0","id":"srv-2","method":"sampling/createMessage","params":{}}`
		other := `{"jsonrpc":"2.0","id":999,"result":{}}`
		// The response is split across two writes and two data lines.
		writeSSE(w, sseData([]byte(progress)), sseData([]byte(ping)), "event: other\ndata: ignored\n\n",
			sseData([]byte(other)), "data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,",
			"\"result\":{\"ok\":true}}\r\n\r\n", sseData([]byte(sampling)))
	})
	s := f.session(t, "tok")
	var notes []string
	s.OnMessage = func(m *Message) { notes = append(notes, m.Method) }
	var res struct{ OK bool }
	if err := s.Call(context.Background(), "tools/call", map[string]any{"name": "x"}, &res); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if !res.OK {
		t.Errorf("result not read")
	}
	if diff := cmp.Diff([]string{"notifications/progress", "ping"}, notes); diff != "" {
		t.Errorf("OnMessage (-want +got):\n%s", diff)
	}
	answer := f.answer(t)
	if answer.msg.ID.String() != `"srv-1"` || string(answer.msg.Result) != "{}" {
		t.Fatalf("ping answer = %+v, want an empty result for srv-1", answer.msg)
	}
	if got := answer.header.Get("Authorization"); got != "Bearer tok" {
		t.Errorf("the ping answer carried Authorization %q", got)
	}
}

func TestHTTPSessionAnswersUnknownServerRequest(t *testing.T) {
	f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
		if m.IsResponse() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		writeSSE(w, sseData([]byte(`{"jsonrpc":"2.0","id":5,"method":"roots/list"}`)), sseData(result(t, m.ID, map[string]any{})))
	})
	if err := f.session(t, "").Call(context.Background(), "tools/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if a := f.answer(t).msg; a.Error == nil || a.Error.Code != CodeMethodNotFound || a.ID.String() != "5" {
		t.Fatalf("answer = %+v, want -32601 for id 5", a)
	}
}

func TestHTTPSessionAuthErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header []string
		want   map[string]string
		text   string
	}{
		{"401 with resource metadata", 401,
			[]string{`Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", scope="agent:use"`},
			map[string]string{"resource_metadata": "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", "scope": "agent:use"},
			`HTTP 401 Unauthorized, needs scope "agent:use"`},
		{"403 insufficient scope among several challenges", 403,
			[]string{`Basic realm="x"`, `Bearer error="insufficient_scope", scope="mcp:basic mcp:write", error_description="Token has \"insufficient\" scope"`},
			map[string]string{"error": "insufficient_scope", "scope": "mcp:basic mcp:write", "error_description": `Token has "insufficient" scope`},
			`HTTP 403 Forbidden: insufficient_scope (Token has "insufficient" scope), needs scope "mcp:basic mcp:write"`},
		{"401 without a challenge", 401, nil, nil, "HTTP 401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
				for _, h := range tt.header {
					w.Header().Add("WWW-Authenticate", h)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, `{"error":"invalid_token"}`)
			})
			err := f.session(t, "secret-token-value").Call(context.Background(), "tools/list", nil, nil)
			var ae *HTTPAuthError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *HTTPAuthError", err, err)
			}
			if ae.StatusCode != tt.status {
				t.Errorf("status = %d", ae.StatusCode)
			}
			if diff := cmp.Diff(tt.header, ae.Header); diff != "" {
				t.Errorf("raw header (-want +got):\n%s", diff)
			}
			if len(tt.header) > 0 && !strings.EqualFold(ae.Challenge.Scheme, "bearer") {
				t.Errorf("challenge scheme = %q, want Bearer", ae.Challenge.Scheme)
			}
			if diff := cmp.Diff(tt.want, ae.Challenge.Params, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("challenge params (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q does not say %q", err, tt.text)
			}
			if strings.Contains(err.Error(), "secret-token-value") {
				t.Errorf("error leaks the token: %q", err)
			}
		})
	}
}

func TestHTTPSessionNotifyAccepted(t *testing.T) {
	f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
		w.WriteHeader(http.StatusAccepted)
	})
	s := f.session(t, "tok")
	if err := s.Notify(context.Background(), "notifications/cancelled", map[string]any{"requestId": 1}); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	got := f.requests()
	if len(got) != 1 || !got[0].msg.IsNotification() || got[0].msg.Method != "notifications/cancelled" {
		t.Errorf("server saw %+v", got)
	}
	if err := s.Call(context.Background(), "tools/list", nil, nil); err == nil || !strings.Contains(err.Error(), "HTTP 202") {
		t.Errorf("Call answered 202 = %v, want an error saying so", err)
	}
}

func TestHTTPSessionFailures(t *testing.T) {
	big := strings.Repeat("x", DefaultMaxMessageSize)
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request, m *Message)
		check  func(t *testing.T, err error)
	}{
		{"JSON-RPC error", func(w http.ResponseWriter, r *http.Request, m *Message) {
			b, _ := Encode(NewErrorResponse(m.ID, Errorf(CodeInvalidParams, "bad name")))
			writeJSON(w, b)
		}, func(t *testing.T, err error) {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidParams {
				t.Errorf("err = %v, want the server's -32602", err)
			}
		}},
		{"server error with an echoed token", func(w http.ResponseWriter, r *http.Request, m *Message) {
			http.Error(w, "boom: you sent "+r.Header.Get("Authorization")+"\n\tand more", http.StatusBadGateway)
		}, func(t *testing.T, err error) {
			var se *HTTPStatusError
			if !errors.As(err, &se) || se.StatusCode != 502 {
				t.Fatalf("err = %v, want *HTTPStatusError 502", err)
			}
			if se.Excerpt != "boom: you sent Bearer [token] and more" {
				t.Errorf("excerpt = %q", se.Excerpt)
			}
		}},
		{"oversized JSON body", func(w http.ResponseWriter, r *http.Request, m *Message) {
			writeJSON(w, result(t, m.ID, big))
		}, func(t *testing.T, err error) {
			if !errors.Is(err, ErrMessageTooLarge) {
				t.Errorf("err = %v, want ErrMessageTooLarge", err)
			}
		}},
		{"oversized event", func(w http.ResponseWriter, r *http.Request, m *Message) {
			writeSSE(w, sseData(result(t, m.ID, big)))
		}, func(t *testing.T, err error) {
			if !errors.Is(err, ErrMessageTooLarge) {
				t.Errorf("err = %v, want ErrMessageTooLarge", err)
			}
		}},
		{"stream ends before the response", func(w http.ResponseWriter, r *http.Request, m *Message) {
			writeSSE(w, "id: 1\ndata:\n\n", sseData(result(t, NumberID(77), "other")))
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "without a response") {
				t.Errorf("err = %v", err)
			}
		}},
		{"malformed message in the stream", func(w http.ResponseWriter, r *http.Request, m *Message) {
			writeSSE(w, "data: {not json\n\n")
		}, func(t *testing.T, err error) {
			var e *Error
			if err == nil || errors.As(err, &e) || !strings.Contains(err.Error(), "invalid JSON-RPC") {
				t.Errorf("err = %v, want a plain invalid JSON-RPC error", err)
			}
		}},
		{"JSON body answering another id", func(w http.ResponseWriter, r *http.Request, m *Message) {
			writeJSON(w, result(t, NumberID(42), "x"))
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "not the response") {
				t.Errorf("err = %v", err)
			}
		}},
		{"unexpected content type", func(w http.ResponseWriter, r *http.Request, m *Message) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>")
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), `"text/html"`) {
				t.Errorf("err = %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMCP(t, tt.handle)
			err := f.session(t, "tok-abc").Call(context.Background(), "tools/list", nil, nil)
			tt.check(t, err)
			if err != nil && strings.Contains(err.Error(), "tok-abc") {
				t.Errorf("error leaks the token: %q", err)
			}
		})
	}
}

func TestExcerptDropsTokenCutAtTheLimit(t *testing.T) {
	token := strings.Repeat("T", 40)
	body := strings.Repeat(" ", 1024+10) + token // the read limit cuts the token
	if got := excerpt(strings.NewReader(body), token); got != "" {
		t.Errorf("excerpt = %q, want nothing of the token", got)
	}
}

func TestHTTPSessionExpiredSession(t *testing.T) {
	var expired atomic.Bool
	f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
		if !expired.Load() {
			mcpServer(t, false, "sess-1")(w, r, m)
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "sess-1" {
			http.NotFound(w, r)
			return
		}
		mcpServer(t, false, "sess-2")(w, r, m)
	})
	s := f.session(t, "")
	if _, err := s.Initialize(context.Background(), "agentauth", "1"); err != nil {
		t.Fatal(err)
	}
	expired.Store(true)
	if err := s.Call(context.Background(), "tools/list", nil, nil); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("err = %v, want ErrSessionExpired", err)
	}
	if s.SessionID() != "" {
		t.Errorf("session id %q kept after expiry", s.SessionID())
	}
	if _, err := s.Initialize(context.Background(), "agentauth", "1"); err != nil {
		t.Fatalf("initialize again: %v", err)
	}
	if s.SessionID() != "sess-2" {
		t.Errorf("new session id = %q, want sess-2", s.SessionID())
	}
}

func TestHTTPSessionInitializeRefusals(t *testing.T) {
	tests := []struct {
		name      string
		sessionID string
		version   string
		want      string
	}{
		{"unknown protocol version", "s", "1999-01-01", `speaks MCP "1999-01-01"`},
		{"session id with a space", "a b", "2025-11-25", "visible ASCII"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
				w.Header().Set("Mcp-Session-Id", tt.sessionID)
				writeJSON(w, result(t, m.ID, map[string]any{"protocolVersion": tt.version, "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "x", "version": "1"}}))
			})
			_, err := f.session(t, "").Initialize(context.Background(), "agentauth", "1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
			if n := len(f.requests()); n != 2 {
				t.Errorf("%d requests after a refused initialize, want 2 (server/discover, initialize)", n)
			}
		})
	}
}

func TestHTTPSessionTokenFailureSendsNothing(t *testing.T) {
	f := newFakeMCP(t, mcpServer(t, false, "sess-1"))
	s, err := NewHTTPSession(f.srv.URL, f.srv.Client(), func(context.Context) (string, error) { return "", errors.New("keyring locked") })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Call(context.Background(), "tools/list", nil, nil); err == nil || !strings.Contains(err.Error(), "keyring locked") {
		t.Errorf("err = %v, want the token error", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent without a token", n)
	}
}

func TestHTTPSessionClose(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusMethodNotAllowed} {
		f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
			if r.Method == http.MethodDelete {
				w.WriteHeader(status)
				return
			}
			mcpServer(t, false, "sess-1")(w, r, m)
		})
		s := f.session(t, "tok")
		if err := s.Close(context.Background()); err != nil || len(f.requests()) != 0 {
			t.Fatalf("Close before initialize = %v after %d requests, want nothing sent", err, len(f.requests()))
		}
		if _, err := s.Initialize(context.Background(), "agentauth", "1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("Close answered %d: %v", status, err)
		}
		last := f.requests()[len(f.requests())-1]
		if last.httpMethod != http.MethodDelete || last.header.Get("Mcp-Session-Id") != "sess-1" || last.header.Get("Authorization") != "Bearer tok" {
			t.Errorf("last request = %s with %v", last.httpMethod, last.header)
		}
	}
}

func TestNewHTTPSessionRefusesNonHTTP(t *testing.T) {
	for _, u := range []string{"ws://127.0.0.1/mcp", "stdio:server", "http://", "::"} {
		if _, err := NewHTTPSession(u, nil, nil); err == nil {
			t.Errorf("NewHTTPSession(%q) accepted", u)
		}
	}
}

// statelessServer speaks MCP 2026-07-28 only, like the conformance suite's
// mock: a request without the version header is refused with -32020.
func statelessServer(t *testing.T) func(w http.ResponseWriter, r *http.Request, m *Message) {
	return func(w http.ResponseWriter, r *http.Request, m *Message) {
		var body []byte
		switch {
		case r.Header.Get("MCP-Protocol-Version") != "2026-07-28":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			b, _ := Encode(NewErrorResponse(m.ID, Errorf(-32020, "Missing MCP-Protocol-Version header")))
			w.Write(b)
			return
		case m.Method == MethodServerDiscover:
			body = result(t, m.ID, map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}},
				"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "fake", "version": "9"}}})
		case m.Method == "tools/call":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			b, _ := Encode(NewErrorResponse(m.ID, Errorf(CodeInvalidParams, "no such tool")))
			w.Write(b)
			return
		default:
			body = result(t, m.ID, map[string]any{"tools": []map[string]any{{"name": "whoami"}}, "resultType": "complete"})
		}
		writeSSE(w, sseData(body))
	}
}

func TestHTTPSessionStateless(t *testing.T) {
	f := newFakeMCP(t, statelessServer(t))
	s := f.session(t, "tok")
	res, err := s.Initialize(context.Background(), "agentauth", "1.2.3")
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if res.ProtocolVersion != "2026-07-28" || res.ServerInfo.Name != "fake" || s.ProtocolVersion() != "2026-07-28" {
		t.Errorf("discover result = %+v", res)
	}
	var tools toolList
	if err := s.Call(context.Background(), "tools/list", json.RawMessage(`{"cursor":"c1","_meta":{"x":1}}`), &tools); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	err = s.Call(context.Background(), "tools/call", map[string]any{"name": "tool é", "arguments": map[string]any{}}, nil)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidParams {
		t.Errorf("tools/call err = %v, want the JSON-RPC error of the 400", err)
	}
	got := f.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want server/discover, tools/list, tools/call", len(got))
	}
	for _, r := range got {
		if r.header.Get("Mcp-Method") != r.msg.Method || r.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: headers %v", r.msg.Method, r.header)
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		json.Unmarshal(r.msg.Params, &p)
		if string(p.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` || string(p.Meta["io.modelcontextprotocol/clientCapabilities"]) != "{}" {
			t.Errorf("%s: _meta = %s", r.msg.Method, r.msg.Params)
		}
	}
	if !strings.Contains(string(got[1].msg.Params), `"cursor":"c1"`) || !strings.Contains(string(got[1].msg.Params), `"x":1`) {
		t.Errorf("tools/list params lost the caller's: %s", got[1].msg.Params)
	}
	if h := got[2].header.Get("Mcp-Name"); h != "=?base64?dG9vbCDDqQ==?=" {
		t.Errorf("Mcp-Name = %q, want the name in base64", h)
	}
}

// TestHTTPSessionFallsBack: a server of an earlier revision that refuses
// server/discover with a bare 400 gets initialize.
func TestHTTPSessionFallsBack(t *testing.T) {
	f := newFakeMCP(t, func(w http.ResponseWriter, r *http.Request, m *Message) {
		if m.Method == MethodServerDiscover {
			http.Error(w, "Bad Request: Unsupported protocol version", http.StatusBadRequest)
			return
		}
		mcpServer(t, false, "")(w, r, m)
	})
	s := f.session(t, "tok")
	res, err := s.Initialize(context.Background(), "agentauth", "1")
	if err != nil || res.ProtocolVersion != "2025-11-25" {
		t.Fatalf("Initialize = %+v, %v; want 2025-11-25", res, err)
	}
	if err := s.Call(context.Background(), "tools/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	last := f.requests()[len(f.requests())-1]
	if last.header.Get("Mcp-Method") != "" || strings.Contains(string(last.msg.Params), "_meta") {
		t.Errorf("2025-11-25 request with 2026-07-28 additions: %v %s", last.header, last.msg.Params)
	}
}
