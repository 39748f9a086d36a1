// Command gateway benchmarks serve's gateway: tools/call round trips
// through `agentauth serve --backend URL` against the same backend
// directly, from CONNS keep-alive connections, in interleaved rounds
// (direct, serve, reverse proxy, direct, …), and prints the medians of
// throughput, p50 and p99 with serve's ratio to direct. The backend is an
// MCP Go SDK server (stateless Streamable HTTP, an echo tool) that this
// program runs in a child process (-backend ADDRFILE). The third target
// is net/http's httputil.ReverseProxy in front of the same backend,
// checking nothing, in a child process of its own (-proxy ADDRFILE
// BACKEND); the fourth the floor of a Go gateway on net/http's server,
// forwarding only (-floor ADDRFILE BACKEND, see runFloor). -layout separate puts the backend alone on
// one CPU and the rest on the others (see separate). Loopback only; never
// asserts a time. See testdata/bench/gateway.sh.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/internal/benchstat"
	"github.com/agentauth/agentauth/internal/cpuset"
	"github.com/agentauth/agentauth/internal/devlogin"
)

func main() {
	bin := flag.String("agentauth", "agentauth", "the agentauth binary")
	conns := flag.Int("conns", 64, "connections")
	duration := flag.Duration("duration", 5*time.Second, "length of one round")
	rounds := flag.Int("rounds", 3, "rounds per target, interleaved")
	backend := flag.String("backend", "", "internal: run the backend, writing its address to this file")
	proxy := flag.String("proxy", "", "internal: run the reverse proxy to the backend URL given as argument, writing its address to this file")
	floor := flag.String("floor", "", "internal: run the floor gateway (see runFloor) to the backend URL given as argument, writing its address to this file")
	logLevel := flag.String("log-level", "info", "serve's --log-level (info, its default, writes the audit record of every call to a log file)")
	reference := flag.String("reference", "", "a second agentauth binary (another build) run as a serve of its own, a fourth target interleaved with the others")
	layout := flag.String("layout", "shared", "shared: every process may run on every CPU; separate: the backend alone on the first CPU this program may use, serve (or the reverse proxy) and the load generator on the others (taskset; Linux, 2 CPUs or more)")
	flag.Parse()
	if *backend != "" {
		runBackend(*backend)
		return
	}
	if *proxy != "" {
		runProxy(*proxy, flag.Arg(0))
		return
	}
	if *floor != "" {
		runFloor(*floor, flag.Arg(0))
		return
	}
	if *layout == "separate" && os.Getenv(backendCPUEnv) == "" {
		if err := separate(); err != nil {
			fmt.Fprintln(os.Stderr, "bench gateway:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *reference, *conns, *duration, *rounds, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "bench gateway:", err)
		os.Exit(1)
	}
}

type echoArgs struct {
	Text string `json:"text"`
}

func runBackend(addrFile string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-backend", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."}, func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	serveUntilInterrupt(addrFile, &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})})
}

// runProxy serves net/http's reverse proxy to backend (a URL) and
// nothing else: no token, no parsing, no log.
func runProxy(addrFile, backend string) {
	u, err := url.Parse(backend)
	if err != nil {
		os.Exit(1)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
	serveUntilInterrupt(addrFile, &http.Server{Handler: rp})
}

// runFloor serves the least a Go gateway on net/http does: each POST's
// body read and written to the backend on a kept-alive connection of a
// pool (as serve's own client does, without net/http's Transport and its
// two goroutines per connection), the answer read and written back. No
// token, no check, no log: serve's CPU per call against it is what
// serve's own work costs over net/http's server and the kernel's.
func runFloor(addrFile, backend string) {
	u, err := url.Parse(backend)
	if err != nil {
		os.Exit(1)
	}
	type conn struct {
		nc net.Conn
		br *bufio.Reader
	}
	var mu sync.Mutex
	var idle []*conn
	// serve's server timeouts (server/ops.go, newHTTPServer): each sets a
	// deadline on the connection for every request.
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		var c *conn
		if n := len(idle); n > 0 {
			c, idle = idle[n-1], idle[:n-1]
		}
		mu.Unlock()
		if c == nil {
			nc, err := net.Dial("tcp", u.Host)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			c = &conn{nc: nc, br: bufio.NewReader(nc)}
		}
		head := "POST " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: " +
			r.Header.Get("Mcp-Protocol-Version") + "\r\nContent-Length: " + strconv.Itoa(len(in)) + "\r\n\r\n"
		var resp *http.Response
		var out []byte
		if _, err = c.nc.Write(append([]byte(head), in...)); err == nil {
			if resp, err = http.ReadResponse(c.br, nil); err == nil {
				out, err = io.ReadAll(resp.Body)
			}
		}
		if err != nil {
			c.nc.Close()
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		mu.Lock()
		idle = append(idle, c)
		mu.Unlock()
		w.Header()["Content-Type"] = resp.Header["Content-Type"]
		w.WriteHeader(resp.StatusCode)
		w.Write(out)
	})
	serveUntilInterrupt(addrFile, srv)
}

// serveUntilInterrupt runs srv on a loopback port written to addrFile
// until SIGINT.
func serveUntilInterrupt(addrFile string, srv *http.Server) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(1)
	}
	os.WriteFile(addrFile, []byte(l.Addr().String()+"\n"), 0o600)
	go srv.Serve(l)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
}

type proc struct {
	cmd  *exec.Cmd
	addr string
}

func start(dir, name string, args ...string) (*proc, error) {
	addrFile := filepath.Join(dir, name+".addr")
	cmd := exec.Command(args[0], append(args[1:], "--addr-file", addrFile)...)
	switch name {
	case "backend":
		cmd = exec.Command(args[0], append(args[1:], addrFile)...)
		if cpu := os.Getenv(backendCPUEnv); cpu != "" {
			cmd = exec.Command("taskset", append([]string{"-c", cpu}, append(args, addrFile)...)...)
		}
	case "proxy", "floor":
		cmd = exec.Command(args[0], args[1], addrFile, args[2])
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for range 300 {
		if b, err := os.ReadFile(addrFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return &proc{cmd: cmd, addr: strings.TrimSpace(string(b))}, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("%s did not write its address", name)
}

// cpu is the process's user and system time so far (Linux /proc; 0
// elsewhere).
func (p *proc) cpu() time.Duration {
	return benchstat.ProcessCPU(p.cmd.Process.Pid)
}

func (p *proc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
}

func run(bin, refBin string, conns int, d time.Duration, rounds int, logLevel string) error {
	dir, err := os.MkdirTemp("", "gateway-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, _ := os.Executable()
	be, err := start(dir, "backend", self, "-backend")
	if err != nil {
		return err
	}
	defer be.stop()
	metricsOf := map[string]string{}
	startServe := func(name, bin string) (*proc, string, error) {
		metrics, err := freeAddr()
		if err != nil {
			return nil, "", err
		}
		metricsOf[name] = metrics
		srv, err := start(dir, name, bin, "serve", "--listen", "127.0.0.1:0", "--ephemeral", "--auto-approve",
			"--log-level", logLevel, "--log-file", filepath.Join(dir, name+".log"), "--backend", "http://"+be.addr+"/mcp",
			"--metrics-listen", metrics)
		if err != nil {
			return nil, "", err
		}
		token, err := devlogin.Token(http.DefaultClient, "http://"+srv.addr, "http://"+srv.addr+"/mcp", nil)
		if err != nil {
			srv.stop()
			return nil, "", fmt.Errorf("cannot get a token from %s: %w", name, err)
		}
		return srv, token, nil
	}
	srv, token, err := startServe("serve", bin)
	if err != nil {
		return err
	}
	defer srv.stop()
	px, err := start(dir, "proxy", self, "-proxy", "http://"+be.addr)
	if err != nil {
		return err
	}
	defer px.stop()
	fl, err := start(dir, "floor", self, "-floor", "http://"+be.addr+"/mcp")
	if err != nil {
		return err
	}
	defer fl.stop()
	// mid is the process between the load generator and the backend.
	targets := []struct {
		name, url, token string
		mid              *proc
	}{{"direct", "http://" + be.addr + "/mcp", "", nil}, {"serve", "http://" + srv.addr + "/mcp", token, srv},
		{"proxy", "http://" + px.addr + "/mcp", "", px}, {"floor", "http://" + fl.addr + "/mcp", "", fl}}
	var ref *proc
	if refBin != "" {
		var refToken string
		if ref, refToken, err = startServe("reference", refBin); err != nil {
			return err
		}
		defer ref.stop()
		targets = append(targets, struct {
			name, url, token string
			mid              *proc
		}{"reference", "http://" + ref.addr + "/mcp", refToken, ref})
	}
	// A first call each, so that a failure shows before the rounds.
	for _, t := range targets {
		if _, err := call(http.DefaultClient, t.url, t.token); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	fmt.Printf("tools/call (echo) over %d connections, %d rounds of %s each, interleaved; serve at --log-level %s\n", conns, rounds, d, logLevel)
	if cpu := os.Getenv(backendCPUEnv); cpu != "" {
		fmt.Printf("layout: separate, the backend alone on CPU %s; serve, the reverse proxy and the load generator on the others\n", cpu)
	} else {
		fmt.Printf("layout: shared, every process on every CPU\n")
	}
	mallocs := map[string]float64{}
	// CPU time by process and target: "mid" (serve or the reverse proxy),
	// "backend" and "load" (this program, the load generator), and the
	// calls of each target.
	cpu := map[string]map[string]float64{"direct": {}, "serve": {}, "proxy": {}, "floor": {}, "reference": {}}
	calls := map[string]float64{}
	gen := &proc{cmd: &exec.Cmd{Process: &os.Process{Pid: os.Getpid()}}}
	tput := map[string][]float64{}
	p50 := map[string][]float64{}
	p99 := map[string][]float64{}
	for range rounds {
		for _, t := range targets {
			var c0 time.Duration
			if t.mid != nil {
				c0 = t.mid.cpu()
			}
			b0, l0 := be.cpu(), gen.cpu()
			addr, counted := metricsOf[t.name]
			var m0 float64
			if counted {
				m0 = mallocsOf(addr)
			}
			n, lat, errs := load(t.url, t.token, conns, d)
			if counted {
				mallocs[t.name] += mallocsOf(addr) - m0
			}
			calls[t.name] += float64(n)
			if t.mid != nil {
				cpu[t.name]["mid"] += float64(t.mid.cpu() - c0)
			}
			cpu[t.name]["backend"] += float64(be.cpu() - b0)
			cpu[t.name]["load"] += float64(gen.cpu() - l0)
			if errs > 0 {
				return fmt.Errorf("%s: %d failed calls", t.name, errs)
			}
			tput[t.name] = append(tput[t.name], float64(n)/d.Seconds())
			p50[t.name] = append(p50[t.name], benchstat.Millis(benchstat.Percentile(lat, 50)))
			p99[t.name] = append(p99[t.name], benchstat.Millis(benchstat.Percentile(lat, 99)))
		}
	}
	report := func(what, unit string, m map[string][]float64) {
		s, r, x := benchstat.Median(m["serve"]), benchstat.Median(m["direct"]), benchstat.Median(m["proxy"])
		fmt.Printf("%-12s serve %10.2f %-6s direct %10.2f %-6s ratio %.2f   reverse proxy %10.2f %-6s ratio %.2f\n", what, s, unit, r, unit, s/r, x, unit, x/r)
	}
	report("throughput", "req/s", tput)
	report("p50", "ms", p50)
	report("p99", "ms", p99)
	// On a saturated machine the throughput ratio follows these sums: the
	// CPU each call costs all three processes.
	for _, t := range []string{"serve", "reference", "proxy", "floor", "direct"} {
		c, n := cpu[t], calls[t]*1e3
		if n == 0 {
			continue
		}
		fmt.Printf("CPU per call, %-9s %-13s %6.1f µs  backend %6.1f µs  load generator %6.1f µs  sum %6.1f µs\n",
			t, map[string]string{"serve": "serve", "reference": "serve (ref)", "proxy": "reverse proxy", "floor": "floor", "direct": "-"}[t], c["mid"]/n, c["backend"]/n, c["load"]/n, (c["mid"]+c["backend"]+c["load"])/n)
	}
	// The floor: serve's CPU per call over it is what serve's own work
	// costs (see runFloor).
	fmt.Printf("serve's CPU per call against the floor's: %.2f\n", (cpu["serve"]["mid"]/calls["serve"])/(cpu["floor"]["mid"]/calls["floor"]))
	if ref != nil {
		s, r := cpu["serve"]["mid"]/calls["serve"], cpu["reference"]["mid"]/calls["reference"]
		fmt.Printf("serve's CPU per call against the reference build's: %.2f; throughput %.2f\n", s/r, benchstat.Median(tput["serve"])/benchstat.Median(tput["reference"]))
		fmt.Printf("the floor's CPU per call against the reference build's: %.2f\n", cpu["floor"]["mid"]/calls["floor"]/r)
	}
	// Serve's own allocations, from its Go runtime's count
	// (go_memstats_mallocs_total, read before and after each of its
	// rounds: the reads themselves are in it, a few thousand objects).
	fmt.Printf("serve's allocations per call: %.1f (%.0f calls)\n", mallocs["serve"]/calls["serve"], calls["serve"])
	if ref != nil {
		fmt.Printf("the reference build's allocations per call: %.1f (%.0f calls); ratio %.2f\n", mallocs["reference"]/calls["reference"], calls["reference"],
			(mallocs["serve"]/calls["serve"])/(mallocs["reference"]/calls["reference"]))
	}
	if logLevel == "info" || logLevel == "debug" {
		// The audit records must all be there: one per call.
		srv.stop()
		log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		n := bytes.Count(log, []byte("gateway call"))
		fmt.Printf("audit records: %d for %d calls through serve\n", n, int(calls["serve"])+1)
	}
	return nil
}

// freeAddr is a loopback address free a moment ago, for serve's
// --metrics-listen, which writes no address file.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// mallocsOf reads go_memstats_mallocs_total from the metrics at addr (0
// when it cannot).
func mallocsOf(addr string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "go_memstats_mallocs_total "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello through the gateway"}}}`

func call(hc *http.Client, url, token string) (time.Duration, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte("hello through the gateway")) || bytes.Contains(b, []byte(`"error"`)) {
		return 0, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	return time.Since(start), nil
}

func load(url, token string, conns int, d time.Duration) (int, []time.Duration, int) {
	var mu sync.Mutex
	var all []time.Duration
	errs := 0
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
			defer hc.CloseIdleConnections()
			var lat []time.Duration
			bad := 0
			for time.Now().Before(deadline) {
				l, err := call(hc, url, token)
				if err != nil {
					bad++
					continue
				}
				lat = append(lat, l)
			}
			mu.Lock()
			all = append(all, lat...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	return len(all), all, errs
}

// backendCPUEnv names the CPU the backend runs on in the separate layout:
// separate sets it when it starts this program again on the other CPUs.
const backendCPUEnv = "GATEWAY_BENCH_BACKEND_CPU"

// separate runs the benchmark in the separate layout: the backend alone on
// the first CPU this program may use, as a server behind a gateway has its
// own CPU in a deployment (its own host or container), and this program
// (the load generator) with serve and the reverse proxy, which it starts,
// on the others. Both are taskset's (util-linux); the CPUs allowed come
// from /proc/self/status. Every process is started on its CPUs, so the Go
// runtime of each sizes GOMAXPROCS to them.
func separate() error {
	cpus, err := cpuset.Allowed()
	if err != nil {
		return fmt.Errorf("the separate layout needs Linux: %w", err)
	}
	if len(cpus) < 2 {
		return fmt.Errorf("the separate layout needs 2 CPUs or more; this program may use %d", len(cpus))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command("taskset", append([]string{"-c", strings.Join(cpus[1:], ","), self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), backendCPUEnv+"="+cpus[0])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
