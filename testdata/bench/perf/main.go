// Command perf measures `agentauth serve` against reference servers in the
// same run, on loopback only, and prints each figure, the reference's and
// their ratio. It never asserts a time: the scripts testdata/bench/http.sh,
// ws.sh, idle.sh and burst.sh run it (see there); it exits 2 on a setup
// error only.
//
// The references run as separate processes of this same binary
// (-reference ADDRFILE): a net/http server with go-jose that verifies the
// same ES256 access token (from serve's embedded issuer) against the
// issuer's JWKS and caches verified claims in a map keyed by the token's
// SHA-256 (the ceiling of a cached verifier); for WebSocket, a
// coder/websocket server that verifies the bearer token of the upgrade the
// same way and answers each JSON-RPC message after checking its cached
// grant (one authenticated call per message).
//
// Modes:
//
//	http   POST /mcp (whoami) from -conns keep-alive connections for
//	       -duration per round, -rounds rounds each, interleaved: requests/s,
//	       p99 and server CPU per request (/proc/PID/stat), medians.
//	ws     -conns WebSocket connections in a closed loop of echo calls:
//	       round trips/s, medians of interleaved rounds.
//	idle   -conns idle authenticated WebSocket connections: the server's
//	       RSS growth per connection (VmRSS, Linux /proc).
//	burst  -conns connections present one fresh token at once (HTTP, then
//	       WebSocket authenticate): how many validations serve ran (the
//	       "token validated" lines of its debug log, --log-level debug), the
//	       burst's wall time and serve's CPU.
//	grants -grants client_credentials grants per store from -conns
//	       clients: rate and CPU per tenth, RSS after the first tenth and
//	       at the end (grants.go).
//	replicas  -replicas serve replicas on one PostgreSQL: the window
//	       between a revocation's answer on one and its enforcement on
//	       another; in -rounds rounds for 1 to -replicas replicas,
//	       grants/s and -revoke-count revocations through LISTEN/NOTIFY,
//	       CPU, RSS, PostgreSQL connections; the capacity model's
//	       predictions against them; -pin lays the processes out on the
//	       CPUs (replicas.go, revocations.go, pin.go).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentauth/agentauth/internal/benchstat"
	"github.com/agentauth/agentauth/internal/devlogin"
)

func main() {
	bin := flag.String("agentauth", "agentauth", "the agentauth binary")
	mode := flag.String("mode", "http", "http, ws, idle, burst, refresh, exchange, grants or replicas")
	stores := flag.String("stores", "memory,sqlite,postgres", "refresh, exchange: the state stores to measure")
	oidc := flag.String("oidc", "", "refresh: the directory of the oidc-provider reference (testdata/bench/oidc, npm ci done); none when empty")
	conns := flag.Int("conns", 64, "connections")
	grantCount := flag.Int("grants", 1000000, "grants: how many client_credentials grants per store")
	serveArgs := flag.String("serve-args", "", "refresh, exchange, grants: more arguments for serve, separated by spaces (--log-level warn)")
	maxReplicas := flag.Int("replicas", 3, "replicas: measure 1 to this many replicas")
	revocations := flag.Int("revocations", 100, "replicas: revocations whose enforcement across replicas is timed")
	revokeCount := flag.Int("revoke-count", 4000, "replicas: revocations per run of the revocation throughput")
	pin := flag.Bool("pin", false, "replicas: replica k on CPU k mod CPUs, PostgreSQL and the load generator on the CPUs no measured replica has (taskset)")
	duration := flag.Duration("duration", 5*time.Second, "length of one round")
	rounds := flag.Int("rounds", 3, "rounds per server, interleaved")
	reference := flag.String("reference", "", "internal: run the reference server, writing its address to this file")
	issuer := flag.String("issuer", "", "internal: the reference's trusted issuer")
	flag.Parse()
	if *reference != "" {
		if err := runReference(*reference, *issuer); err != nil {
			fmt.Fprintln(os.Stderr, "perf reference:", err)
			os.Exit(2)
		}
		return
	}
	dir, err := os.MkdirTemp("", "agentauth-perf")
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(dir)
	b := &bench{bin: *bin, dir: dir, conns: *conns, duration: *duration, rounds: *rounds, stores: strings.Split(*stores, ","), oidc: *oidc, grantCount: *grantCount,
		maxReplicas: *maxReplicas, revocations: *revocations, revokeCount: *revokeCount, pin: *pin, serveArgs: strings.Fields(*serveArgs)}
	switch *mode {
	case "http":
		err = b.http()
	case "ws":
		err = b.ws()
	case "idle":
		err = b.idle()
	case "burst":
		err = b.burst()
	case "refresh":
		err = b.refresh()
	case "exchange":
		err = b.exchange()
	case "grants":
		err = b.grants()
	case "replicas":
		err = b.replicas()
	default:
		err = fmt.Errorf("unknown -mode %q: http, ws, idle, burst, refresh, exchange, grants or replicas", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(2)
	}
}

type bench struct {
	bin      string
	dir      string
	conns    int
	duration time.Duration
	rounds   int
	stores   []string
	oidc     string
	// grantCount is how many grants the grants mode runs per store.
	grantCount int
	// maxReplicas and revocations are the replicas mode's (replicas.go).
	maxReplicas, revocations int
	// revokeCount is how many revocations a run of the revocation
	// throughput makes (revocations.go).
	revokeCount int
	// serveArgs are more arguments for the stores' serve.
	serveArgs []string
	// pin lays the replicas mode's processes out on the CPUs (pin.go);
	// wrap, when set, runs the next serve under it (taskset -c CPU).
	pin  bool
	wrap []string
}

// proc is a server process under test.
type proc struct {
	name string
	cmd  *exec.Cmd
	addr string
	log  string
}

// start runs args (serve, or this binary as a reference) with an address
// file and waits for the address.
func (b *bench) start(name string, args ...string) (*proc, error) {
	addrFile := filepath.Join(b.dir, name+".addr")
	p := &proc{name: name, log: filepath.Join(b.dir, name+".log")}
	if name == "reference" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		p.cmd = exec.Command(self, append([]string{"-reference", addrFile}, args...)...)
	} else {
		base := []string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--auto-approve", "--log-file", p.log}
		if !slices.ContainsFunc(args, func(a string) bool { return a == "--data-dir" || a == "--database" }) {
			base = append(base, "--ephemeral")
		}
		p.cmd = exec.Command(b.bin, append(base, args...)...)
		if len(b.wrap) > 0 {
			p.cmd = exec.Command(b.wrap[0], append(append(b.wrap[1:], b.bin), append(base, args...)...)...)
		}
		p.cmd.Env = append(os.Environ(), "AGENTAUTH_CONFIG_DIR="+filepath.Join(b.dir, "config"), "AGENTAUTH_STORE=file")
	}
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(addrFile); err == nil && bytes.HasSuffix(data, []byte("\n")) {
			p.addr = strings.TrimSpace(string(data))
			break
		}
	}
	if !strings.HasPrefix(p.addr, "127.0.0.1:") {
		p.stop()
		return nil, fmt.Errorf("%s wrote no loopback address", name)
	}
	return p, nil
}

func (p *proc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
}

// cpu is the process's user+system CPU time so far (/proc/PID/stat).
func (p *proc) cpu() time.Duration {
	return benchstat.ProcessCPU(p.cmd.Process.Pid)
}

// rss is the process's VmRSS in bytes.
func (p *proc) rss() int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// servers starts serve and the reference, which trusts serve's issuer, and
// an access token for serve's resource.
func (b *bench) servers(serveArgs ...string) (agent, ref *proc, token string, err error) {
	agent, err = b.start("agentauth", serveArgs...)
	if err != nil {
		return nil, nil, "", err
	}
	ref, err = b.start("reference", "-issuer", "http://"+agent.addr)
	if err != nil {
		agent.stop()
		return nil, nil, "", err
	}
	token, err = devlogin.Token(http.DefaultClient, "http://"+agent.addr, "", nil)
	if err != nil {
		agent.stop()
		ref.stop()
		return nil, nil, "", err
	}
	return agent, ref, token, nil
}

// ratio prints one figure against its reference.
func ratio(what string, got, ref float64, unit string) {
	fmt.Printf("%-34s agentauth %10.1f %-6s reference %10.1f %-6s ratio %.2f\n", what, got, unit, ref, unit, got/ref)
}

// rounds prints the medians of a figure measured in interleaved rounds,
// and the median of the ratios round by round (robust to the machine's
// load drifting between rounds).
func rounds(what string, got, ref []float64, unit string) {
	pairs := make([]float64, len(got))
	for i := range got {
		pairs[i] = got[i] / ref[i]
	}
	fmt.Printf("%-34s agentauth %10.1f %-6s reference %10.1f %-6s ratio %.2f (round by round %.2f, %.2f–%.2f)\n",
		what, benchstat.Median(got), unit, benchstat.Median(ref), unit, benchstat.Median(got)/benchstat.Median(ref), benchstat.Median(pairs), slices.Min(pairs), slices.Max(pairs))
}

// http compares POST /mcp.
func (b *bench) http() error {
	agent, ref, token, err := b.servers()
	if err != nil {
		return err
	}
	defer agent.stop()
	defer ref.stop()
	type result struct{ rps, p50, p99, cpu []float64 }
	res := map[*proc]*result{agent: {}, ref: {}}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"whoami"}`)
	fmt.Printf("HTTP: POST /mcp whoami, %d keep-alive connections, %d interleaved rounds of %s\n", b.conns, b.rounds, b.duration)
	for round := 0; round < b.rounds; round++ {
		for _, p := range []*proc{agent, ref} {
			if round == 0 { // warm up: caches, keys, connections
				b.load(p, token, body, time.Second)
			}
			cpu0 := p.cpu()
			n, lat := b.load(p, token, body, b.duration)
			cpu := p.cpu() - cpu0
			r := res[p]
			r.rps = append(r.rps, float64(n)/b.duration.Seconds())
			r.p50 = append(r.p50, benchstat.Millis(benchstat.Percentile(lat, 50)))
			r.p99 = append(r.p99, benchstat.Millis(benchstat.Percentile(lat, 99)))
			r.cpu = append(r.cpu, float64(cpu.Microseconds())/float64(n))
		}
	}
	a, r := res[agent], res[ref]
	rounds("throughput (median)", a.rps, r.rps, "req/s")
	rounds("p50 latency (median)", a.p50, r.p50, "ms")
	rounds("p99 latency (median)", a.p99, r.p99, "ms")
	rounds("server CPU per request (median)", a.cpu, r.cpu, "µs")
	return nil
}

// load posts body from b.conns connections for d and returns the count
// of 200 answers and the sorted latencies.
func (b *bench) load(p *proc, token string, body []byte, d time.Duration) (int, []time.Duration) {
	tr := &http.Transport{MaxIdleConnsPerHost: b.conns, MaxConnsPerHost: b.conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	target := "http://" + p.addr + "/mcp"
	deadline := time.Now().Add(d)
	lats := make([][]time.Duration, b.conns)
	var wg sync.WaitGroup
	for i := range b.conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					lats[i] = append(lats[i], time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		all = []time.Duration{0}
	}
	return len(all), all
}

// wsClient is one authenticated JSON-RPC WebSocket connection.
type wsClient struct {
	c  *websocket.Conn
	id int
}

// dialAgent opens an agent host connection: initialize, authenticate.
func dialAgent(ctx context.Context, addr, token string) (*wsClient, error) {
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
	if err != nil {
		return nil, err
	}
	w := &wsClient{c: c}
	if err := w.call(ctx, "initialize", `{}`); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := w.call(ctx, "authenticate", `{"schemeId":"dev","token":"`+token+`"}`); err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return w, nil
}

// dialReference opens a reference connection, the token on the upgrade.
func dialReference(ctx context.Context, addr, token string) (*wsClient, error) {
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		return nil, err
	}
	return &wsClient{c: c}, nil
}

// call sends one request and reads until its answer.
func (w *wsClient) call(ctx context.Context, method, params string) error {
	w.id++
	id := strconv.Itoa(w.id)
	if err := w.c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`+params+`}`)); err != nil {
		return err
	}
	for {
		_, data, err := w.c.Read(ctx)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte(`"id":`+id+`,`)) && !bytes.Contains(data, []byte(`"id":`+id+`}`)) {
			continue // a notification
		}
		if bytes.Contains(data, []byte(`"error":`)) {
			return errors.New(string(data))
		}
		return nil
	}
}

// dialAll opens n connections, 64 at a time.
func dialAll(n int, dial func(ctx context.Context) (*wsClient, error)) ([]*wsClient, error) {
	out := make([]*wsClient, n)
	var firstErr error
	var mu sync.Mutex
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := dial(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[i] = c
		})
	}
	wg.Wait()
	if firstErr != nil {
		closeAll(out)
		return nil, firstErr
	}
	return out, nil
}

func closeAll(cs []*wsClient) {
	for _, c := range cs {
		if c != nil {
			c.c.CloseNow()
		}
	}
}

// ws compares echo round trips over WebSocket.
func (b *bench) ws() error {
	agent, ref, token, err := b.servers()
	if err != nil {
		return err
	}
	defer agent.stop()
	defer ref.stop()
	fmt.Printf("WebSocket: %d connections, closed loop of authenticated echo calls, %d interleaved rounds of %s\n", b.conns, b.rounds, b.duration)
	ac, err := dialAll(b.conns, func(ctx context.Context) (*wsClient, error) { return dialAgent(ctx, agent.addr, token) })
	if err != nil {
		return fmt.Errorf("agentauth: %w", err)
	}
	defer closeAll(ac)
	rc, err := dialAll(b.conns, func(ctx context.Context) (*wsClient, error) { return dialReference(ctx, ref.addr, token) })
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	defer closeAll(rc)
	var got, want, gotCPU, wantCPU []float64
	for range b.rounds {
		for _, side := range []struct {
			p   *proc
			cs  []*wsClient
			out *[]float64
			cpu *[]float64
		}{{agent, ac, &got, &gotCPU}, {ref, rc, &want, &wantCPU}} {
			cpu0 := side.p.cpu()
			n, err := echoLoop(side.cs, b.duration)
			if err != nil {
				return fmt.Errorf("%s: %w", side.p.name, err)
			}
			*side.out = append(*side.out, float64(n)/b.duration.Seconds())
			*side.cpu = append(*side.cpu, float64((side.p.cpu()-cpu0).Microseconds())/float64(n))
		}
	}
	rounds("echo round trips (median)", got, want, "msg/s")
	rounds("server CPU per message (median)", gotCPU, wantCPU, "µs")
	return nil
}

// echoLoop runs one echo call at a time on every connection for d.
func echoLoop(cs []*wsClient, d time.Duration) (int64, error) {
	var n atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
			defer cancel()
			for time.Now().Before(deadline) {
				if err := c.call(ctx, "echo", `{"text":"hello"}`); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	return n.Load(), nil
}

// idle compares the memory of idle authenticated connections.
func (b *bench) idle() error {
	agent, ref, token, err := b.servers()
	if err != nil {
		return err
	}
	defer agent.stop()
	defer ref.stop()
	fmt.Printf("Idle: %d authenticated WebSocket connections, server RSS growth per connection\n", b.conns)
	// One connection first, so that keys and caches are not counted.
	warm := func(p *proc, dial func(ctx context.Context) (*wsClient, error)) (int64, []*wsClient, error) {
		w, err := dialAll(1, dial)
		if err != nil {
			return 0, nil, err
		}
		time.Sleep(500 * time.Millisecond)
		base := p.rss()
		cs, err := dialAll(b.conns, dial)
		if err != nil {
			closeAll(w)
			return 0, nil, err
		}
		time.Sleep(2 * time.Second) // let the connections settle
		return (p.rss() - base) / int64(b.conns), append(cs, w...), nil
	}
	perAgent, ac, err := warm(agent, func(ctx context.Context) (*wsClient, error) { return dialAgent(ctx, agent.addr, token) })
	if err != nil {
		return fmt.Errorf("agentauth: %w", err)
	}
	closeAll(ac)
	perRef, rc, err := warm(ref, func(ctx context.Context) (*wsClient, error) { return dialReference(ctx, ref.addr, token) })
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	closeAll(rc)
	ratio("memory per idle connection", float64(perAgent)/1024, float64(perRef)/1024, "KiB")
	return nil
}

// burst counts the validations of one fresh token presented by many
// connections at once, over HTTP then over WebSocket.
func (b *bench) burst() error {
	agent, err := b.start("agentauth", "--log-level", "debug")
	if err != nil {
		return err
	}
	defer agent.stop()
	fmt.Printf("Cold burst: %d connections present one fresh token at once\n", b.conns)
	count := func() int {
		data, _ := os.ReadFile(agent.log)
		return bytes.Count(data, []byte(`msg="token validated"`))
	}
	httpToken, err := devlogin.Token(http.DefaultClient, "http://"+agent.addr, "", nil)
	if err != nil {
		return err
	}
	wsToken, err := devlogin.Token(http.DefaultClient, "http://"+agent.addr, "", nil)
	if err != nil {
		return err
	}
	// HTTP: every request on a connection of its own.
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"whoami"}`)
	// Connect first, so that the burst is the authentication, not the dials.
	conns := make([]net.Conn, b.conns)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", agent.addr); err != nil {
			return err
		}
	}
	before, cpu0, t0 := count(), agent.cpu(), time.Now()
	var wg sync.WaitGroup
	var ok atomic.Int64
	start := make(chan struct{})
	for _, c := range conns {
		wg.Go(func() {
			defer c.Close()
			<-start
			req, _ := http.NewRequest(http.MethodPost, "http://"+agent.addr+"/mcp", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+httpToken)
			if req.Write(c) != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), req)
			if err == nil && resp.StatusCode == http.StatusOK {
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	wall, cpu := time.Since(t0), agent.cpu()-cpu0
	fmt.Printf("%-34s %d of %d accepted, %d signature verifications (reference: 1), wall %s, serve CPU %s\n",
		"HTTP POST /mcp", ok.Load(), b.conns, count()-before, wall.Round(time.Millisecond), cpu)

	// WebSocket: connections open and initialized, then authenticate at once.
	ws := make([]*websocket.Conn, b.conns)
	for i := range ws {
		c, _, err := websocket.Dial(context.Background(), "ws://"+agent.addr+"/", nil)
		if err != nil {
			return err
		}
		ws[i] = c
		w := &wsClient{c: c}
		if err := w.call(context.Background(), "initialize", `{}`); err != nil {
			return err
		}
	}
	before, cpu0, t0 = count(), agent.cpu(), time.Now()
	ok.Store(0)
	start = make(chan struct{})
	for _, c := range ws {
		wg.Go(func() {
			<-start
			w := &wsClient{c: c, id: 1}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if w.call(ctx, "authenticate", `{"schemeId":"dev","token":"`+wsToken+`"}`) == nil {
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	wall, cpu = time.Since(t0), agent.cpu()-cpu0
	for _, c := range ws {
		c.CloseNow()
	}
	fmt.Printf("%-34s %d of %d accepted, %d signature verifications (reference: 1), wall %s, serve CPU %s\n",
		"WebSocket authenticate", ok.Load(), b.conns, count()-before, wall.Round(time.Millisecond), cpu)
	return nil
}
