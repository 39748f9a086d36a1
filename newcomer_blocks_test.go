// The newcomer test's script commands (newcomer_test.go): docblock runs
// or checks one code block of the manual, docstop stops the servers the
// blocks started.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// docServers are the servers the blocks of each script started, stopped
// by docstop.
var docServers = struct {
	sync.Mutex
	m map[*testscript.TestScript][]*docServer
}{m: map[*testscript.TestScript][]*docServer{}}

type docServer struct {
	line string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error
}

// docBlockCmd runs or checks one block. Usage: docblock KIND FILE WHERE
func docBlockCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: docblock KIND FILE WHERE")
	}
	kind, text, where := args[0], ts.ReadFile(args[1]), args[2]
	switch kind {
	case "sh":
		runShBlock(ts, where, text)
	case "console":
		runConsoleBlock(ts, where, text)
	case "config":
		checkServeConfig(ts, where, text)
	case "mcpconfig":
		checkMCPConfig(ts, where, text)
	case "audit":
		checkAuditRecord(ts, where, text)
	case "paths":
		checkPaths(ts, where, text)
	default:
		ts.Fatalf("docblock: unknown kind %q", kind)
	}
}

// docStopCmd stops the servers the script's blocks started: each must
// exit 0 on SIGINT, as serve's help says. Usage: docstop
func docStopCmd(ts *testscript.TestScript, neg bool, args []string) {
	docServers.Lock()
	servers := docServers.m[ts]
	delete(docServers.m, ts)
	docServers.Unlock()
	for _, s := range servers {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-s.done:
			if err != nil {
				ts.Fatalf("%s: after Ctrl-C: %v\n%s", s.line, err, s.out)
			}
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			ts.Fatalf("%s: still running 20 s after Ctrl-C\n%s", s.line, s.out)
		}
	}
}

// normalize turns the manual's addresses into the script's: serve's
// 127.0.0.1:7777 (and a placeholder remote MCP server) into $ADDR, the
// backend's 127.0.0.1:8080 into $BACKEND, /etc/agentauth into $WORK's.
func normalize(ts *testscript.TestScript, s string) string {
	var pairs []string
	if a := ts.Getenv("ADDR"); a != "" {
		pairs = append(pairs, "127.0.0.1:7777", a, "https://mcp.example.com", "http://"+a)
	}
	if a := ts.Getenv("BACKEND"); a != "" {
		pairs = append(pairs, "127.0.0.1:8080", a)
	}
	pairs = append(pairs, "/etc/agentauth/", filepath.Join(ts.Getenv("WORK"), "etc", "agentauth")+"/")
	return strings.NewReplacer(pairs...).Replace(s)
}

var (
	serveLine  = regexp.MustCompile(`^agentauth serve\b`)
	listenFlag = regexp.MustCompile(`\s--listen[= ]\S+`)
	addrFile   = regexp.MustCompile(`\s--addr-file[= ](\S+)`)
)

// isServer says whether line starts a server that runs until stopped:
// serve (not --check) or proxy --listen, not sent to the background.
func isServer(line string) bool {
	l, _, _ := strings.Cut(line, " # ")
	l = strings.TrimSpace(l)
	if strings.HasSuffix(l, "&") {
		return false
	}
	return serveLine.MatchString(l) && !strings.Contains(l, "--check") ||
		strings.HasPrefix(l, "agentauth proxy") && strings.Contains(l, "--listen")
}

// runShBlock runs an sh block with bash -e, stdin empty, in $WORK; a line
// that starts a server runs on its own (startServer), and one with
// --watch until its first output (runWatchLine).
func runShBlock(ts *testscript.TestScript, where, text string) {
	var seg strings.Builder
	flush := func() {
		if strings.TrimSpace(seg.String()) != "" {
			out, err := runBash(ts, "set -e -o pipefail\n"+seg.String())
			if err != nil {
				ts.Fatalf("%s: the sh block fails: %v\n%s\noutput:\n%s", where, err, seg.String(), out)
			}
			ts.Logf("%s", out)
		}
		seg.Reset()
	}
	for _, l := range logicalLines(text) {
		l = normalize(ts, l) // after the servers before it started
		switch {
		case isServer(l):
			flush()
			startServer(ts, where, l)
		case strings.Contains(l, "--watch"):
			flush()
			runWatchLine(ts, where, l)
		default:
			seg.WriteString(l + "\n")
		}
	}
	flush()
}

// runConsoleBlock runs each $ command of a console block and compares
// what it prints (stdout and stderr) with the lines the block shows
// after it (looseMatch: … stands for anything); a command shown without
// output must exit 0.
func runConsoleBlock(ts *testscript.TestScript, where, text string) {
	type step struct {
		cmd  string
		want []string
	}
	var steps []step
	for _, l := range logicalLines(text) {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, step{cmd: c})
		} else if len(steps) == 0 {
			ts.Fatalf("%s: output before the first $ command", where)
		} else {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	for _, s := range steps {
		s.cmd = normalize(ts, s.cmd)
		for i := range s.want {
			s.want[i] = normalize(ts, s.want[i])
		}
		if isServer(s.cmd) {
			startServer(ts, where, s.cmd)
			continue
		}
		if strings.Contains(s.cmd, "--watch") {
			runWatchLine(ts, where, s.cmd)
			continue
		}
		out, err := runBash(ts, s.cmd)
		if len(s.want) == 0 && err != nil {
			ts.Fatalf("%s: $ %s: %v\n%s", where, s.cmd, err, out)
		}
		if want := strings.Join(s.want, "\n"); len(s.want) > 0 && !looseMatch(want, out) {
			ts.Fatalf("%s: $ %s\nthe manual shows:\n%s\nthe program prints:\n%s", where, s.cmd, want, out)
		}
	}
}

// runBash runs script with bash in $WORK, stdin empty, with a 60 s
// bound, and returns its stdout and stderr together.
func runBash(ts *testscript.TestScript, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = ts.Getenv("WORK"), scriptEnviron(ts)
	cmd.WaitDelay = 5 * time.Second // a child that keeps the output open
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after 60 s: %w", err)
	}
	return string(out), err
}

// scriptEnviron is the script's environment, for the programs a block
// runs.
func scriptEnviron(ts *testscript.TestScript) []string {
	keys := []string{"HOME", "AGENTAUTH_CONFIG_DIR", "AGENTAUTH_STORE", "NO_COLOR", "BROWSER", "TERM", "WORK", "TMPDIR", newcomerMarker, "ADDR", "BACKEND"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	var env []string
	seen := map[string]bool{}
	for _, k := range keys {
		if v := ts.Getenv(k); v != "" && !seen[k] {
			seen[k] = true
			env = append(env, k+"="+v)
		}
	}
	return env
}

// startServer starts a server line of the manual on a free port: serve
// with --listen 127.0.0.1:0 in place of its own and an --addr-file
// (unless it names one); proxy with --listen 127.0.0.1:0, its --url-file
// or --addr-file waited for. serve's address becomes $ADDR for the blocks
// after it. docstop stops it.
func startServer(ts *testscript.TestScript, where, line string) {
	line, _, _ = strings.Cut(line, " # ")
	work := ts.Getenv("WORK")
	docServers.Lock()
	n := len(docServers.m[ts])
	docServers.Unlock()
	wait := ""
	if serveLine.MatchString(line) {
		line = listenFlag.ReplaceAllString(line, "")
		inject := " --listen 127.0.0.1:0"
		if m := addrFile.FindStringSubmatch(line); m != nil {
			wait = m[1]
		} else {
			wait = fmt.Sprintf("served%d.addr", n)
			inject += " --addr-file " + wait
		}
		line = strings.Replace(line, "agentauth serve", "agentauth serve"+inject, 1)
	} else if m := regexp.MustCompile(`\s--(url|addr)-file[= ](\S+)`).FindStringSubmatch(line); m != nil {
		line = listenFlag.ReplaceAllString(line, " --listen 127.0.0.1:0")
		wait = m[2]
		if strings.HasPrefix(wait, "~/") {
			wait = filepath.Join(ts.Getenv("HOME"), wait[2:])
		}
	} else {
		ts.Fatalf("%s: %s: the test cannot tell when it listens (no --url-file or --addr-file)", where, line)
	}
	if !filepath.IsAbs(wait) {
		wait = filepath.Join(work, wait)
	}
	os.Remove(wait)
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir, cmd.Env = work, scriptEnviron(ts)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		ts.Fatalf("%s: %s: %v", where, line, err)
	}
	s := &docServer{line: line, cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	docServers.Lock()
	docServers.m[ts] = append(docServers.m[ts], s)
	docServers.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(wait); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			ts.Logf("started: %s (%s)", line, bytes.TrimSpace(b))
			if strings.Contains(line, "--url-file") {
				checkURLFile(ts, where, wait, b)
			}
			if serveLine.MatchString(line) {
				ts.Setenv("ADDR", strings.TrimSpace(string(b)))
			}
			return
		}
		select {
		case err := <-s.done:
			ts.Fatalf("%s: %s: exited before listening: %v\n%s", where, line, err, out)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s: %s: not listening after 30 s\n%s", where, line, out)
		}
	}
}

// runWatchLine runs a --watch command until its first line of output,
// then interrupts it: it must then exit 0 or 130.
func runWatchLine(ts *testscript.TestScript, where, line string) {
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir, cmd.Env = ts.Getenv("WORK"), scriptEnviron(ts)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		ts.Fatalf("%s: %s: %v", where, line, err)
	}
	first := make(chan string, 1)
	var rest bytes.Buffer
	go func() {
		br := bufio.NewReader(pr)
		l, _ := br.ReadString('\n')
		first <- l
		io.Copy(&rest, br)
	}()
	select {
	case l := <-first:
		ts.Logf("%s: %s", line, l)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		ts.Fatalf("%s: %s: no output after 30 s", where, line)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	pw.Close()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 130) {
		ts.Fatalf("%s: %s: after Ctrl-C: %v\n%s", where, line, err, rest.String())
	}
}

// checkServeConfig checks a serve config with `serve --check`, as
// ExecStartPre does. A file the config names under /etc/agentauth is
// made in $WORK (mode 0600) for the check, and a variable it names in
// clientSecretEnv is set, as the reader sets theirs.
func checkServeConfig(ts *testscript.TestScript, where, text string) {
	work := ts.Getenv("WORK")
	text = normalize(ts, text)
	etc := filepath.Join(work, "etc", "agentauth") + "/"
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(etc)+`[^"]+`).FindAllString(text, -1) {
		os.MkdirAll(filepath.Dir(m), 0o700)
		os.WriteFile(m, []byte("a-secret-for-the-check\n"), 0o600)
	}
	file := filepath.Join(work, "check-config.json")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		ts.Fatalf("%v", err)
	}
	var env strings.Builder
	for _, m := range regexp.MustCompile(`"clientSecretEnv":\s*"([A-Za-z_][A-Za-z0-9_]*)"`).FindAllStringSubmatch(text, -1) {
		env.WriteString(m[1] + "=a-secret-for-the-check ")
	}
	out, err := runBash(ts, env.String()+"agentauth serve --check --ephemeral --listen 127.0.0.1:0 --config "+file)
	if err != nil || !strings.Contains(out, "serve --check: ok") {
		ts.Fatalf("%s: serve --check refuses the config: %v\n%s\n%s", where, err, text, out)
	}
}

// checkMCPConfig starts each server of an MCP client's configuration
// (mcpServers: command and args, as the client does) and calls it as a
// client: initialize, notifications/initialized, tools/list, which must
// list tools (the proxy logs in on the 401).
func checkMCPConfig(ts *testscript.TestScript, where, text string) {
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(normalize(ts, text)), &cfg); err != nil {
		ts.Fatalf("%s: %v", where, err)
	}
	for name, s := range cfg.MCPServers {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, s.Command, s.Args...)
		cmd.Dir, cmd.Env = ts.Getenv("WORK"), scriptEnviron(ts)
		pr, pw := io.Pipe()
		cmd.Stdin = io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"newcomer","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"), pr)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			ts.Fatalf("%v", err)
		}
		if err := cmd.Start(); err != nil {
			ts.Fatalf("%s: server %q: %v", where, name, err)
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		var got []string
		for sc.Scan() {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					Tools []struct{ Name string } `json:"tools"`
				} `json:"result"`
			}
			got = append(got, sc.Text())
			json.Unmarshal(sc.Bytes(), &msg)
			if string(msg.ID) == "1" {
				io.WriteString(pw, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
			}
			if string(msg.ID) == "2" {
				if len(msg.Result.Tools) == 0 {
					ts.Fatalf("%s: server %q lists no tools: %s", where, name, sc.Text())
				}
				pw.Close()
				break
			}
		}
		pw.Close()
		err = cmd.Wait()
		cancel()
		if err != nil || len(got) < 2 {
			ts.Fatalf("%s: server %q (%s %q): %v\nstdout:\n%s\nstderr:\n%s", where, name, s.Command, s.Args, err, strings.Join(got, "\n"), stderr.String())
		}
	}
}

// checkAuditRecord compares an audit record the manual shows with one
// serve writes: serve (JSON logs) and a login through it, then the
// record of the same event must have the same fields, and the same
// values but for the time and the client id (a registered client's).
func checkAuditRecord(ts *testscript.TestScript, where, text string) {
	var want map[string]any
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		ts.Fatalf("%s: %v", where, err)
	}
	log := filepath.Join(ts.Getenv("WORK"), "audit.log")
	prev := ts.Getenv("ADDR")
	startServer(ts, where, "agentauth serve --ephemeral --log-format json --log-file "+log)
	if out, err := runBash(ts, "agentauth login --force ws://"+ts.Getenv("ADDR")); err != nil {
		ts.Fatalf("%s: logging in to see an audit record: %v\n%s", where, err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	var got map[string]any
	for _, l := range strings.Split(string(b), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "audit" && rec["event"] == want["event"] {
			got = rec
			break
		}
	}
	if got == nil {
		ts.Fatalf("%s: serve logged no %v audit record:\n%s", where, want["event"], b)
	}
	norm := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			switch k {
			case "time", "client_id":
				v = "…"
			}
			if s, ok := v.(string); ok {
				v = strings.ReplaceAll(s, ts.Getenv("ADDR"), "127.0.0.1:7777")
			}
			out[k] = v
		}
		return out
	}
	w, g := norm(want), norm(got)
	wj, _ := json.Marshal(w)
	gj, _ := json.Marshal(g)
	if !bytes.Equal(wj, gj) {
		ts.Fatalf("%s: the manual's audit record:\n%s\nserve's (time and client id aside):\n%s", where, wj, gj)
	}
	ts.Setenv("ADDR", prev)
}

// pathWord is a file or directory name of a layout block: main.go,
// commands/, commands/serve*.go.
var pathWord = regexp.MustCompile(`^[A-Za-z0-9_.*-]+(/[A-Za-z0-9_.*-]*)*(/|\.[a-z]+)$`)

// checkPaths checks a layout block: each line starts with one or more
// paths of the tree (a directory ends in /; a glob matches something),
// followed by what they hold.
func checkPaths(ts *testscript.TestScript, where, text string) {
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, " ") {
			continue // the line before it goes on
		}
		n := 0
		for _, f := range strings.Fields(l) {
			if !pathWord.MatchString(f) {
				break
			}
			m, _ := filepath.Glob(filepath.Join(ts.Getenv("WORK"), f))
			if len(m) == 0 {
				ts.Fatalf("%s: %q: no %s in the tree", where, l, f)
			}
			n++
		}
		if n == 0 {
			ts.Fatalf("%s: %q does not start with a path", where, l)
		}
	}
}

// proxyURL is what proxy --listen writes to its --url-file: the loopback
// URL with its secret path.
var proxyURL = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/[A-Za-z0-9_-]{20,}/mcp\n$`)

// checkURLFile checks proxy's --url-file as the manual describes it: the
// whole URL, secret included, in a file only its owner reads (0600).
func checkURLFile(ts *testscript.TestScript, where, file string, content []byte) {
	fi, err := os.Stat(file)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if fi.Mode().Perm() != 0o600 || !proxyURL.Match(content) {
		ts.Fatalf("%s: %s is %v and holds %q, not a 0600 file with http://127.0.0.1:PORT/SECRET/mcp", where, file, fi.Mode().Perm(), content)
	}
}
