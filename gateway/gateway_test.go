package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/wire"
)

// The backends of these tests are MCP Go SDK servers: one over Streamable
// HTTP (httptest) that records every header it gets, and one over stdio
// (this test binary, started again with GATEWAY_TEST_STDIO_SERVER=1).

func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_TEST_STDIO_SERVER") == "1" {
		s := testServer(nil)
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type storyArgs struct {
	Title  string `json:"title" jsonschema:"the story's title"`
	Points int    `json:"points,omitempty" jsonschema:"story points"`
}

type textArgs struct {
	Text string `json:"text"`
}

// testServer is the backend: create_story and get_story (a Rally shape),
// echo, ask (sampling then elicitation), slow, crash and big.
func testServer(calls *callLog) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-backend", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "create_story", Description: "Creates a story."}, func(ctx context.Context, req *mcp.CallToolRequest, a storyArgs) (*mcp.CallToolResult, any, error) {
		calls.add("create_story")
		return text(fmt.Sprintf("created %q (%d points)", a.Title, a.Points)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "get_story", Description: "Reads a story."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		calls.add("get_story")
		return text("story US1: contact alice@example.com"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		calls.add("echo")
		return text(a.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the client's model, then the user."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2})
		m, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello?"}}}})
		if err != nil {
			return nil, nil, err
		}
		e, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("model said %s; user said %v", m.Content.(*mcp.TextContent).Text, e.Content["name"])), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_both", Description: "Asks the client's model and the user at once."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		var m *mcp.CreateMessageResult
		var e *mcp.ElicitResult
		var merr, eerr error
		var wg sync.WaitGroup
		wg.Go(func() {
			m, merr = req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello?"}}}})
		})
		wg.Go(func() {
			e, eerr = req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		})
		wg.Wait()
		if merr != nil || eerr != nil {
			return nil, nil, errors.Join(merr, eerr)
		}
		return text(fmt.Sprintf("model said %s; user said %v", m.Content.(*mcp.TextContent).Text, e.Content["name"])), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "rally_token", Description: "Says which Rally token it got (header or environment)."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		tok := os.Getenv("RALLY_TOKEN")
		if req.Extra != nil && req.Extra.Header != nil {
			tok = req.Extra.Header.Get("X-Rally-Token")
		}
		calls.add("rally_token:" + tok)
		return text("token " + tok + " hash " + fmt.Sprint(len(tok))), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Answers after a minute."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Minute):
		case <-ctx.Done():
			calls.add("slow:cancelled")
		}
		return text("late"), nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "greet", Description: "Greets; MCP 2026-07-28 clients repeat the name in Mcp-Param-Name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","x-mcp-header":"Name"}},"required":["name"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Name string }
			json.Unmarshal(req.Params.Arguments, &a)
			return text("hello " + a.Name), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the process."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answers 2 MB."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		return text(strings.Repeat("x", 2<<20)), nil, nil
	})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// callLog records the tools a backend ran and the headers it got.
type callLog struct {
	mu      sync.Mutex
	tools   []string
	headers []http.Header
	methods []string // methods[i] is the HTTP method of headers[i]
}

func (l *callLog) add(tool string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.tools = append(l.tools, tool)
	l.mu.Unlock()
}

func (l *callLog) ran(tool string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.tools, tool)
}

// httpBackend serves testServer over Streamable HTTP, logging headers.
func httpBackend(t *testing.T) (*httptest.Server, *callLog) {
	log := &callLog{}
	s := testServer(log)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.headers = append(log.headers, r.Header.Clone())
		log.methods = append(log.methods, r.Method)
		log.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

type testCaller struct {
	sub, client string
	scopes      []string
}

func (c testCaller) Subject() string  { return c.sub }
func (c testCaller) ClientID() string { return c.client }
func (c testCaller) Issuer() string   { return "" }
func (c testCaller) Scopes() []string { return c.scopes }

// Tokens of the front's fake token check (serve's real one is tested
// end to end in testdata/script/gateway_*.txtar).
var callers = map[string]testCaller{
	"tok-reader-0123456789": {sub: "alice", client: "cli", scopes: []string{"rally:read"}},
	"tok-writer-0123456789": {sub: "alice", client: "cli", scopes: []string{"rally:read", "rally:write"}},
	"tok-bob-000123456789":  {sub: "bob", client: "cli", scopes: []string{"rally:read", "rally:write"}},
}

// front mounts a gateway for one backend behind a fake bearer check.
func front(t *testing.T, b Backend, p Policy) (*httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	g, err := New(Options{Backends: []Backend{b}, Policy: p, Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return serveMount(t, g.Mounts()[0]), logs
}

// serveMount serves a mount behind the fake token check.
func serveMount(t *testing.T, m *Mount) *httptest.Server {
	m.SetResourceMetadata("http://serve.test/.well-known/oauth-protected-resource/mcp")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := callers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		m.Serve(w, r, c)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect is an MCP Go SDK client session through the gateway.
func connect(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, url, token, opts, "")
}

// connectVersion is connect asking for an MCP revision ("" for the SDK's
// latest: 2026-07-28 where the server has it, else initialize).
func connectVersion(t *testing.T, url, token string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	r, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func resultText(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var policy = Policy{ToolScopes: map[string][]string{"create_story": {"rally:write"}}, Redact: Redact{Presets: []string{"email"}}}

func TestPolicyHTTPBackend(t *testing.T) {
	be, log := httpBackend(t)
	srv, logs := front(t, Backend{Name: "rally", URL: be.URL}, policy)
	ctx := context.Background()

	reader := connect(t, srv.URL, "tok-reader-0123456789", nil)
	if names := toolNames(t, reader); slices.Contains(names, "create_story") || !slices.Contains(names, "get_story") {
		t.Errorf("reader sees tools %v; want get_story and not create_story", names)
	}
	// Raw: the 403 and its challenge.
	status, hdr, body := post(t, srv.URL, "tok-reader-0123456789", sessionOf(t, srv.URL, "tok-reader-0123456789"),
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_story","arguments":{"title":"x"}}}`)
	if status != http.StatusForbidden || !strings.Contains(hdr.Get("WWW-Authenticate"), `error="insufficient_scope"`) ||
		!strings.Contains(hdr.Get("WWW-Authenticate"), `scope="rally:write"`) || !strings.Contains(hdr.Get("WWW-Authenticate"), `resource_metadata="http://serve.test/`) {
		t.Errorf("create_story without rally:write: %d %q %s; want 403 insufficient_scope scope=rally:write", status, hdr.Get("WWW-Authenticate"), body)
	}
	if log.ran("create_story") {
		t.Error("the backend ran create_story for a caller without rally:write")
	}

	writer := connect(t, srv.URL, "tok-writer-0123456789", nil)
	if names := toolNames(t, writer); !slices.Contains(names, "create_story") {
		t.Errorf("writer sees tools %v; want create_story", names)
	}
	r, err := writer.CallTool(ctx, &mcp.CallToolParams{Name: "create_story", Arguments: map[string]any{"title": "Login page", "points": 3}})
	if err != nil || resultText(t, r) != `created "Login page" (3 points)` {
		t.Fatalf("create_story: %v %v", r, err)
	}

	// Bad arguments: -32602 naming the location; the backend sees nothing.
	_, err = writer.CallTool(ctx, &mcp.CallToolParams{Name: "create_story", Arguments: map[string]any{"title": 5}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32602 || !strings.Contains(werr.Message, "/properties/title") {
		t.Errorf("create_story with a number title: %v; want -32602 naming /properties/title", err)
	}
	log.mu.Lock()
	n := strings.Count(strings.Join(log.tools, ","), "create_story")
	log.mu.Unlock()
	if n != 1 {
		t.Errorf("the backend ran create_story %d times; want 1 (bad arguments must not reach it)", n)
	}

	// Scrubbing: the caller's token and an e-mail address.
	r, err = writer.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "my token is tok-writer-0123456789"}})
	if err != nil || resultText(t, r) != "my token is [redacted]" {
		t.Errorf("echo of the token: %v %v; want it redacted", r, err)
	}
	r, err = writer.CallTool(ctx, &mcp.CallToolParams{Name: "get_story"})
	if err != nil || resultText(t, r) != "story US1: contact [redacted]" {
		t.Errorf("get_story: %v %v; want the e-mail redacted", r, err)
	}

	// No token passthrough: nothing the backend got holds a caller's token.
	log.mu.Lock()
	for _, h := range log.headers {
		for k, v := range h {
			if k == "Authorization" || k == "Cookie" || k == "Dpop" || strings.Contains(strings.Join(v, " "), "tok-") {
				t.Errorf("the backend got header %s: %q", k, v)
			}
		}
	}
	log.mu.Unlock()

	// Audit: one record per call, no arguments.
	out := logs.String()
	if !strings.Contains(out, `"msg":"gateway call","principal":"alice","client_id":"cli","backend":"rally","method":"tools/call","decision":"denied"`) ||
		!strings.Contains(out, `"redactions":1`) || strings.Contains(out, "Login page") || strings.Contains(out, "tok-writer") {
		t.Errorf("audit log:\n%s", out)
	}
}

// sessionOf initializes a session by hand and returns its id.
func sessionOf(t *testing.T, url, token string) string {
	t.Helper()
	_, h, body := post(t, url, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := h.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id; %s", body)
	}
	post(t, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

func post(t *testing.T, url, token, sid, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestSessionsAreTheCallers(t *testing.T) {
	be, _ := httpBackend(t)
	srv, _ := front(t, Backend{Name: "rally", URL: be.URL}, Policy{})
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	status, _, body := post(t, srv.URL, "tok-bob-000123456789", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if status != http.StatusNotFound {
		t.Errorf("bob with alice's session: %d %s; want 404", status, body)
	}
	status, _, body = post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if status != http.StatusOK || !strings.Contains(body, "create_story") {
		t.Errorf("alice with her session: %d %s", status, body)
	}
}

// TestServerRequests: sampling, elicitation and progress go through, on
// an HTTP and on a stdio backend (in a session, and over MCP 2026-07-28,
// where serve turns a stdio process's requests into input_required).
func TestServerRequests(t *testing.T) {
	be, _ := httpBackend(t)
	for name, b := range map[string]Backend{"http": {Name: "web", URL: be.URL}, "stdio": stdioBackend(t), "stdio-2025-11-25": stdioBackend(t)} {
		t.Run(name, func(t *testing.T) {
			srv, _ := front(t, b, Policy{})
			version := ""
			if strings.HasSuffix(name, "2025-11-25") {
				version = "2025-11-25"
			}
			var progress sync.WaitGroup
			progress.Add(1)
			var once sync.Once
			cs := connectVersion(t, srv.URL, "tok-writer-0123456789", &mcp.ClientOptions{
				CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
				},
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
					once.Do(progress.Done)
				},
			}, version)
			params := &mcp.CallToolParams{Name: "ask"}
			params.SetProgressToken("p1")
			r, err := cs.CallTool(context.Background(), params)
			if err != nil || resultText(t, r) != "model said hi; user said Ada" {
				t.Fatalf("ask: %v %v", r, err)
			}
			progress.Wait()
		})
	}
}

func stdioBackend(t *testing.T) Backend {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Backend{Name: "local", Command: exe, Env: map[string]string{"GATEWAY_TEST_STDIO_SERVER": "1"}, MaxMessage: 1 << 20}
}

// TestFaults: a hang, a crash, an oversized frame and garbage give the
// caller a JSON-RPC error naming the backend; a crashed stdio process
// comes back with the session.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	b := stdioBackend(t)
	b.Timeout = Duration(2 * time.Second)
	srv, _ := front(t, b, Policy{})
	// A session, for its own process (MCP 2026-07-28 has none).
	cs := connectVersion(t, srv.URL, "tok-writer-0123456789", nil, "2025-11-25")

	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
	if err == nil || !strings.Contains(err.Error(), "backend local did not answer within 2s") || time.Since(start) > 10*time.Second {
		t.Errorf("slow: %v after %s; want the timeout naming the backend", err, time.Since(start))
	}
	// While one session's call hangs, another session is answered.
	other := connectVersion(t, srv.URL, "tok-bob-000123456789", nil, "2025-11-25")
	hung := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		hung <- err
	}()
	r, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "meanwhile"}})
	if err != nil || resultText(t, r) != "meanwhile" {
		t.Errorf("another session while one hangs: %v %v", r, err)
	}
	if err := <-hung; err == nil || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Errorf("the hung call: %v", err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"})
	if err == nil || !strings.Contains(err.Error(), "backend local exited") {
		t.Errorf("crash: %v; want an error naming the backend", err)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "back"}})
	if err != nil || resultText(t, r) != "back" {
		t.Errorf("echo after the crash: %v %v; want the restarted backend to answer", r, err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big"})
	if err == nil || !strings.Contains(err.Error(), "backend local sent a message over 1048576 bytes") {
		t.Errorf("big: %v; want the size error naming the backend", err)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
	if err != nil || resultText(t, r) != "again" {
		t.Errorf("echo after the oversized frame: %v %v", r, err)
	}

	// An HTTP backend that answers garbage, and one that is gone.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "<html>not json")
	}))
	defer garbage.Close()
	gsrv, _ := front(t, Backend{Name: "junk", URL: garbage.URL}, Policy{})
	_, _, body := post(t, gsrv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var m wire.Message
	if json.Unmarshal([]byte(body), &m) != nil || m.Error == nil || !strings.Contains(m.Error.Message, "backend junk") {
		t.Errorf("garbage backend: %s; want a JSON-RPC error naming it", body)
	}
	garbage.Close()
	_, _, body = post(t, gsrv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if json.Unmarshal([]byte(body), &m) != nil || m.Error == nil || !strings.Contains(m.Error.Message, "backend junk cannot be reached") {
		t.Errorf("gone backend: %s; want a JSON-RPC error naming it", body)
	}
}

func TestDepth(t *testing.T) {
	for raw, want := range map[string]int{`5`: 0, `{}`: 1, `{"a":[1,{"b":"}]}"}]}`: 3, `["[[[\"]"]`: 1, strings.Repeat("[", 70) + strings.Repeat("]", 70): 70} {
		if got := depth(json.RawMessage(raw)); got != want {
			t.Errorf("depth(%s) = %d, want %d", raw, got, want)
		}
	}
}

// TestRefusals: a backend's own 401 is not passed on as a challenge; a
// tool called without listing is checked against the schema the gateway
// looks up; arguments nested too deep are refused; a batch is refused.
func TestRefusals(t *testing.T) {
	be, log := httpBackend(t)
	srv, _ := front(t, Backend{Name: "rally", URL: be.URL}, Policy{})
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	_, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_story","arguments":{"points":"x"}}}`)
	if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "do not match its inputSchema") {
		t.Errorf("create_story unlisted with bad arguments: %s", body)
	}
	deep := strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70)
	_, _, body = post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","more":`+deep+`}}}`)
	if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "nest 71 deep, more than 64") {
		t.Errorf("deep arguments: %s", body)
	}
	// A tool name the backend could read otherwise than the gateway.
	for _, params := range []string{`{"name":"echo","NAME":"create_story","arguments":{"text":"x"}}`, `{"name":"create_story","name":"echo","arguments":{"text":"x"}}`} {
		status, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":`+params+`}`)
		if status != http.StatusBadRequest || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, "twice") {
			t.Errorf("tools/call %s: %s", params, body)
		}
	}
	// Arguments a backend could read otherwise than the schema was
	// checked: a member named twice, or twice but for its case (a Go
	// backend's struct takes either), at any depth.
	for _, args := range []string{`{"text":"x","TEXT":"y"}`, `{"text":"x","text":"y"}`, `{"text":"x","more":[{"a":1,"A":2}]}`, `{"text":"x","more":{"k":1,"\u212a":2}}`} {
		_, _, body = post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":`+args+`}}`)
		if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "twice") {
			t.Errorf("tools/call echo with arguments %s: %s", args, body)
		}
	}
	if log.ran("create_story") || log.ran("echo") {
		t.Error("the backend ran a refused call")
	}
	status, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`)
	if status != http.StatusBadRequest || !strings.Contains(body, "not a batch") {
		t.Errorf("batch: %d %s", status, body)
	}

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://backend.test/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer refusing.Close()
	rsrv, _ := front(t, Backend{Name: "locked", URL: refusing.URL}, Policy{})
	status, hdr, body := post(t, rsrv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if status != http.StatusOK || hdr.Get("WWW-Authenticate") != "" || !strings.Contains(body, "backend locked refused serve's request (HTTP 401)") {
		t.Errorf("a backend's 401: %d %q %s; want a JSON-RPC error naming it and no challenge", status, hdr.Get("WWW-Authenticate"), body)
	}
}

// TestCancellation: a client that gives up on a call (the Go SDK sends
// notifications/cancelled and drops the request) ends the backend's call:
// its tool sees its context end.
func TestCancellation(t *testing.T) {
	be, log := httpBackend(t)
	srv, _ := front(t, Backend{Name: "rally", URL: be.URL}, Policy{})
	cs := connect(t, srv.URL, "tok-writer-0123456789", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"}); err == nil {
		t.Fatal("slow answered before it was cancelled")
	}
	for deadline := time.Now().Add(10 * time.Second); !log.ran("slow:cancelled"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the backend's tool was never cancelled")
		}
	}
}
