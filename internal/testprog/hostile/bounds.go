package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Bound modes: calls the backend holds, for tests of what serve holds
// meanwhile.
func init() {
	// hold: a tool hold {data} that answers only once POST /release
	// came; GET /held says how many calls it holds.
	modes["hold"] = func(b *backend) {
		var held atomic.Int64
		release := make(chan struct{})
		var once sync.Once
		b.tools = append(b.tools, tool{Name: "hold",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"data":{"type":"string"}}}`),
			run: func(b *backend, args json.RawMessage) string {
				held.Add(1)
				<-release
				return "held " + strconv.Itoa(len(args)) + " bytes"
			}})
		b.mux.HandleFunc("GET /held", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, held.Load()) })
		b.mux.HandleFunc("POST /release", func(w http.ResponseWriter, r *http.Request) { once.Do(func() { close(release) }) })
	}
	cmds["burst"] = burst
	cmds["vmhwm"] = vmHWM
}

// burst sends N tools/call of hold at once, each with a data argument of
// SIZE bytes, to URL with the token in TOKENFILE; once every call is
// answered or held by the backend at BACKEND (GET /held), it releases
// them (POST /release) and prints, sorted, "status S: COUNT" for each
// HTTP status, and "retry-after: missing" if a 429 or 503 lacked it.
// Usage: burst BACKEND URL TOKENFILE N SIZE
func burst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 5 {
		ts.Fatalf("usage: burst BACKEND URL TOKENFILE N SIZE")
	}
	backend, target := args[0], args[1]
	tok := strings.TrimSpace(ts.ReadFile(args[2]))
	n, err1 := strconv.Atoi(args[3])
	size, err2 := strconv.Atoi(args[4])
	if err1 != nil || err2 != nil {
		ts.Fatalf("N and SIZE are numbers")
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{"data":"` +
		strings.Repeat("x", size) + `"}}}`)
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}}
	type answer struct {
		status int
		retry  string
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				answers <- answer{status: -1}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}
	counts := map[int]int{}
	missing := false
	got := 0
	released := false
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	for got < n {
		select {
		case a := <-answers:
			got++
			counts[a.status]++
			if (a.status == 429 || a.status == 503) && a.retry == "" {
				missing = true
			}
			continue
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			ts.Fatalf("burst: %d of %d answered after 2 minutes", got, n)
		}
		if released {
			continue
		}
		resp, err := http.Get("http://" + backend + "/held")
		if err != nil {
			ts.Fatalf("burst: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if held, _ := strconv.Atoi(string(b)); held > 0 && held+got == n {
			resp, err := http.Post("http://"+backend+"/release", "text/plain", nil)
			if err != nil {
				ts.Fatalf("burst: %v", err)
			}
			resp.Body.Close()
			released = true
		}
	}
	var lines []string
	for s, c := range counts {
		lines = append(lines, fmt.Sprintf("status %d: %d", s, c))
	}
	if missing {
		lines = append(lines, "retry-after: missing")
	}
	sort.Strings(lines)
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}

// vmHWM prints the peak resident set (VmHWM, /proc/PID/status) of the
// one process whose command line holds the argument MARK, in MiB, and
// fails if it is MAX MiB or more. Usage: vmhwm MARK MAX
func vmHWM(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: vmhwm MARK MAX")
	}
	max, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("MAX is a number of MiB")
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		cl, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(cl, []byte(args[0])) && filepath.Base(d) != strconv.Itoa(os.Getpid()) {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		ts.Fatalf("vmhwm: %d processes have %q in their command line; want 1", len(found), args[0])
	}
	status, err := os.ReadFile(filepath.Join(found[0], "status"))
	if err != nil {
		ts.Fatalf("vmhwm: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				ts.Fatalf("vmhwm: %q", line)
			}
			fmt.Fprintf(ts.Stdout(), "VmHWM: %d MiB\n", kb/1024)
			if kb/1024 >= max {
				ts.Fatalf("vmhwm: the peak resident set is %d MiB, %d MiB or more", kb/1024, max)
			}
			return
		}
	}
	ts.Fatalf("vmhwm: no VmHWM in %s/status", found[0])
}
