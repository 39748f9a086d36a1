// Command proxylat measures the latency agentauth proxy adds to a
// tools/call (issue: agentauth proxy): the same MCP session work, whoami
// on agentauth serve's /mcp over loopback, sent by a direct HTTP client
// (net/http, keep-alive, the bearer token and session id set by hand) and
// through `agentauth proxy` (one JSON-RPC line written to its stdin, one
// read from its stdout), in interleaved rounds of CALLS calls each
// (direct, proxy, direct, …). It prints p50 and p99 per client and round,
// then the medians over rounds and the p50 the proxy adds. It never
// asserts a time.
//
// Usage: proxylat -agentauth BIN [-calls N] [-rounds R]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/benchstat"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-browse" {
		browse(os.Args[2])
		return
	}
	bin := flag.String("agentauth", "", "the agentauth binary")
	calls := flag.Int("calls", 500, "tools/call per client per round")
	rounds := flag.Int("rounds", 5, "interleaved rounds")
	flag.Parse()
	if err := run(*bin, *calls, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "proxylat:", err)
		os.Exit(1)
	}
}

// browse is the $BROWSER of the login: the auto-approving issuer
// redirects to the loopback callback at once.
func browse(u string) {
	resp, err := http.Get(u)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	resp.Body.Close()
}

func run(bin string, calls, rounds int) error {
	dir, err := os.MkdirTemp("", "proxylat")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+dir, "AGENTAUTH_CONFIG_DIR="+filepath.Join(dir, "config"),
		"AGENTAUTH_STORE=file", "NO_COLOR=1", "BROWSER="+self+" -browse")
	addrFile := filepath.Join(dir, "addr")
	srv := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--auto-approve",
		"--ephemeral", "--log-file", filepath.Join(dir, "serve.log"))
	srv.Env = env
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }()
	addr, err := waitAddr(addrFile)
	if err != nil {
		return err
	}
	target := "http://" + addr + "/mcp"
	for _, args := range [][]string{{"login", target}} {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Stderr = env, io.Discard
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("agentauth %s: %w", strings.Join(args, " "), err)
		}
	}
	tok := exec.Command(bin, "token", target)
	tok.Env = env
	out, err := tok.Output()
	if err != nil {
		return fmt.Errorf("agentauth token: %w", err)
	}
	direct, err := newDirect(target, strings.TrimSpace(string(out)))
	if err != nil {
		return err
	}
	proxy, err := newProxy(bin, env, target)
	if err != nil {
		return err
	}
	defer proxy.close()

	var d50, d99, p50, p99 []time.Duration
	for r := 1; r <= rounds; r++ {
		dl, err := measure(calls, direct.call)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		pl, err := measure(calls, proxy.call)
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		d50, d99 = append(d50, pct(dl, 50)), append(d99, pct(dl, 99))
		p50, p99 = append(p50, pct(pl, 50)), append(p99, pct(pl, 99))
		fmt.Printf("round %d: direct p50 %v p99 %v | proxy p50 %v p99 %v\n", r, d50[r-1], d99[r-1], p50[r-1], p99[r-1])
	}
	md50, mp50 := median(d50), median(p50)
	fmt.Printf("median of %d rounds x %d tools/call: direct p50 %v p99 %v | proxy p50 %v p99 %v | proxy adds p50 %v\n",
		rounds, calls, md50, median(d99), mp50, median(p99), mp50-md50)
	return nil
}

// measure times n calls of f.
func measure(n int, f func(int) error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := f(i); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func pct(d []time.Duration, p int) time.Duration {
	return benchstat.Percentile(d, p).Round(time.Microsecond)
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

// direct is an HTTP client of serve's /mcp holding a 2025-11-25 session.
type direct struct {
	target, token, session string
	hc                     *http.Client
}

func newDirect(target, token string) (*direct, error) {
	d := &direct{target: target, token: token, hc: &http.Client{}}
	resp, err := d.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proxylat","version":"1"}}}`)
	if err != nil {
		return nil, err
	}
	d.session = resp.Header.Get("Mcp-Session-Id")
	if _, err := d.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *direct) post(body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, d.target, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+d.token)
	if d.session != "" {
		req.Header.Set("Mcp-Session-Id", d.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
	}
	if resp.StatusCode == http.StatusOK && !bytes.Contains(data, []byte(`"result"`)) {
		return nil, fmt.Errorf("no result: %s", data)
	}
	return resp, nil
}

func (d *direct) call(i int) error {
	_, err := d.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, i+1))
	return err
}

// proxied is agentauth proxy with its stdin and stdout.
type proxied struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newProxy(bin string, env []string, target string) (*proxied, error) {
	cmd := exec.Command(bin, "proxy", target)
	cmd.Env, cmd.Stderr = env, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proxied{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if err := p.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proxylat","version":"1"}}}`); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *proxied) roundTrip(line string) error {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		return err
	}
	resp, err := p.out.ReadBytes('\n')
	if err != nil {
		return err
	}
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(resp, &m) != nil || m.Result == nil {
		return fmt.Errorf("no result: %s", resp)
	}
	return nil
}

func (p *proxied) call(i int) error {
	return p.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, i+1))
}

func (p *proxied) close() {
	p.in.Close()
	_ = p.cmd.Wait()
}

func waitAddr(file string) (string, error) {
	for i := 0; i < 300; i++ {
		if b, err := os.ReadFile(file); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b)), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("serve wrote no address to %s", file)
}
