package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/wire"
)

func sharedBackendOf(t *testing.T) Backend {
	b := stdioBackend(t)
	b.Process = ProcessShared
	return b
}

// TestSharedTwoCallers: two callers (Go SDK clients, each numbering its
// requests from 1) call at once through one shared process, in sessions
// and over MCP 2026-07-28; each gets only its own answers, and one
// process ran.
func TestSharedTwoCallers(t *testing.T) {
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) { testSharedTwoCallers(t, version) })
	}
}

func testSharedTwoCallers(t *testing.T, version string) {
	srv, logs := front(t, sharedBackendOf(t), Policy{})
	alice := connectVersion(t, srv.URL, "tok-writer-0123456789", nil, version)
	bob := connectVersion(t, srv.URL, "tok-bob-000123456789", nil, version)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for who, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		for i := range 25 {
			wg.Go(func() {
				want := fmt.Sprintf("%s %d", who, i)
				r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
				if err != nil {
					errs <- err
				} else if got := resultText(t, r); got != want {
					errs <- fmt.Errorf("%s got %q, want %q", who, got, want)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := strings.Count(logs.String(), `"msg":"backend started"`); n != 1 {
		t.Errorf("%d processes started; want 1 shared", n)
	}
	if alice.InitializeResult().ServerInfo.Name != "test-backend" {
		t.Errorf("alice's initialize: %+v; want the process's", alice.InitializeResult())
	}
}

// TestSharedServerRequests: sampling, elicitation and progress reach the
// caller whose request is in flight (its progress token given back);
// while two callers have requests in flight the process's request is
// answered with an error saying why, and the other caller sees nothing.
func TestSharedServerRequests(t *testing.T) {
	srv, _ := front(t, sharedBackendOf(t), Policy{})
	var sampled sync.Map
	opts := func(who string, progress chan<- any) *mcp.ClientOptions {
		return &mcp.ClientOptions{
			CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				sampled.Store(who, true)
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi " + who}}, nil
			},
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": who}}, nil
			},
			ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
				select {
				case progress <- req.Params.ProgressToken:
				default:
				}
			},
		}
	}
	aliceProgress, bobProgress := make(chan any, 4), make(chan any, 4)
	alice := connectVersion(t, srv.URL, "tok-writer-0123456789", opts("alice", aliceProgress), "2025-11-25")
	bob := connectVersion(t, srv.URL, "tok-bob-000123456789", opts("bob", bobProgress), "2025-11-25")
	for who, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		params := &mcp.CallToolParams{Name: "ask"}
		params.SetProgressToken("p1")
		r, err := cs.CallTool(context.Background(), params)
		if err != nil || resultText(t, r) != fmt.Sprintf("model said hi %s; user said %s", who, who) {
			t.Fatalf("%s ask: %v %v", who, r, err)
		}
	}
	if tok := <-aliceProgress; tok != "p1" {
		t.Errorf("alice's progress token: %v; want hers, p1", tok)
	}
	if tok := <-bobProgress; tok != "p1" {
		t.Errorf("bob's progress token: %v; want his, p1", tok)
	}

	// Alice's slow call is in flight: whose is bob's sampling request?
	sampled.Clear()
	ctx, cancel := context.WithCancel(context.Background())
	slow := make(chan struct{})
	go func() {
		defer close(slow)
		alice.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask"})
		if err == nil && r.IsError && strings.Contains(resultText(t, r), "2 callers have requests in flight") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's ask while alice's call is in flight: %v %v; want the routing error", r, err)
		}
		time.Sleep(20 * time.Millisecond) // alice's call may not have reached the process yet
	}
	if _, ok := sampled.Load("alice"); ok {
		t.Error("alice was asked to sample for bob's call")
	}
	cancel()
	<-slow
}

// TestSharedRestart: a crash of the shared process fails the call in
// flight naming the backend; the next call gets a process serve
// initialized again, and the other caller's session goes on.
func TestSharedRestart(t *testing.T) {
	srv, logs := front(t, sharedBackendOf(t), Policy{})
	alice := connectVersion(t, srv.URL, "tok-writer-0123456789", nil, "2025-11-25")
	bob := connectVersion(t, srv.URL, "tok-bob-000123456789", nil, "2025-11-25")
	if _, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash"}); err == nil || !strings.Contains(err.Error(), "backend local exited") {
		t.Fatalf("crash: %v", err)
	}
	for who, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": who}})
		if err != nil || resultText(t, r) != who {
			t.Errorf("%s after the crash: %v %v", who, r, err)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"backend started"`); n != 2 {
		t.Errorf("%d processes started; want 2 (one restart)", n)
	}
}

// statelessPost sends one MCP 2026-07-28 request (no session).
func statelessPost(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok-writer-0123456789")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", statelessVersion)
	if m, err := wire.Decode([]byte(body)); err == nil {
		wire.SetStandardHeaders(req.Header, m) // as MCP 2026-07-28 clients must
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q: %s", body, ct, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %s", body, b)
	}
	return resp.StatusCode, m
}

const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestStatelessStdio: MCP 2026-07-28 requests to a stdio backend, in
// either process mode, are bridged to its (shared) process: server/discover
// from its initialize result, tools with resultType complete, removed
// methods 404, and a server-to-client request refused.
func TestStatelessStdio(t *testing.T) {
	for _, mode := range []string{ProcessPerSession, ProcessShared} {
		t.Run(mode, func(t *testing.T) {
			b := stdioBackend(t)
			b.Process = mode
			srv, _ := front(t, b, Policy{})
			status, m := statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{`+statelessMeta+`}}`)
			r, _ := m["result"].(map[string]any)
			if status != 200 || r["capabilities"] == nil || !strings.Contains(fmt.Sprint(r["_meta"]), "test-backend") || !strings.Contains(fmt.Sprint(r["supportedVersions"]), "2026-07-28") {
				t.Errorf("server/discover: %d %v", status, m)
			}
			status, m = statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"stateless"},`+statelessMeta+`}}`)
			r, _ = m["result"].(map[string]any)
			if status != 200 || m["id"] != 7.0 || r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "stateless") {
				t.Errorf("tools/call: %d %v", status, m)
			}
			status, m = statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"x:y",`+statelessMeta+`}}`)
			if e, _ := m["error"].(map[string]any); status != 404 || e["code"] != -32601.0 {
				t.Errorf("resources/subscribe: %d %v; want 404 -32601", status, m)
			}
			status, m = statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":9,"method":"nope/nope","params":{`+statelessMeta+`}}`)
			if e, _ := m["error"].(map[string]any); status != 404 || e["code"] != -32601.0 {
				t.Errorf("unknown method: %d %v; want the process's -32601 as 404", status, m)
			}
			status, m = statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"ask","arguments":{},`+statelessMeta+`}}`)
			r, _ = m["result"].(map[string]any)
			if status != 200 || r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "did not declare the capability sampling/createMessage") {
				t.Errorf("ask (sampling) without the capability: %d %v; want the tool's error saying why", status, m)
			}

			// With the capabilities: input_required twice (sampling, then
			// elicitation), each retry carrying the answer and requestState.
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`
			extra := ""
			for i, want := range []string{"sampling/createMessage", "elicitation/create"} {
				status, m = statelessPost(t, srv.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{},%s%s}}`, 11+i, meta, extra))
				r, _ = m["result"].(map[string]any)
				ask, _ := r["inputRequests"].(map[string]any)[inputKey].(map[string]any)
				state, _ := r["requestState"].(string)
				if status != 200 || m["id"] != float64(11+i) || r["resultType"] != "input_required" || ask["method"] != want || state == "" {
					t.Fatalf("ask, round %d: %d %v; want input_required with %s", i, status, m, want)
				}
				answer := `{"model":"m","role":"assistant","content":{"type":"text","text":"hi"}}`
				if i == 1 {
					answer = `{"action":"accept","content":{"name":"Ada"}}`
				}
				extra = fmt.Sprintf(`,"inputResponses":{%q:%s},"requestState":%q`, inputKey, answer, state)
			}
			status, m = statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"ask","arguments":{},`+meta+extra+`}}`)
			r, _ = m["result"].(map[string]any)
			if status != 200 || m["id"] != 13.0 || r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "model said hi; user said Ada") {
				t.Errorf("ask, last round: %d %v", status, m)
			}
			// The same requestState again (its call is over), and a forged one.
			for _, state := range []string{extra, `,"requestState":"agentauth-gateway.forged"`} {
				status, m = statelessPost(t, srv.URL, `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"ask","arguments":{},`+meta+state+`}}`)
				if e, _ := m["error"].(map[string]any); status != 400 || e["code"] != -32602.0 || !strings.Contains(fmt.Sprint(e["message"]), "requestState is not a call waiting for this caller's input") {
					t.Errorf("a spent or forged requestState: %d %v; want 400 -32602", status, m)
				}
			}
		})
	}
}

// TestStatelessStdioTwoAsks: a process asking sampling and elicitation at
// once during an MCP 2026-07-28 call: the caller gets one in each round
// (the Go SDK client's multi round-trip answers both), in either mode.
func TestStatelessStdioTwoAsks(t *testing.T) {
	for _, mode := range []string{ProcessPerSession, ProcessShared} {
		t.Run(mode, func(t *testing.T) {
			b := stdioBackend(t)
			b.Process = mode
			srv, _ := front(t, b, Policy{})
			var asked sync.Map
			cs := connect(t, srv.URL, "tok-writer-0123456789", &mcp.ClientOptions{
				CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					asked.Store("sampling", true)
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
				},
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Store("elicitation", true)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			if v := cs.InitializeResult().ProtocolVersion; v != "" && v != statelessVersion {
				t.Fatalf("the client speaks %s; want %s", v, statelessVersion)
			}
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_both"})
			if err != nil || resultText(t, r) != "model said hi; user said Ada" {
				t.Fatalf("ask_both: %v %v", r, err)
			}
		})
	}
}

// TestSharedInitialize: a caller's initialize is answered from the
// process's with the caller's revision when it is older; the process's
// own initialize was serve's.
func TestSharedInitialize(t *testing.T) {
	srv, _ := front(t, sharedBackendOf(t), Policy{})
	_, h, body := post(t, srv.URL, "tok-writer-0123456789", "", `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if h.Get("Mcp-Session-Id") == "" || !strings.Contains(body, `"protocolVersion":"2025-03-26"`) || !strings.Contains(body, `"id":"i"`) || !strings.Contains(body, "test-backend") {
		t.Errorf("initialize: %s", body)
	}
}

// TestStatelessStdioHeaders: serve checks an MCP 2026-07-28 request to a
// stdio backend as its own face checks its own (mcpserver.CheckRequest),
// the Mcp-Param-* headers by the backend tool's x-mcp-header.
func TestStatelessStdioHeaders(t *testing.T) {
	g, err := New(Options{Backends: []Backend{sharedBackendOf(t)}, CheckRequest: mcpserver.CheckRequest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	srv := serveMount(t, g.Mounts()[0])
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` + statelessMeta + `}}`
	for _, c := range []struct {
		headers map[string]string
		status  int
		want    string
	}{
		{map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "greet", "Mcp-Param-Name": "Ada"}, 200, "hello Ada"},
		{map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "greet", "Mcp-Param-Name": "=?base64?QWRh?="}, 200, "hello Ada"},
		{map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "greet"}, 400, "the Mcp-Param-Name header is missing"},
		{map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "greet", "Mcp-Param-Name": "Bob"}, 400, "Mcp-Param-Name is 'Bob' but the body says 'Ada'"},
		{map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "greet", "Mcp-Param-Name": "Ada"}, 400, "Mcp-Method is 'tools/list' but the body says 'tools/call'"},
		{map[string]string{"Mcp-Name": "greet", "Mcp-Param-Name": "Ada"}, 400, "the Mcp-Method header is missing"},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok-writer-0123456789")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", statelessVersion)
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%v: %d %s; want %d with %q", c.headers, resp.StatusCode, b, c.status, c.want)
		}
	}
}

func TestSharedConfig(t *testing.T) {
	for b, want := range map[*Backend]string{
		{Name: "a", Command: "x", Process: ProcessShared, Upstream: "rally", UpstreamEnv: "RALLY_TOKEN"}: "backends[0].upstreamEnv: a shared process serves every caller",
		{Name: "a", URL: "http://127.0.0.1:1/mcp", Process: ProcessShared}:                               `backends[0].process: "shared" is for a stdio command`,
		{Name: "a", Command: "x", Process: "pool"}:                                                       `want "session" (one process per MCP session) or "shared"`,
	} {
		if err := b.Check("backends[0]"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v; want %q", *b, err, want)
		}
	}
	if err := (&Backend{Name: "a", Command: "x", Process: ProcessShared}).Check("backends[0]"); err != nil {
		t.Error(err)
	}
}
