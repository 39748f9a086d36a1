package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/internal/benchstat"
)

// revResult is one run of revocations through LISTEN/NOTIFY on n
// replicas: the rate at which they were answered, the rate at which every
// replica enforced them, and the CPU per revocation (µs) of the replicas
// that answered them, of each replica that only received them, of
// PostgreSQL and of the load generator.
type revResult struct {
	n                           int
	spread, shared              bool
	issued, enforced            float64
	issuer, receiver, pg, loads float64
	use                         usage
}

// revoke revokes token at addr as client c (RFC 7009 §2.1).
func revoke(hc *http.Client, addr string, c ccClient, token string) error {
	form := url.Values{"token": {token}}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke at %s: %s", addr, resp.Status)
	}
	return nil
}

// revocationRate issues count client_credentials tokens (untimed), then
// revokes them from one worker per client in a closed loop: all at the first
// replica, or with spread each worker at a replica of its own in turn.
// The revocations are answered at the rate issued; they are enforced once
// every replica refuses every token revoked elsewhere, which it learns
// from PostgreSQL (a notification, then a read of the revocation log).
// Since revocations are numbered in commit order and a replica applies
// the log in order, a replica enforces them all once it refuses the last
// token of every worker: the run polls those until each replica refuses
// them, then checks every token at every replica (untimed; any still
// accepted is an error). It prints the rates, the CPU per revocation and
// the receiving replicas' reads of the log (from their logs).
func revocationRate(reps []*proc, clients []ccClient, count int, spread bool, pgCPU func() time.Duration) (revResult, error) {
	n, conns := len(reps), len(clients)
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	// Token j belongs to worker j mod conns, its client, and is revoked at
	// at(j).
	tokens := make([]string, count)
	at := func(j int) int {
		if spread {
			return (j % conns) % n
		}
		return 0
	}
	if err := eachWorker(conns, count, func(j int) error {
		var err error
		tokens[j], err = ccToken(hc, reps[(j%conns)%n].addr, clients[j%conns])
		return err
	}); err != nil {
		return revResult{}, err
	}
	logAt := make([]int64, n)
	cpu0 := make([]time.Duration, n)
	for k, p := range reps {
		if fi, err := os.Stat(p.log); err == nil {
			logAt[k] = fi.Size()
		}
		cpu0[k] = p.cpu()
	}
	pg0, self0, mach0 := pgCPU(), benchstat.ProcessCPU(os.Getpid()), cpuTimes()
	start := time.Now()
	if err := eachWorker(conns, count, func(j int) error {
		return revoke(hc, reps[at(j)].addr, clients[j%conns], tokens[j])
	}); err != nil {
		return revResult{}, err
	}
	answered := time.Now()
	// The last token of each worker, at each replica that did not revoke
	// it, until refused.
	last := max(count-conns, 0)
	for deadline := answered.Add(15 * time.Second); ; {
		pending := 0
		for j := last; j < count; j++ {
			for k := range reps {
				if k == at(j) {
					continue
				}
				st, err := ping(hc, reps[k].addr, tokens[j])
				if err != nil {
					return revResult{}, err
				}
				if st == http.StatusOK {
					pending++
				} else if st != http.StatusUnauthorized {
					return revResult{}, fmt.Errorf("replica %d after the revocations: %d", k+1, st)
				}
			}
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			return revResult{}, fmt.Errorf("%d revoked tokens still accepted 15 s after the last revocation's answer", pending)
		}
	}
	enforced := time.Now()
	wall := enforced.Sub(start)
	m := since(mach0, wall)
	var issuerCPU, receiverCPU time.Duration
	for k, p := range reps {
		d := p.cpu() - cpu0[k]
		if spread || k == 0 {
			issuerCPU += d
		} else {
			receiverCPU += d
		}
	}
	pg, self := pgCPU()-pg0, benchstat.ProcessCPU(os.Getpid())-self0
	per := func(t time.Duration) float64 { return float64(t.Microseconds()) / float64(count) }
	r := revResult{n: n, spread: spread, issued: float64(count) / answered.Sub(start).Seconds(), enforced: float64(count) / enforced.Sub(start).Seconds(),
		issuer: per(issuerCPU), pg: per(pg), loads: per(self),
		use: usage{m: m, rep: (issuerCPU + receiverCPU).Seconds() / wall.Seconds(), pg: pg.Seconds() / wall.Seconds(), loads: self.Seconds() / wall.Seconds()}}
	if !spread && n > 1 {
		r.receiver = per(receiverCPU) / float64(n-1)
	}
	// Every token at every replica but the one that revoked it.
	still := 0
	for j := range tokens {
		for k := range reps {
			if k == at(j) && n > 1 {
				continue
			}
			if st, err := ping(hc, reps[k].addr, tokens[j]); err != nil {
				return revResult{}, err
			} else if st != http.StatusUnauthorized {
				still++
			}
		}
	}
	if still > 0 {
		return revResult{}, fmt.Errorf("%d revoked tokens still accepted after the enforcement was seen", still)
	}
	where := "all at replica 1"
	if spread {
		where = fmt.Sprintf("spread over the %d", n)
	}
	fmt.Printf("%d replica(s), %d revocations %s: answered %6.0f/s, enforced by every replica %6.0f/s (last answer to last enforcement %.1f ms)   CPU µs per revocation: answering replicas %.0f",
		n, count, where, r.issued, r.enforced, benchstat.Millis(enforced.Sub(answered)), r.issuer)
	if r.receiver > 0 {
		fmt.Printf(", each receiving replica %.0f", r.receiver)
	}
	fmt.Printf(", PostgreSQL %.0f, load generator %.0f\n", r.pg, r.loads)
	for k, p := range reps {
		if reads, entries, lag := logReads(p.log, logAt[k]); reads > 0 {
			fmt.Printf("  replica %d read the log %d times for %d entries (%.1f a read), the largest lag %s\n", k+1, reads, entries, float64(entries)/float64(reads), lag)
		}
	}
	return r, nil
}

// eachWorker runs fn(j) for j in [0, count) from conns goroutines, worker
// w taking w, w+conns, …, and returns the first error.
func eachWorker(conns, count int, fn func(j int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := range conns {
		wg.Go(func() {
			for j := w; j < count; j += conns {
				if err := fn(j); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// logReads counts, in serve's text log from offset on, the reads of the
// revocation log that applied entries ("revocations applied from the
// log"), their entries and the largest lag logged.
func logReads(path string, offset int64) (reads, entries int, lag time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	f.Seek(offset, io.SeekStart)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "revocations applied from the log") {
			continue
		}
		reads++
		for field := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(field, "entries="); ok {
				e, _ := strconv.Atoi(v)
				entries += e
			}
			if v, ok := strings.CutPrefix(field, "lag="); ok {
				if d, err := time.ParseDuration(v); err == nil {
					lag = max(lag, d)
				}
			}
		}
	}
	return reads, entries, lag
}

// predict is the capacity model's rate for a run on n replicas, from the
// CPU an operation costs the replicas (s), PostgreSQL (p) and the load
// generator (g), in µs, and the CPU the run's processes could have had:
// each CPU's time less what other processes of the machine (and the
// hypervisor, as steal) took during the run. With the replicas pinned
// and fewer replicas than CPUs, the replicas' CPUs and the others are two
// budgets (A_rep, A_rest); otherwise one (A):
//
//	rate ≈ min(A_rep/s, A_rest/(p+g))   or   rate ≈ A/(s+p+g)
//
// It also returns the CPUs the others took and the CPUs left idle.
func predict(u usage, n int, cpus []string, s, p, g float64) (rate, others, idle float64) {
	busy, idle := u.m.sum(nil)
	others = busy - u.rep - u.pg - u.loads
	if len(cpus) > n {
		repBusy, _ := u.m.sum(cpus[:n])
		restBusy, _ := u.m.sum(cpus[n:])
		availRep := float64(n) - (repBusy - u.rep)
		availRest := float64(len(cpus)-n) - (restBusy - u.pg - u.loads)
		return math.Min(availRep*1e6/s, availRest*1e6/(p+g)), others, idle
	}
	return (float64(len(u.m)) - others) * 1e6 / (s + p + g), others, idle
}

// model prints the capacity model's predictions (predict), run by run,
// against the rates measured, with the costs measured with one replica
// (medians over the rounds) in the same layout: alone on its CPU for
// fewer replicas than CPUs, else every process on every CPU, as 2
// replicas or more share the CPUs with PostgreSQL and the load
// generator. For revocations spread over n replicas, a revocation costs
// the replicas s = a + (n−1)·r (a: answering it, r: receiving it,
// measured with two replicas, all revoked at one) and PostgreSQL
// p = q + (n−1)·l.
func model(grants [][]grantResult, revs [][]revResult, cpus []string) {
	med := func(xs []float64) float64 { return benchstat.Median(xs) }
	layout := map[bool]string{false: "alone on its CPU", true: "every process on every CPU"}
	type costs struct{ s, p, g float64 }
	if len(grants) == 0 || len(grants[0]) == 0 {
		return
	}
	grantCosts := map[bool]costs{}
	for _, shared := range []bool{false, true} {
		var ss, ps, gs []float64
		for _, r := range grants[0] {
			if r.shared == shared {
				ss, ps, gs = append(ss, r.serve), append(ps, r.pg), append(gs, r.generator)
			}
		}
		if len(ss) > 0 {
			grantCosts[shared] = costs{med(ss), med(ps), med(gs)}
			fmt.Printf("model: a grant's costs with 1 replica %s (medians): s %.0f µs, p %.0f µs, g %.0f µs\n", layout[shared], med(ss), med(ps), med(gs))
		}
	}
	check := func(what string, n int, shared bool, got float64, u usage, c costs, ratios *[]float64) {
		on := cpus
		if shared {
			on = nil
		}
		want, others, idle := predict(u, n, on, c.s, c.p, c.g)
		if others < -0.05 {
			// More CPU counted to the run's processes than the CPUs were
			// busy: a PostgreSQL backend exited during the run, and its
			// whole CPU time came into the postmaster's children's.
			fmt.Printf("  %d replica(s), %s: measured %6.0f %s; not checked: PostgreSQL's CPU miscounted (a backend exited during the run)\n", n, layout[shared], got, what)
			return
		}
		*ratios = append(*ratios, got/want)
		fmt.Printf("  %d replica(s), %s: predicted %6.0f %s, measured %6.0f: %.2f   (other processes took %.2f CPUs, idle %.2f)\n",
			n, layout[shared], want, what, got, got/want, others, idle)
	}
	summary := func(n int, ratios []float64) {
		if len(ratios) > 0 {
			fmt.Printf("  %d replica(s): measured/predicted median %.2f (%.2f–%.2f)\n", n, med(ratios), slices.Min(ratios), slices.Max(ratios))
		}
	}
	for n := 1; n <= len(grants); n++ {
		var ratios []float64
		for _, r := range grants[n-1] {
			check("grants/s", n, r.shared, r.rate, r.use, grantCosts[r.shared], &ratios)
		}
		summary(n, ratios)
	}
	if len(revs) < 2 {
		return
	}
	revCosts := map[bool]costs{}
	var rrs, ls []float64
	for _, shared := range []bool{false, true} {
		var as, qs, gs []float64
		for _, r := range revs[0] {
			if r.shared == shared {
				as, qs, gs = append(as, r.issuer), append(qs, r.pg), append(gs, r.loads)
			}
		}
		if len(as) > 0 {
			revCosts[shared] = costs{med(as), med(qs), med(gs)}
		}
	}
	sharedQ := revCosts[true].p
	for _, r := range revs[1] {
		if !r.spread {
			rrs, ls = append(rrs, r.receiver), append(ls, r.pg-sharedQ)
		}
	}
	if len(rrs) == 0 {
		return
	}
	rr, l := med(rrs), max(med(ls), 0)
	for shared, c := range revCosts {
		fmt.Printf("model: a revocation's costs with 1 replica %s (medians): a %.0f µs, q %.0f µs, g %.0f µs\n", layout[shared], c.s, c.p, c.g)
	}
	fmt.Printf("model: with 2 replicas, all revoked at one: each receiving replica r %.0f µs, PostgreSQL per more replica l %.0f µs (medians; l at least 0)\n", rr, l)
	for n := 1; n <= len(revs); n++ {
		var ratios []float64
		for _, r := range revs[n-1] {
			if n > 1 && !r.spread {
				continue
			}
			c := revCosts[r.shared]
			c.s += float64(n-1) * rr
			c.p += float64(n-1) * l
			check("revocations/s", n, r.shared, r.enforced, r.use, c, &ratios)
		}
		summary(n, ratios)
	}
}
