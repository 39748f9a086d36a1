package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"github.com/coder/websocket"
)

// BenchmarkIdleWebSocketSetup opens b.N WebSocket connections through
// WebSocketHandler behind a guard, as serve does, each initialized and
// authenticated with one cached ES256 token from the embedded issuer, and
// keeps them idle. The clients run in a child process (this test binary,
// TestIdleClients), so that the figures are the server's alone: per
// connection, what the server allocated to set it up, the live heap it
// holds once idle and the goroutine stacks. testdata/bench/idle.sh
// measures the server's RSS against a reference; profile the server's
// share here with
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
	clients := func(n int) (wait func()) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClients$")
		cmd.Env = append(os.Environ(), "IDLE_CLIENTS_ADDR="+ln.Addr().String(), "IDLE_CLIENTS_TOKEN="+token, "IDLE_CLIENTS_N="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
			b.Fatalf("clients: %q, %v", line, err)
		}
		return func() {
			stdin.Close()
			cmd.Wait()
		}
	}
	defer clients(1)() // keys and caches: not counted
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	b.ResetTimer()
	wait := clients(b.N)
	b.StopTimer()
	runtime.GC()
	if os.Getenv("IDLE_GC") != "" {
		for range 5 {
			runtime.GC()
		}
	}
	runtime.ReadMemStats(&after)
	g := runtime.NumGoroutine() - g0
	if os.Getenv("IDLE_STACKS") != "" {
		buf := make([]byte, 1<<20)
		os.Stderr.Write(buf[:runtime.Stack(buf, true)])
	}
	wait()
	n := float64(b.N)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "alloc-B/conn")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/conn")
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/n, "live-B/conn")
	b.ReportMetric((float64(after.StackInuse)-float64(before.StackInuse))/n, "stack-B/conn")
	b.ReportMetric(float64(g)/n, "goroutines/conn")
}

// TestIdleClients is BenchmarkIdleWebSocketSetup's child process: it opens
// IDLE_CLIENTS_N connections to IDLE_CLIENTS_ADDR, each initialized and
// authenticated with IDLE_CLIENTS_TOKEN, prints "ready" and keeps them
// until its stdin closes. Without IDLE_CLIENTS_ADDR it does nothing.
func TestIdleClients(t *testing.T) {
	addr := os.Getenv("IDLE_CLIENTS_ADDR")
	if addr == "" {
		t.Skip("BenchmarkIdleWebSocketSetup's child process")
	}
	n, _ := strconv.Atoi(os.Getenv("IDLE_CLIENTS_N"))
	ctx := context.Background()
	var conns []*websocket.Conn
	for range n {
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, req := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
			`{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"schemeId":"dev","token":"` + os.Getenv("IDLE_CLIENTS_TOKEN") + `"}}`,
		} {
			if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
				t.Fatal(err)
			}
			_, data, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`"id":%d,"result"`, i+1); !bytes.Contains(data, []byte(want)) {
				t.Fatalf("answer %s, want a result", data)
			}
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.CloseNow()
	}
}
