package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	g, err := New(Options{Backends: []Backend{{Name: "b", URL: be.URL}}})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	m := g.Mounts()[0]
	c := callers["tok-writer-0123456789"]
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello through the gateway"}}}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok-writer-0123456789")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		w := httptest.NewRecorder()
		m.Serve(w, r, c)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "hello through") {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		io.Discard.Write(w.Body.Bytes())
	}
}
