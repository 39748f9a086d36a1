package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/coder/websocket"
)

// BenchmarkIdleWebSocketSetup opens b.N WebSocket connections through
// WebSocketHandler behind a guard, as serve does, each initialized and
// authenticated with one cached ES256 token from the embedded issuer, and
// keeps them idle. It reports per connection what the process (server
// and client) allocated to set them up, the live heap they hold once idle
// and the goroutine stacks. testdata/bench/idle.sh measures the server
// alone (its RSS) against a reference; profile the server's share here
// with
//
//	go test -run '^$' -bench IdleWebSocketSetup -benchtime 2000x -memprofile mem.out ./host
//	go tool pprof -sample_index alloc_space -focus 'http.\(\*conn\).serve|ServeConn' mem.out
func BenchmarkIdleWebSocketSetup(b *testing.B) {
	ln, origin, iss, h := benchHost(b, slog.New(slog.NewTextHandler(io.Discard, nil))) // as serve logs
	mux := http.NewServeMux()
	for _, p := range iss.Paths() {
		mux.Handle(p, iss.Handler())
	}
	mux.Handle("GET /{$}", h.WebSocketHandler(""))
	guarded, err := NewGuard(mux, GuardOptions{Addr: ln.Addr().String()})
	if err != nil {
		b.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: guarded}}
	srv.Start()
	b.Cleanup(srv.Close)

	token := embeddedToken(b, origin, nil)
	ctx := context.Background()
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+"/", nil)
		if err != nil {
			b.Fatal(err)
		}
		for i, req := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
			`{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"schemeId":"dev","token":"` + token + `"}}`,
		} {
			if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
				b.Fatal(err)
			}
			_, data, err := c.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if want := fmt.Sprintf(`"id":%d,"result"`, i+1); !bytes.Contains(data, []byte(want)) {
				b.Fatalf("answer %s, want a result", data)
			}
		}
		return c
	}
	conns := []*websocket.Conn{dial()} // keys and caches: not counted
	b.Cleanup(func() {
		for _, c := range conns {
			c.CloseNow()
		}
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		conns = append(conns, dial())
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(b.N)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "alloc-B/conn")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/conn")
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/n, "live-B/conn")
	b.ReportMetric((float64(after.StackInuse)-float64(before.StackInuse))/n, "stack-B/conn")
}
