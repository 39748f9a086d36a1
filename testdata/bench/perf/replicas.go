package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/internal/benchstat"
	"github.com/agentauth/agentauth/state/statetest"
)

// replicas measures serve replicas sharing one PostgreSQL (a throwaway
// server of Debian's postgresql package): first, with two replicas, the
// window between a revocation's answer on replica A and its enforcement
// on replica B (b.revocations tokens, each used at B, revoked at A, then
// used at B in a closed loop until B refuses it); then, in b.rounds
// rounds, for 1 to b.maxReplicas replicas in turn: client_credentials
// grants from b.conns clients spread over the replicas for b.duration
// (grants/s, CPU per grant of the replicas, of PostgreSQL and of the load
// generator, RSS and PostgreSQL connections per replica), and
// b.revokeCount revocations through LISTEN/NOTIFY (revocations.go). It
// ends with the capacity model's predictions for 2 replicas and more,
// made from the costs measured with one, against the rates measured.
// With b.pin, the processes are laid out on the CPUs (pin.go).
func (b *bench) replicas() error {
	srv, err := statetest.StartServer()
	if err != nil {
		fmt.Printf("replicas: skipped: %v\n", err)
		return nil
	}
	defer srv.Stop()
	u, _ := url.Parse(srv.URL)
	pgDir := u.Query().Get("host")
	pgCPU := postgresCPU(pgDir)
	var cpus []string
	if b.pin {
		if cpus = allowedCPUs(); len(cpus) < 2 {
			return fmt.Errorf("-pin needs 2 CPUs or more; this program may use %d", len(cpus))
		}
		fmt.Printf("layout: replica k on CPU k mod %d (of %s); PostgreSQL and the load generator on the CPUs no measured replica has, else on all\n",
			len(cpus), strings.Join(cpus, ","))
	}
	// layout pins PostgreSQL and this program for n replicas measured.
	layout := func(n int) error {
		if cpus == nil {
			return nil
		}
		if n < len(cpus) {
			return pinPostgres(pgDir, cpus[n:])
		}
		return pinPostgres(pgDir, cpus)
	}
	// Every replica publishes the embedded issuer at one origin, a
	// balancer's: here net/http's reverse proxy to the first replica,
	// where the replicas fetch the issuer's metadata and keys. The
	// measured requests go to each replica's own address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var first atomic.Pointer[url.URL]
	lb := &http.Server{Handler: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		if u := first.Load(); u != nil {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		}
	}}}
	go lb.Serve(ln)
	defer lb.Close()
	args := []string{"--database", srv.URL, "--resource", "http://" + ln.Addr().String() + "/mcp"}
	var reps []*proc
	defer func() {
		for _, p := range reps {
			p.stop()
		}
	}()
	for k := range b.maxReplicas {
		b.wrap = nil
		if cpus != nil {
			b.wrap = []string{"taskset", "-c", cpus[k%len(cpus)]}
		}
		p, err := b.start(fmt.Sprintf("replica%d", k+1), args...)
		b.wrap = nil
		if err != nil {
			return err
		}
		reps = append(reps, p)
		if k == 0 {
			first.Store(&url.URL{Scheme: "http", Host: p.addr})
		}
		if err := waitReady(p); err != nil {
			return err
		}
	}
	if b.revocations > 0 && len(reps) >= 2 {
		if err := layout(2); err != nil {
			return err
		}
		if err := revocationWindow(reps[0], reps[1], b.revocations); err != nil {
			return err
		}
	}
	// One set of clients for every run: a replica refuses more than 100
	// registrations from one address in 10 minutes. A client registered
	// at one replica is known to all (its record is in PostgreSQL).
	clients := make([]ccClient, b.conns)
	for k := range clients {
		if clients[k], err = registerCC(reps[0].addr); err != nil {
			return err
		}
	}
	grants, revs, err := b.replicaRounds(reps, clients, cpus, layout, pgCPU)
	if err != nil {
		return err
	}
	model(grants, revs, cpus)
	return nil
}

// replicaRounds runs b.rounds rounds, each of 1 to len(reps) replicas
// in turn: grants, then revocations all at the first replica and spread
// over them; with cpus (pinned), one replica also with every process on
// every CPU. layout pins PostgreSQL and this program for n replicas.
func (b *bench) replicaRounds(reps []*proc, clients []ccClient, cpus []string, layout func(n int) error, pgCPU func() time.Duration) ([][]grantResult, [][]revResult, error) {
	grants := make([][]grantResult, len(reps))
	revs := make([][]revResult, len(reps))
	for round := range max(b.rounds, 1) {
		fmt.Printf("round %d\n", round+1)
		for n := 1; n <= len(reps); n++ {
			if err := layout(n); err != nil {
				return nil, nil, err
			}
			g, err := replicaGrants(reps[:n], clients, b.duration, pgCPU)
			if err != nil {
				return nil, nil, err
			}
			g.shared = cpus == nil || n >= len(cpus)
			grants[n-1] = append(grants[n-1], g)
			for _, spread := range []bool{false, true} {
				if (n == 1 && spread) || b.revokeCount <= 0 {
					continue
				}
				r, err := revocationRate(reps[:n], clients, b.revokeCount, spread, pgCPU)
				if err != nil {
					return nil, nil, err
				}
				r.shared = g.shared
				revs[n-1] = append(revs[n-1], r)
			}
			if n != 1 || g.shared {
				continue
			}
			// One replica again, every process on every CPU: the costs
			// of the layout that 2 replicas or more share CPUs in.
			fmt.Printf("1 replica, every process on every CPU:\n")
			pid := reps[0].cmd.Process.Pid
			if err := errors.Join(layout(len(cpus)), pinPID(pid, cpus)); err != nil {
				return nil, nil, err
			}
			if g, err = replicaGrants(reps[:1], clients, b.duration, pgCPU); err != nil {
				return nil, nil, err
			}
			g.shared = true
			grants[0] = append(grants[0], g)
			if b.revokeCount > 0 {
				r, err := revocationRate(reps[:1], clients, b.revokeCount, false, pgCPU)
				if err != nil {
					return nil, nil, err
				}
				r.shared = true
				revs[0] = append(revs[0], r)
			}
			if err := pinPID(pid, cpus[:1]); err != nil {
				return nil, nil, err
			}
		}
	}
	return grants, revs, nil
}

// waitReady waits for p's /readyz to answer 200 (its first read of the
// revocation log done), at most 30 seconds.
func waitReady(p *proc) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + p.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("%s is not ready (/readyz)", p.name)
}

// ccClient is a confidential client registered for client_credentials.
type ccClient struct{ id, secret string }

func registerCC(addr string) (ccClient, error) {
	resp, err := http.Post("http://"+addr+"/register", "application/json",
		strings.NewReader(`{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_basic","client_name":"bench"}`))
	if err != nil {
		return ccClient{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var reg struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &reg) != nil {
		return ccClient{}, fmt.Errorf("register: %s: %s", resp.Status, body)
	}
	return ccClient{reg.ID, reg.Secret}, nil
}

// ccToken runs one client_credentials grant at addr.
func ccToken(hc *http.Client, addr string, c ccClient) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/token", strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil {
		return "", fmt.Errorf("token: %s: %s", resp.Status, body)
	}
	return tok.AccessToken, nil
}

// ping posts an MCP ping with token to addr and returns the status.
func ping(hc *http.Client, addr, token string) (int, error) {
	st, body, err := pingBody(hc, addr, token)
	if st == http.StatusServiceUnavailable && os.Getenv("PERF_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "503: %s\n", body)
	}
	return st, err
}

func pingBody(hc *http.Client, addr, token string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, body, nil
}

// revocationWindow revokes count tokens at a, each accepted by b just
// before, and uses each at b in a closed loop from a's answer on until b
// refuses it. It prints, over the revocations, the time from a's answer
// to b's first refusal (when that request was sent), how many requests b
// still accepted after a's answer, and the latest of those.
func revocationWindow(a, b *proc, count int) error {
	c, err := registerCC(a.addr)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var refused, lastAccepted []time.Duration
	accepted := 0
	late := 0
	for range count {
		token, err := ccToken(hc, a.addr, c)
		if err != nil {
			return err
		}
		if st, err := ping(hc, b.addr, token); err != nil || st != http.StatusOK {
			return fmt.Errorf("replica B before the revocation: %d %v", st, err)
		}
		if err := revoke(hc, a.addr, c, token); err != nil {
			return err
		}
		answered := time.Now()
		n := 0
		for deadline := answered.Add(15 * time.Second); ; {
			sent := time.Now()
			st, err := ping(hc, b.addr, token)
			if err != nil {
				return err
			}
			if st == http.StatusUnauthorized {
				refused = append(refused, sent.Sub(answered))
				break
			}
			if st != http.StatusOK || sent.After(deadline) {
				return fmt.Errorf("replica B after the revocation: %d", st)
			}
			n++
			if n == 1 {
				late++
			}
			if len(lastAccepted) < late {
				lastAccepted = append(lastAccepted, 0)
			}
			lastAccepted[late-1] = sent.Sub(answered)
		}
		accepted += n
	}
	slices.Sort(refused)
	slices.Sort(lastAccepted)
	fmt.Printf("revocation at replica A, enforcement at replica B (%d revocations): first refusal after A's answer p50 %.2f ms  p99 %.2f ms  max %.2f ms\n",
		count, benchstat.Millis(benchstat.Percentile(refused, 50)), benchstat.Millis(benchstat.Percentile(refused, 99)), benchstat.Millis(refused[len(refused)-1]))
	if late > 0 {
		fmt.Printf("  B still accepted the token after A's answer in %d of %d revocations (%d requests in all), the latest %.2f ms after (p50 %.2f ms)\n",
			late, count, accepted, benchstat.Millis(lastAccepted[len(lastAccepted)-1]), benchstat.Millis(benchstat.Percentile(lastAccepted, 50)))
	} else {
		fmt.Printf("  B accepted no revoked token after A's answer\n")
	}
	return nil
}

// grantResult is one run of client_credentials grants on n replicas:
// the rate, and the CPU per grant (µs) of the replicas, PostgreSQL and the
// load generator.
type grantResult struct {
	n                          int
	shared                     bool
	rate, serve, pg, generator float64
	use                        usage
}

// usage is what the CPUs did during a run: the machine's CPUs, and the
// CPUs (seconds per second) the replicas, PostgreSQL and the load
// generator used.
type usage struct {
	m              machine
	rep, pg, loads float64
}

// replicaGrants runs client_credentials grants from the clients, each
// bound to one replica in turn, for d, and prints the rate, the CPU per
// grant of the replicas, of PostgreSQL and of the load generator, and per
// replica its RSS and PostgreSQL connections.
func replicaGrants(reps []*proc, clients []ccClient, d time.Duration, pgCPU func() time.Duration) (grantResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: len(clients)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	run := func(d time.Duration) (int64, error) {
		var n atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		deadline := time.Now().Add(d)
		for k, c := range clients {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					if _, err := ccToken(hc, reps[k%len(reps)].addr, c); err != nil {
						mu.Lock()
						first = cmpErr(first, err)
						mu.Unlock()
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load(), first
	}
	if _, err := run(time.Second); err != nil { // warm up
		return grantResult{}, err
	}
	cpu0 := make([]time.Duration, len(reps))
	for k, p := range reps {
		cpu0[k] = p.cpu()
	}
	pg0, self0, mach0 := pgCPU(), benchstat.ProcessCPU(os.Getpid()), cpuTimes()
	n, err := run(d)
	if err != nil {
		return grantResult{}, err
	}
	var serveCPU time.Duration
	var rss []string
	for k, p := range reps {
		serveCPU += p.cpu() - cpu0[k]
		rss = append(rss, fmt.Sprintf("%.1f", mib(p.rss())))
	}
	pg, self := pgCPU()-pg0, benchstat.ProcessCPU(os.Getpid())-self0
	per := func(t time.Duration) float64 { return float64(t.Microseconds()) / float64(n) }
	r := grantResult{n: len(reps), rate: float64(n) / d.Seconds(), serve: per(serveCPU), pg: per(pg), generator: per(self),
		use: usage{m: since(mach0, d), rep: serveCPU.Seconds() / d.Seconds(), pg: pg.Seconds() / d.Seconds(), loads: self.Seconds() / d.Seconds()}}
	fmt.Printf("%d replica(s): %7.0f grants/s   CPU µs per grant: replicas %.0f, PostgreSQL %.0f, load generator %.0f   RSS MiB per replica %s   PostgreSQL backends %d\n",
		r.n, r.rate, r.serve, r.pg, r.generator, strings.Join(rss, " "), postgresBackends())
	return r, nil
}

// postgresBackends counts the client backends of user agentauth
// (statetest's) on the machine: processes named "postgres: agentauth DB
// …".
func postgresBackends() int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, path := range procs {
		cmd, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(cmd, []byte("postgres: agentauth ")) {
			continue
		}
		n++
	}
	return n
}
