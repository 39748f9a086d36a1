package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernLog is what a modernBackend got: per request the HTTP method,
// the JSON-RPC method, the headers and the params' _meta.
type modernLog struct {
	mu   sync.Mutex
	seen []modernRequest
	// held gets a value when the tool "hold" starts.
	held chan struct{}
}

type modernRequest struct {
	httpMethod, method string
	header             http.Header
	meta               map[string]json.RawMessage
}

func (l *modernLog) requests() []modernRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// modernBackend is a Streamable HTTP backend of MCP 2026-07-28 only: the
// MCP Go SDK's server (testServer, whose tools the 2026-07-28 requests
// reach, plus "signup", which asks for a name by an input request),
// behind the refusal of 2025-era traffic that the TypeScript SDK v2
// answers with legacy: 'reject' (@modelcontextprotocol/server 2.4.0,
// dist/src-DdvbAHrR.mjs, modernOnlyStrictRejection, and dist/index.mjs,
// serveLegacyRoute and jsonRpcErrorResponse): a request without the
// 2026-07-28 _meta envelope gets 400 with UNSUPPORTED_PROTOCOL_VERSION
// (-32022, data supported and requested), a notification 202 unread, a
// posted response 400 -32600, GET and DELETE 405 -32000 with Allow: POST.
func modernBackend(t *testing.T) (*httptest.Server, *callLog, *modernLog) {
	calls := &callLog{}
	s := testServer(calls)
	s.AddTool(&mcp.Tool{Name: "signup", Description: "Asks for your name, then welcomes you.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok && req.Params.RequestState == "signup-1" {
				calls.add("signup")
				return text(fmt.Sprintf("welcome %v (%s)", r.Content["name"], r.Action)), nil
			}
			return &mcp.CallToolResult{RequestState: "signup-1", InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}}}, nil
		})
	release := make(chan struct{})
	log := &modernLog{held: make(chan struct{}, 16)}
	s.AddTool(&mcp.Tool{Name: "hold", Description: "Answers when the test ends.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			log.held <- struct{}{}
			select {
			case <-ctx.Done():
			case <-release:
			}
			return text("held"), nil
		})
	// Stateless: the SDK's server/discover lists 2026-07-28 only then.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta            map[string]json.RawMessage `json:"_meta"`
				ProtocolVersion string                     `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		log.mu.Lock()
		log.seen = append(log.seen, modernRequest{httpMethod: r.Method, method: m.Method, header: r.Header.Clone(), meta: m.Params.Meta})
		log.mu.Unlock()
		refuse := func(status, code int, msg string, data any) {
			w.Header().Set("Content-Type", "application/json")
			if status == http.StatusMethodNotAllowed {
				w.Header().Set("Allow", "POST")
			}
			w.WriteHeader(status)
			e := map[string]any{"code": code, "message": msg}
			if data != nil {
				e["data"] = data
			}
			id := json.RawMessage("null")
			if m.ID != nil && m.Method != "" {
				id = m.ID
			}
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "error": e, "id": id})
		}
		switch {
		case r.Method != http.MethodPost:
			refuse(http.StatusMethodNotAllowed, -32000, "Method not allowed.", nil)
		case string(m.Params.Meta["io.modelcontextprotocol/protocolVersion"]) == `"2026-07-28"`:
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		case m.Method == "":
			refuse(http.StatusBadRequest, -32600, "Bad Request: JSON-RPC responses cannot be posted to this endpoint", nil)
		case m.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "initialize":
			refuse(http.StatusBadRequest, -32022, "Unsupported protocol version: "+m.Params.ProtocolVersion,
				map[string]any{"supported": []string{"2026-07-28"}, "requested": m.Params.ProtocolVersion})
		default:
			refuse(http.StatusBadRequest, -32022, "Unsupported protocol version: the request did not name a protocol version",
				map[string]any{"supported": []string{"2026-07-28"}})
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close
	return srv, calls, log
}

// A caller of MCP 2025-11-25 (the MCP Go SDK's client, v1.8.0) reaches a
// backend of MCP 2026-07-28 only through serve: its initialize is
// answered from the backend's server/discover with serve's session id;
// tools/list is filtered by policy, tools/call forwarded, an input
// request comes to it as elicitation/create and its answer goes back;
// a call without the tool's scope gets 403 insufficient_scope and bad
// arguments -32602, neither reaching the backend; ping and
// logging/setLevel are serve's. Every request the backend gets is a
// 2026-07-28 request with the caller's capabilities and log level and
// none of its credentials.
func TestBridgeToModernBackend(t *testing.T) {
	be, calls, seen := modernBackend(t)
	srv, logs := front(t, Backend{Name: "modern", URL: be.URL}, policy)
	ctx := context.Background()
	var asked []string
	var mu sync.Mutex
	opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}}

	writer := connectVersion(t, srv.URL, "tok-writer-0123456789", opts, "2025-11-25")
	init := writer.InitializeResult()
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo == nil || init.ServerInfo.Name != "test-backend" || init.Capabilities.Tools == nil || init.Capabilities.Tools.ListChanged {
		b, _ := json.Marshal(init)
		t.Fatalf("initialize answered %s; want 2025-11-25, the backend's serverInfo, tools without listChanged", b)
	}
	if names := toolNames(t, writer); !slices.Contains(names, "create_story") || !slices.Contains(names, "signup") {
		t.Errorf("writer sees tools %v; want create_story and signup", names)
	}
	if err := writer.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	if err := writer.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Errorf("logging/setLevel: %v", err)
	}
	r, err := writer.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil || resultText(t, r) != "hello" {
		t.Fatalf("echo: %v %v", r, err)
	}
	r, err = writer.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Grace"}})
	if err != nil || resultText(t, r) != "hello Grace" {
		t.Errorf("greet (an x-mcp-header argument): %v %v", r, err)
	}
	r, err = writer.CallTool(ctx, &mcp.CallToolParams{Name: "signup"})
	if err != nil || resultText(t, r) != "welcome Ada (accept)" {
		t.Fatalf("signup (an input request): %v %v", r, err)
	}
	mu.Lock()
	if !slices.Equal(asked, []string{"Your name?"}) {
		t.Errorf("the caller was asked %q; want the backend's elicitation once", asked)
	}
	mu.Unlock()
	_, err = writer.CallTool(ctx, &mcp.CallToolParams{Name: "create_story", Arguments: map[string]any{"title": 5}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32602 || !strings.Contains(werr.Message, "/properties/title") {
		t.Errorf("create_story with a number title: %v; want -32602 naming /properties/title", err)
	}

	reader := connectVersion(t, srv.URL, "tok-reader-0123456789", nil, "2025-06-18")
	if names := toolNames(t, reader); slices.Contains(names, "create_story") || !slices.Contains(names, "get_story") {
		t.Errorf("reader sees tools %v; want get_story and not create_story", names)
	}
	if _, err := reader.CallTool(ctx, &mcp.CallToolParams{Name: "create_story", Arguments: map[string]any{"title": "x"}}); err == nil || !strings.Contains(err.Error(), "insufficient scope: tool create_story needs scope rally:write") || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("the Go SDK client's create_story without rally:write: %v; want the 403", err)
	}
	sid := sessionOf(t, srv.URL, "tok-reader-0123456789")
	status, hdr, body := post(t, srv.URL, "tok-reader-0123456789", sid,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_story","arguments":{"title":"x"}}}`)
	if status != http.StatusForbidden || !strings.Contains(hdr.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Errorf("create_story without rally:write: %d %q %s; want 403 insufficient_scope", status, hdr.Get("WWW-Authenticate"), body)
	}
	if calls.ran("create_story") {
		t.Error("the backend ran create_story (bad arguments, or a caller without the scope)")
	}
	// DELETE ends serve's session.
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer tok-reader-0123456789")
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %v %v; want 204", resp, err)
	}
	if status, _, body := post(t, srv.URL, "tok-reader-0123456789", sid, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("tools/list after DELETE: %d %s; want 404", status, body)
	}

	var initializes, discovers int
	for _, q := range seen.requests() {
		if q.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("the backend got a session id on %s %s", q.httpMethod, q.method)
		}
		for k, v := range q.header {
			if k == "Authorization" || k == "Cookie" || strings.Contains(strings.Join(v, " "), "tok-") {
				t.Errorf("the backend got header %s: %q", k, v)
			}
		}
		switch q.method {
		case "initialize":
			initializes++
			continue
		case "server/discover":
			discovers++
		}
		if q.httpMethod != http.MethodPost || q.header.Get("Mcp-Protocol-Version") != "2026-07-28" || q.header.Get("Mcp-Method") != q.method ||
			string(q.meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` {
			t.Errorf("the backend got %s %s with Mcp-Protocol-Version %q, Mcp-Method %q, _meta %s; want a 2026-07-28 request",
				q.httpMethod, q.method, q.header.Get("Mcp-Protocol-Version"), q.header.Get("Mcp-Method"), q.meta)
		}
		if q.method == "tools/call" {
			if name := q.header.Get("Mcp-Name"); name == "" {
				t.Errorf("tools/call without Mcp-Name")
			}
			if q.header.Get("Mcp-Name") == "greet" && q.header.Get("Mcp-Param-Name") != "Grace" {
				t.Errorf("greet with Mcp-Param-Name %q; want Grace", q.header.Get("Mcp-Param-Name"))
			}
			if q.header.Get("Mcp-Name") == "signup" && (!strings.Contains(string(q.meta["io.modelcontextprotocol/clientCapabilities"]), "elicitation") ||
				string(q.meta["io.modelcontextprotocol/logLevel"]) != `"debug"`) {
				t.Errorf("signup with capabilities %s, log level %s; want the caller's elicitation and debug",
					q.meta["io.modelcontextprotocol/clientCapabilities"], q.meta["io.modelcontextprotocol/logLevel"])
			}
		}
	}
	if initializes != 3 || discovers != 3 {
		t.Errorf("the backend got %d initialize and %d server/discover; want 3 each (serve probes at each session)", initializes, discovers)
	}
	if out := logs.String(); !strings.Contains(out, `"method":"tools/call","decision":"allowed"`) || !strings.Contains(out, `"decision":"denied"`) {
		t.Errorf("audit log:\n%s", out)
	}
}

// A caller that never answers the backend's input request gets, within
// the backend's timeout, a JSON-RPC error naming the backend on the
// call's stream; serve forgets the request it sent.
func TestBridgeCallerNeverAnswers(t *testing.T) {
	be, calls, _ := modernBackend(t)
	srv, _ := front(t, Backend{Name: "modern", URL: be.URL, Timeout: Duration(300 * time.Millisecond)}, policy)
	_, h, body := post(t, srv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := h.Get("Mcp-Session-Id")
	if sid == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", body)
	}
	status, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"signup","arguments":{}}}`)
	var events []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	if status != http.StatusOK || len(events) != 2 || !strings.Contains(events[0], `"method":"elicitation/create"`) ||
		!strings.Contains(events[1], `"id":2`) || !strings.Contains(events[1], "backend modern asked the caller for elicitation/create, and the caller did not answer within 300ms") {
		t.Fatalf("tools/call signup, never answered: %d\n%s", status, body)
	}
	// A late answer goes nowhere.
	var ask struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal([]byte(events[0]), &ask)
	if status, _, _ := post(t, srv.URL, "tok-writer-0123456789", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Late"}}}`, ask.ID)); status != http.StatusAccepted {
		t.Errorf("late answer: %d; want 202", status)
	}
	if calls.ran("signup") {
		t.Error("the backend completed signup without the caller's answer")
	}
}

// notifications/cancelled of a bridged call closes its request to the
// backend (how MCP 2026-07-28 cancels): the caller's POST ends at once,
// with no answer.
func TestBridgeCancel(t *testing.T) {
	be, _, seen := modernBackend(t)
	srv, _ := front(t, Backend{Name: "modern", URL: be.URL}, policy)
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	type answer struct {
		status int
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		status, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":"hold-1","method":"tools/call","params":{"name":"hold","arguments":{}}}`)
		done <- answer{status, body}
	}()
	<-seen.held // the call is on its way to the backend
	status, _, _ := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"hold-1","reason":"test"}}`)
	if status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d", status)
	}
	a := <-done
	if strings.Contains(a.body, `"result"`) || strings.Contains(a.body, `"error"`) {
		t.Errorf("the cancelled call was answered: %d %s", a.status, a.body)
	}
}

// Only callers of 2025-11-25, 2025-06-18 and 2025-03-26 are bridged: a
// 2026-07-28 caller's initialize (a removed method) gets the backend's
// 404 -32601, and one asking for 2024-11-05 the backend's refusal, as
// they are.
func TestBridgeOnlyEarlierCallers(t *testing.T) {
	be, _, _ := modernBackend(t)
	srv, _ := front(t, Backend{Name: "modern", URL: be.URL}, policy)
	for _, tc := range []struct {
		name, header, body string
		status             int
		want               string
	}{
		{"2026-07-28", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, http.StatusNotFound, `"code":-32601`},
		{"2024-11-05", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`, http.StatusBadRequest, `"code":-32022`},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer tok-writer-0123456789")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.header != "" {
			req.Header.Set("Mcp-Protocol-Version", tc.header)
			req.Header.Set("Mcp-Method", "initialize")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: initialize answered %d %s; want %d %s", tc.name, resp.StatusCode, b, tc.status, tc.want)
		}
		// A refused initialize names no session (serve dropped it).
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			t.Errorf("%s: the refusal names session %q", tc.name, sid)
		}
	}
}
