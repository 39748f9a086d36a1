// Command flood floods a local `agentauth serve` for a bounded time per
// phase and reports its resident memory (VmRSS from /proc/PID/status, so
// Linux only) before and after each phase and the maximum seen. It exits 1
// when serve grew by more than -bound over its RSS after start-up, 2 on
// a setup error. Run by testdata/bench/flood.sh; see there.
//
// It starts two serve processes on 127.0.0.1:0 (it never talks to
// anything but loopback): one with --auto-approve, flooded with
// authorization requests (each one a code), registrations and, over
// WebSocket, createSession; and one without, whose authorization requests
// each leave a pending consent page.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/internal/devlogin"
)

func main() {
	bin := flag.String("agentauth", "agentauth", "the agentauth binary")
	phaseTime := flag.Duration("duration", 10*time.Second, "how long each phase floods")
	workers := flag.Int("workers", 4, "concurrent requests (or WebSocket connections) per phase")
	boundMiB := flag.Int("bound", 64, "the largest growth of serve's RSS allowed, in MiB")
	flag.Parse()
	if err := run(*bin, *phaseTime, *workers, int64(*boundMiB)<<20); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		if _, ok := err.(boundError); ok {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

type boundError struct{ error }

// server is one serve process.
type server struct {
	name string
	cmd  *exec.Cmd
	addr string
	base int64 // RSS after start-up
	max  int64
}

func startServer(bin, dir, name string, args ...string) (*server, error) {
	addrFile := filepath.Join(dir, name+".addr")
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-file", filepath.Join(dir, name+".log")}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTAUTH_CONFIG_DIR="+filepath.Join(dir, "config"), "AGENTAUTH_STORE=file")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			s.addr = strings.TrimSpace(string(b))
			break
		}
	}
	if s.addr == "" {
		s.stop()
		return nil, fmt.Errorf("%s: serve wrote no address", name)
	}
	if !strings.HasPrefix(s.addr, "127.0.0.1:") {
		s.stop()
		return nil, fmt.Errorf("%s: serve listens on %s, not loopback", name, s.addr)
	}
	// Let start-up settle, then take the baseline.
	time.Sleep(500 * time.Millisecond)
	var err error
	if s.base, err = s.rss(); err != nil {
		s.stop()
		return nil, err
	}
	s.max = s.base
	return s, nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// rss reads VmRSS from /proc/PID/status, in bytes.
func (s *server) rss() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("cannot read serve's RSS (Linux /proc only): %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// phase floods s with do from workers goroutines for d, sampling RSS
// every 100 ms, and prints the figures. do returns a short outcome label
// (an HTTP status, "ok", …) that is counted.
func phase(s *server, name string, d time.Duration, workers int, do func(ctx context.Context, worker int) string) error {
	before, err := s.rss()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	counts := map[string]int{}
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				out := do(ctx, w)
				if ctx.Err() != nil && out == "error" {
					return // cut by the deadline
				}
				total.Add(1)
				mu.Lock()
				counts[out]++
				mu.Unlock()
			}
		})
	}
	peak := before
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
sample:
	for {
		select {
		case <-tick.C:
			if r, err := s.rss(); err == nil && r > peak {
				peak = r
			}
		case <-done:
			break sample
		}
	}
	after, err := s.rss()
	if err != nil {
		return err
	}
	peak = max(peak, after)
	s.max = max(s.max, peak)
	var outs []string
	for k, v := range counts {
		outs = append(outs, fmt.Sprintf("%s×%d", k, v))
	}
	fmt.Printf("%-8s %-22s %7d requests (%6.0f/s) [%s]  RSS before %s, after %s, peak %s (+%s over start-up)\n",
		s.name, name, total.Load(), float64(total.Load())/d.Seconds(), strings.Join(outs, " "),
		mib(before), mib(after), mib(peak), mib(peak-s.base))
	return nil
}

func run(bin string, d time.Duration, workers int, bound int64) error {
	dir, err := os.MkdirTemp("", "agentauth-flood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	auto, err := startServer(bin, dir, "auto", "--auto-approve")
	if err != nil {
		return err
	}
	defer auto.stop()
	consent, err := startServer(bin, dir, "consent")
	if err != nil {
		return err
	}
	defer consent.stop()
	fmt.Printf("serve (--auto-approve) at %s: RSS %s after start-up\n", auto.addr, mib(auto.base))
	fmt.Printf("serve (consent pages) at %s: RSS %s after start-up\n", consent.addr, mib(consent.base))
	fmt.Printf("each phase floods for %s with %d workers; bound: +%s over start-up\n", d, workers, mib(bound))

	hc := &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{MaxIdleConnsPerHost: workers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(ctx context.Context, u string) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return "error"
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if loc, _ := url.Parse(resp.Header.Get("Location")); loc != nil && loc.Query().Has("error") {
			return fmt.Sprintf("%d(%s)", resp.StatusCode, loc.Query().Get("error"))
		}
		return strconv.Itoa(resp.StatusCode)
	}
	post := func(ctx context.Context, u, ct string, body []byte) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := hc.Do(req)
		if err != nil {
			return "error"
		}
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if e.Error != "" {
			return fmt.Sprintf("%d(%s)", resp.StatusCode, e.Error)
		}
		return strconv.Itoa(resp.StatusCode)
	}
	// authorizeURL is an authorization request of agentauth-cli with a
	// state of stateBytes, and, with big, the longest scope and resource
	// the issuer keeps (1024 and 2048 bytes).
	authorizeURL := func(addr string, stateBytes int, big bool) string {
		q := url.Values{
			"response_type": {"code"}, "client_id": {"agentauth-cli"}, "redirect_uri": {"http://127.0.0.1:1/callback"},
			"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"},
			"state": {strings.Repeat("s", stateBytes)},
		}
		if big {
			q.Set("scope", strings.Repeat("a", 1024))
			q.Set("resource", "http://"+addr+"/"+strings.Repeat("r", 2048-len("http://"+addr+"/")))
		}
		return "http://" + addr + "/authorize?" + q.Encode()
	}
	largeState := authorizeURL(auto.addr, 60<<10, false)
	register := func(nameLen, uris, uriLen int) []byte {
		var rs []string
		for k := range uris {
			p := fmt.Sprintf("http://127.0.0.1/%d/", k)
			rs = append(rs, p+strings.Repeat("u", uriLen-len(p)))
		}
		b, _ := json.Marshal(map[string]any{"client_name": strings.Repeat("n", nameLen), "redirect_uris": rs, "token_endpoint_auth_method": "none",
			"logo_uri": "http://127.0.0.1/logo.png"})
		return b
	}
	bigReg := register(200, 20, 3000) // about 60 KiB
	maxReg := register(200, 20, 380)  // just under 8 KiB
	fmt.Printf("registration documents: %d and %d bytes\n", len(bigReg), len(maxReg))

	phases := []struct {
		s    *server
		name string
		do   func(ctx context.Context, w int) string
	}{
		{consent, "GET /authorize 60KB", func(ctx context.Context, _ int) string { return get(ctx, authorizeURL(consent.addr, 60<<10, false)) }},
		{consent, "GET /authorize max", func(ctx context.Context, _ int) string { return get(ctx, authorizeURL(consent.addr, 1024, true)) }},
		{auto, "GET /authorize 60KB", func(ctx context.Context, _ int) string { return get(ctx, largeState) }},
		{auto, "GET /authorize max", func(ctx context.Context, _ int) string { return get(ctx, authorizeURL(auto.addr, 1024, true)) }},
		{auto, "POST /register 60KB", func(ctx context.Context, _ int) string {
			return post(ctx, "http://"+auto.addr+"/register", "application/json", bigReg)
		}},
		{auto, "POST /register max", func(ctx context.Context, _ int) string {
			return post(ctx, "http://"+auto.addr+"/register", "application/json", maxReg)
		}},
	}
	var exceeded []string
	check := func(s *server, name string) {
		if s.max-s.base > bound {
			exceeded = append(exceeded, fmt.Sprintf("%s after %s: +%s", s.name, name, mib(s.max-s.base)))
		}
	}
	for _, p := range phases {
		if err := phase(p.s, p.name, d, workers, p.do); err != nil {
			return err
		}
		check(p.s, p.name)
	}

	// createSession over WebSocket, one authenticated connection per
	// worker, all as the one dev user.
	token, err := devlogin.Token(hc, "http://"+auto.addr, "", nil)
	if err != nil {
		return err
	}
	conns := make([]*rpcConn, workers)
	for w := range conns {
		if conns[w], err = dialHost(auto.addr, token); err != nil {
			return err
		}
		defer conns[w].c.CloseNow()
	}
	if err := phase(auto, "createSession (ws)", d, workers, func(ctx context.Context, w int) string {
		return conns[w].call(ctx, "createSession", nil)
	}); err != nil {
		return err
	}
	check(auto, "createSession")

	for _, s := range []*server{consent, auto} {
		fmt.Printf("%-8s max RSS %s: +%s over start-up (bound +%s)\n", s.name, mib(s.max), mib(s.max-s.base), mib(bound))
	}
	if len(exceeded) > 0 {
		return boundError{fmt.Errorf("serve grew past the bound: %s", strings.Join(exceeded, "; "))}
	}
	return nil
}

// rpcConn is a JSON-RPC 2.0 connection to the agent host's WebSocket face.
type rpcConn struct {
	c  *websocket.Conn
	id int
}

func dialHost(addr, token string) (*rpcConn, error) {
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	r := &rpcConn{c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out := r.call(ctx, "initialize", map[string]any{}); out != "ok" {
		return nil, fmt.Errorf("initialize: %s", out)
	}
	if out := r.call(ctx, "authenticate", map[string]any{"schemeId": "dev", "token": token}); out != "ok" {
		return nil, fmt.Errorf("authenticate: %s", out)
	}
	return r, nil
}

// call sends a request and waits for its answer (skipping notifications):
// "ok", "error" (transport) or the JSON-RPC error code.
func (r *rpcConn) call(ctx context.Context, method string, params any) string {
	r.id++
	msg := map[string]any{"jsonrpc": "2.0", "id": r.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	if err := r.c.Write(ctx, websocket.MessageText, b); err != nil {
		return "error"
	}
	for {
		_, data, err := r.c.Read(ctx)
		if err != nil {
			return "error"
		}
		var answer struct {
			ID    *int `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &answer) != nil || answer.ID == nil || *answer.ID != r.id {
			continue
		}
		if answer.Error != nil {
			return strconv.Itoa(answer.Error.Code)
		}
		return "ok"
	}
}
