package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/internal/benchstat"
)

// BenchmarkForward is one tools/call through a mount to a stateless MCP Go
// SDK backend, for profiling the gateway's own cost (the ratio against the
// backend directly is measured by testdata/bench/gateway.sh).
func BenchmarkForward(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return text(a.Text), nil, nil
	})
	be := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer be.Close()
	benchEcho(b, be.URL, nil)
}

// BenchmarkForwardOwnCost is BenchmarkForward against a backend that
// answers from constants (the echo tool's schema, one fixed result), so
// that what it measures is the gateway's own cost: its checks and its
// HTTP client, not the MCP SDK's server.
func BenchmarkForwardOwnCost(b *testing.B) {
	be := constBackend()
	defer be.Close()
	benchEcho(b, be.URL, nil)
}

// BenchmarkForwardOwnCostNetHTTP is BenchmarkForwardOwnCost with
// net/http's Transport in place of backendTransport: what the latter
// saves.
func BenchmarkForwardOwnCostNetHTTP(b *testing.B) {
	be := constBackend()
	defer be.Close()
	benchEcho(b, be.URL, &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second})
}

// benchEcho measures tools/call of the echo tool through a gateway in
// front of the HTTP backend at url, one call per iteration, over
// transport (nil: the default, backendTransport).
func benchEcho(b *testing.B, url string, transport http.RoundTripper) {
	g, err := New(Options{Backends: []Backend{{Name: "b", URL: url}}, Transport: transport})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	m := g.Mounts()[0]
	c := callers["tok-writer-0123456789"]
	benchCalls(b, func(w http.ResponseWriter, r *http.Request) { m.Serve(w, r, c) })
}

// benchCalls runs the benchmark loop: one tools/call of the echo tool per
// iteration through serve, checking the answer, with allocations and CPU
// per call reported.
func benchCalls(b *testing.B, serve http.HandlerFunc) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello through the gateway"}}}`
	b.ReportAllocs()
	cpu := benchstat.SelfCPU()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok-writer-0123456789")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		w := httptest.NewRecorder()
		serve(w, r)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "hello through") {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	reportCPU(b, cpu)
}

// reportCPU adds the process's CPU time per iteration since cpu (user and
// system, both ends of the loopback connection), which a machine busy
// with other work disturbs much less than the wall time of ns/op.
func reportCPU(b *testing.B, cpu time.Duration) {
	if d := benchstat.SelfCPU() - cpu; d > 0 && b.N > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// constBackend is an MCP backend that answers from constants: the echo
// tool's schema to tools/list, one fixed result to anything else.
func constBackend() *httptest.Server {
	list := []byte(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}}]}}`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if m.Method == "tools/list" {
			w.Write(bytes.Replace(list, []byte("%s"), m.ID, 1))
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"hello through the gateway"}]}}`))
	}))
}

// BenchmarkReverseProxyReference is the floor under BenchmarkForwardOwnCost:
// net/http's own reverse proxy (httputil.ReverseProxy, no checks) to the
// same constant backend, the same request.
func BenchmarkReverseProxyReference(b *testing.B) {
	be := constBackend()
	defer be.Close()
	u, _ := url.Parse(be.URL)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	benchCalls(b, rp.ServeHTTP)
}
