package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/internal/benchstat"
	"github.com/agentauth/agentauth/internal/devlogin"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state/statetest"
)

// storeServer is one authorization server under a store benchmark.
type storeServer struct {
	name string
	p    *proc
	// tokenURL is its token endpoint; clientID the public client that
	// refreshes there.
	tokenURL, clientID string
	stop               func()
	// dbCPU, for PostgreSQL, is the CPU time its server's processes used
	// so far.
	dbCPU func() time.Duration
}

// cpu is the CPU time of serve and of its database server so far.
func (s *storeServer) cpu() time.Duration {
	t := s.p.cpu()
	if s.dbCPU != nil {
		t += s.dbCPU()
	}
	return t
}

// postgresCPU returns the CPU time used so far by the PostgreSQL server
// whose socket directory is dir: the postmaster (the processes it reaped
// included) and its live children, the backends.
func postgresCPU(dir string) func() time.Duration {
	return func() time.Duration {
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		var master string
		stats := map[string][]string{}
		for _, path := range procs {
			data, err := os.ReadFile(path)
			if err != nil || !bytes.Contains(data, []byte("(postgres)")) {
				continue
			}
			pid := filepath.Base(filepath.Dir(path))
			stats[pid] = strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
			if cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "cmdline")); bytes.Contains(cmd, []byte("-k\x00"+dir+"\x00")) || bytes.Contains(cmd, []byte("-k "+dir+" ")) {
				master = pid
			}
		}
		var ticks int64
		add := func(f []string, fields ...int) {
			for _, k := range fields {
				n, _ := strconv.ParseInt(f[k], 10, 64)
				ticks += n
			}
		}
		for pid, f := range stats {
			switch {
			case pid == master:
				add(f, 11, 12, 13, 14) // utime stime cutime cstime
			case master != "" && f[1] == master:
				add(f, 11, 12)
			}
		}
		return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ = 100
	}
}

// startStores starts one serve per state store of b.stores: memory
// (--ephemeral), SQLite (--data-dir) and PostgreSQL (--database, on a
// throwaway server of Debian's postgresql package; skipped without it).
func (b *bench) startStores() ([]*storeServer, error) {
	var out []*storeServer
	for _, name := range b.stores {
		var args []string
		var dbCPU func() time.Duration
		stop := func() {}
		switch name {
		case "memory":
		case "sqlite":
			args = []string{"--data-dir", filepath.Join(b.dir, "sqlite")}
		case "postgres":
			srv, err := statetest.StartServer()
			if err != nil {
				fmt.Printf("postgres: skipped: %v\n", err)
				continue
			}
			args, stop = []string{"--database", srv.URL}, srv.Stop
			if u, err := url.Parse(srv.URL); err == nil {
				dbCPU = postgresCPU(u.Query().Get("host"))
			}
		default:
			return out, fmt.Errorf("unknown store %q: memory, sqlite or postgres", name)
		}
		p, err := b.start(name, append(args, b.serveArgs...)...)
		if err != nil {
			stop()
			return out, err
		}
		out = append(out, &storeServer{name: name, p: p, tokenURL: "http://" + p.addr + "/token", clientID: issuer.CLIClientID,
			stop: func() { p.stop(); stop() }, dbCPU: dbCPU})
	}
	return out, nil
}

// startOIDCProvider starts oidc-provider (testdata/bench/oidc/server.mjs)
// and returns it with its chains refresh tokens.
func (b *bench) startOIDCProvider(chains int) (*storeServer, []string, error) {
	addrFile, tokensFile := filepath.Join(b.dir, "oidc.addr"), filepath.Join(b.dir, "oidc.tokens")
	cmd := exec.Command("node", filepath.Join(b.oidc, "server.mjs"), addrFile, tokensFile, fmt.Sprint(chains))
	logf, err := os.Create(filepath.Join(b.dir, "oidc.log"))
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("cannot run node: %w", err)
	}
	p := &proc{name: "oidc-provider", cmd: cmd}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && p.addr == ""; time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(addrFile); err == nil {
			p.addr = strings.TrimSpace(string(data))
		}
	}
	data, err := os.ReadFile(tokensFile)
	if p.addr == "" || err != nil {
		p.stop()
		return nil, nil, fmt.Errorf("oidc-provider did not start (see its log)")
	}
	return &storeServer{name: "oidc-provider", p: p, tokenURL: "http://" + p.addr + "/token", clientID: "bench", stop: p.stop},
		strings.Fields(string(data)), nil
}

// postToken posts form to the token endpoint and returns the refresh
// token of a 200 answer.
func postToken(c *http.Client, tokenURL string, form url.Values) (string, error) {
	resp, err := c.PostForm(tokenURL, form)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		RefreshToken string `json:"refresh_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	return tok.RefreshToken, nil
}

// refresh runs b.conns refresh chains (default 16 in refresh.sh) on each
// store's serve, and on oidc-provider, in b.rounds interleaved rounds of
// b.duration, each chain rotating its refresh token as fast as it can;
// serve keeps every access token alive (1h default lifetime), so that a
// cost that grows with the tokens issued or revoked shows as a falling
// rate. It prints the rate of every round, the last round against the
// first, and each against oidc-provider over the whole run.
//
// A round runs in refreshSlices slices, every server's in turn, so that a
// passing slowdown of the machine (a few seconds of other work) takes its
// share of every server's round rather than all of one server's.
func (b *bench) refresh() error {
	servers, err := b.startStores()
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	if err != nil {
		return err
	}
	chains := map[*storeServer][]string{}
	for _, s := range servers {
		for range b.conns {
			_, rt, err := devlogin.Login(http.DefaultClient, "http://"+s.p.addr, "", nil)
			if err != nil || rt == "" {
				return fmt.Errorf("%s: login: %v", s.name, err)
			}
			chains[s] = append(chains[s], rt)
		}
	}
	if b.oidc != "" {
		ref, tokens, err := b.startOIDCProvider(b.conns)
		if err != nil {
			return err
		}
		servers = append(servers, ref)
		chains[ref] = tokens
	}
	fmt.Printf("refresh: %d chains, %d interleaved rounds of %s per server (each in %d slices, the servers in turn)\n", b.conns, b.rounds, b.duration, refreshSlices)
	rates := map[*storeServer][]float64{}
	cpu := map[*storeServer][]float64{}
	slice := b.duration / refreshSlices
	roundLength := slice * refreshSlices // b.duration, less what the slices leave over
	for round := 0; round < b.rounds; round++ {
		count := map[*storeServer]int{}
		used := map[*storeServer]time.Duration{}
		for range refreshSlices {
			for _, s := range servers {
				cpu0 := s.p.cpu()
				n, err := refreshRound(s, chains[s], slice)
				if err != nil {
					return fmt.Errorf("%s, round %d: %v", s.name, round+1, err)
				}
				count[s] += n
				used[s] += s.p.cpu() - cpu0
			}
		}
		for _, s := range servers {
			rates[s] = append(rates[s], float64(count[s])/roundLength.Seconds())
			cpu[s] = append(cpu[s], float64(used[s].Microseconds())/float64(max(count[s], 1)))
		}
	}
	var ref *storeServer
	if b.oidc != "" {
		ref = servers[len(servers)-1]
	}
	for _, s := range servers {
		r := rates[s]
		var total float64
		for _, x := range r {
			total += x * roundLength.Seconds()
		}
		fmt.Printf("%-14s refreshes/s by round:", s.name)
		for _, x := range r {
			fmt.Printf(" %6.0f", x)
		}
		fmt.Printf("   last/first %.2f   total %.0f   CPU µs/refresh first %.0f last %.0f", r[len(r)-1]/r[0], total, cpu[s][0], cpu[s][len(cpu[s])-1])
		if ref != nil && s != ref {
			pairs := make([]float64, len(r))
			for k := range r {
				pairs[k] = r[k] / rates[ref][k]
			}
			fmt.Printf("   vs oidc-provider %.2f (round by round %.2f–%.2f)", sum(r)/sum(rates[ref]), slices.Min(pairs), slices.Max(pairs))
		}
		fmt.Println()
	}
	return nil
}

// refreshSlices is how many slices a round of refresh runs in.
const refreshSlices = 10

func sum(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t
}

// refreshRound rotates each chain's refresh token for d, keeping the new
// one, and returns the count of refreshes.
func refreshRound(s *storeServer, chain []string, d time.Duration) (int, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: len(chain)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	deadline := time.Now().Add(d)
	var n atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for k := range chain {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				rt, err := postToken(c, s.tokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {chain[k]}, "client_id": {s.clientID}})
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				chain[k] = rt
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return int(n.Load()), first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// exchange runs b.conns clients (default 16 in exchange.sh) each doing
// auto-approved code grants (GET /authorize, POST /token) on each store's
// serve for b.rounds interleaved rounds of b.duration, and prints the
// median rate of code exchanges and the p50 and p99 latency of POST /token,
// each store against memory.
func (b *bench) exchange() error {
	servers, err := b.startStores()
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	if err != nil {
		return err
	}
	fmt.Printf("code exchange: %d clients in parallel, %d interleaved rounds of %s per store\n", b.conns, b.rounds, b.duration)
	type result struct{ rate, p50, p99, cpu []float64 }
	res := map[*storeServer]*result{}
	for round := 0; round < b.rounds; round++ {
		for _, s := range servers {
			cpu0 := s.cpu()
			n, lat, err := exchangeRound(s, b.conns, b.duration)
			if err != nil {
				return fmt.Errorf("%s, round %d: %v", s.name, round+1, err)
			}
			r := res[s]
			if r == nil {
				r = &result{}
				res[s] = r
			}
			r.rate = append(r.rate, float64(n)/b.duration.Seconds())
			r.p50 = append(r.p50, benchstat.Millis(benchstat.Percentile(lat, 50)))
			r.p99 = append(r.p99, benchstat.Millis(benchstat.Percentile(lat, 99)))
			r.cpu = append(r.cpu, float64((s.cpu()-cpu0).Microseconds())/float64(max(n, 1)))
		}
	}
	base := res[servers[0]]
	for _, s := range servers {
		r := res[s]
		pairs := make([]float64, len(r.rate))
		for k := range pairs {
			pairs[k] = r.rate[k] / base.rate[k]
		}
		fmt.Printf("%-9s %7.0f exchanges/s (median)   vs %s %.2f (round by round %.2f–%.2f)   POST /token p50 %.1f ms  p99 %.1f ms (by round %s)\n",
			s.name, benchstat.Median(r.rate), servers[0].name, benchstat.Median(r.rate)/benchstat.Median(base.rate), slices.Min(pairs), slices.Max(pairs), benchstat.Median(r.p50), benchstat.Median(r.p99), join(r.p99, "%.0f"))
		fmt.Printf("%-9s CPU µs per exchange (serve%s), by round: %s   median %.0f   vs %s %.2f\n",
			"", map[bool]string{true: " + PostgreSQL"}[s.dbCPU != nil], join(r.cpu, "%.0f"), benchstat.Median(r.cpu), servers[0].name, benchstat.Median(r.cpu)/benchstat.Median(base.cpu))
	}
	return nil
}

// exchangeRound runs conns clients of auto-approved code grants for d.
func exchangeRound(s *storeServer, conns int, d time.Duration) (int, []time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(d)
	lats := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for k := range conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				form, err := devlogin.Code(c, "http://"+s.p.addr)
				if err == nil {
					t0 := time.Now()
					_, err = postToken(c, s.tokenURL, form)
					lats[k] = append(lats[k], time.Since(t0))
				}
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		return 0, []time.Duration{0}, first
	}
	return len(all), all, first
}

// join formats xs with format, separated by spaces.
func join(xs []float64, format string) string {
	out := make([]string, len(xs))
	for k, x := range xs {
		out[k] = fmt.Sprintf(format, x)
	}
	return strings.Join(out, " ")
}
