package newcomer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Cmds are the custom script commands of the newcomer scripts.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"helpexamples":   helpExamples,
		"readmeexamples": readmeExamples,
	}
}

// helpExamples runs every command example of agentauth's --help texts
// (the top level's and each command's EXAMPLES) with bash, as a user
// would type it, against the serve at ADDR (127.0.0.1:7777 in an example
// becomes ADDR); each must exit 0. Before an example that needs a login
// the script's user logs in again (ws:// and http://…/mcp); an example
// starting serve runs on a free port and is stopped with SIGINT, which
// must end it with 0. It prints "ok: EXAMPLE" per example.
// Usage: helpexamples ADDR
func helpExamples(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: helpexamples ADDR")
	}
	addr := args[0]
	env := scriptEnv(ts)
	dir := filepath.Join(ts.Getenv("WORK"), "examples")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		ts.Fatalf("%v", err)
	}
	top, err := runBash(dir, env, "agentauth --help")
	if err != nil {
		ts.Fatalf("agentauth --help: %v\n%s", err, top)
	}
	pages := map[string]string{"": top}
	order := []string{""}
	names := section(top, "COMMANDS:")
	if len(names) == 0 {
		ts.Fatalf("agentauth --help lists no commands")
	}
	for _, l := range names {
		name := strings.TrimSuffix(strings.Fields(l)[0], ",")
		if name == "help" {
			continue
		}
		order = append(order, name)
		if pages[name], err = runBash(dir, env, "agentauth "+name+" --help"); err != nil {
			ts.Fatalf("agentauth %s --help: %v", name, err)
		}
	}
	n := 0
	for _, name := range order {
		examples := section(pages[name], "EXAMPLES:")
		if name != "" && len(examples) == 0 {
			ts.Fatalf("agentauth %s --help has no EXAMPLES", name)
		}
		for _, ex := range examples {
			ex = strings.TrimPrefix(strings.TrimSpace(ex), "$ ")
			runExample(ts, env, dir, addr, ex, "agentauth "+name+" --help")
			n++
		}
	}
	fmt.Fprintf(ts.Stdout(), "%d examples ran\n", n)
}

// runBash runs line with bash -c in dir with env, for at most a minute,
// and returns its stdout and stderr together.
func runBash(dir string, env []string, line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runExample runs one example as bash would, 127.0.0.1:7777 replaced by
// addr: serve's on a free port (runServe), --watch until its first output
// (runWatch), the others after a fresh login when they use one; each must
// succeed. It prints "ok: EXAMPLE"; where names the text it comes from.
func runExample(ts *testscript.TestScript, env []string, dir, addr, ex, where string) {
	line := strings.ReplaceAll(ex, "127.0.0.1:7777", addr)
	switch {
	case strings.HasPrefix(line, "agentauth serve"), strings.Contains(line, " --listen "):
		runServe(ts, env, dir, line)
	case strings.Contains(line, "--watch"):
		loginFirst(ts, env, dir, addr, ex)
		runWatch(ts, env, dir, line)
	default:
		if needsLogin(line) {
			loginFirst(ts, env, dir, addr, ex)
		}
		if out, err := runBash(dir, env, line); err != nil {
			ts.Fatalf("the example %q (%s) fails: %v\n%s", ex, where, err, out)
		}
	}
	fmt.Fprintf(ts.Stdout(), "ok: %s\n", ex)
}

// loginFirst logs the script's user in again through ws:// and /mcp.
func loginFirst(ts *testscript.TestScript, env []string, dir, addr, ex string) {
	for _, target := range []string{"ws://" + addr, "http://" + addr + "/mcp"} {
		if out, err := runBash(dir, env, "agentauth login --force "+target); err != nil {
			ts.Fatalf("logging in before %q: %v\n%s", ex, err, out)
		}
	}
}

// examplesMarker comes before the manual's command table.
const examplesMarker = "<!-- examples: checked by newcomer_readme_examples.txtar -->"

// readmeExamples runs the example column of the manual's command table
// (after its "examples: checked" marker, in README.md or the page of
// docs/ that holds it) like helpexamples, against the serve at ADDR. The
// manual is the repository's (the test's working directory). Usage:
// readmeexamples ADDR
func readmeExamples(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: readmeexamples ADDR")
	}
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		ts.Fatalf("%v", err)
	}
	text, i := "", -1
	for _, p := range append([]string{"README.md"}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			ts.Fatalf("%v", err)
		}
		if i = strings.Index(string(b), examplesMarker); i >= 0 {
			text = string(b)
			break
		}
	}
	if i < 0 {
		ts.Fatalf("neither README.md nor docs/*.md has the checked command table (%s)", examplesMarker)
	}
	dir := filepath.Join(ts.Getenv("WORK"), "examples")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		ts.Fatalf("%v", err)
	}
	env := scriptEnv(ts)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(text[i:]))
	sc.Scan() // the marker
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := splitRow(l)
		if len(cells) < 3 || !strings.HasPrefix(cells[2], "`") {
			continue
		}
		ex := strings.Trim(cells[2], "`")
		runExample(ts, env, dir, args[0], ex, "the manual's command table")
		n++
	}
	if n == 0 {
		ts.Fatalf("the manual's command table has no examples")
	}
	fmt.Fprintf(ts.Stdout(), "%d examples ran\n", n)
}

// splitRow splits a markdown table row on the | that are not escaped.
func splitRow(l string) []string {
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
		case l[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return cells
}

// needsLogin says whether an example uses a stored credential.
func needsLogin(line string) bool {
	for _, c := range []string{"token", "authenticate", "status", "call", "token-revoke", "logout"} {
		if regexp.MustCompile(`agentauth ` + c + `\b`).MatchString(line) {
			return true
		}
	}
	return false
}

var addrFileRE = regexp.MustCompile(`--addr-file (\S+)`)

// runServe starts a serve example on a free port (another listener's, as
// written), waits for its address file and stops it with SIGINT: serve
// must exit 0, another 0 or 130.
func runServe(ts *testscript.TestScript, env []string, dir, line string) {
	file := "serve-example.addr"
	inject := " --listen 127.0.0.1:0 --ephemeral"
	if !strings.HasPrefix(line, "agentauth serve") {
		inject = "" // another listener (proxy --listen): as written
	}
	if m := addrFileRE.FindStringSubmatch(line); m != nil {
		file = m[1]
	} else {
		inject += " --addr-file " + file
	}
	path := filepath.Join(dir, file)
	os.Remove(path)
	line = strings.Replace(line, "agentauth serve", "agentauth serve"+inject, 1)
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		ts.Fatalf("%s: %v", line, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			ts.Fatalf("%s: no address after 30 s\n%s", line, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && (strings.HasPrefix(line, "agentauth serve") || !errors.As(err, &exit) || exit.ExitCode() != 130) {
		// serve's help says Ctrl-C is exit 0; the others may say 130.
		ts.Fatalf("%s: after Ctrl-C: %v\n%s", line, err, out.String())
	}
}

// runWatch runs a --watch example until its first output (stdout or
// stderr), then stops it with SIGINT: it must then exit 0 (a watch ended)
// or 130.
func runWatch(ts *testscript.TestScript, env []string, dir, line string) {
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, env
	r, w, err := os.Pipe()
	if err != nil {
		ts.Fatalf("%v", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		ts.Fatalf("%s: %v", line, err)
	}
	w.Close()
	defer r.Close()
	var out strings.Builder
	first := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		ok := sc.Scan()
		out.WriteString(sc.Text())
		first <- ok
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-first:
		if !ok {
			cmd.Wait()
			ts.Fatalf("%s: ended without output", line)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		ts.Fatalf("%s: no output after a minute", line)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if exit, ok := err.(*exec.ExitError); err != nil && (!ok || exit.ExitCode() != 130) {
		ts.Fatalf("%s: after Ctrl-C: %v, want exit status 0 or 130 (first line: %s)", line, err, out.String())
	}
}

// section returns the indented lines under a help heading.
func section(page, heading string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.TrimSpace(l) == heading:
			in = true
		case in && strings.TrimSpace(l) == "":
			if len(out) > 0 {
				return out
			}
		case in && strings.HasPrefix(l, "   "):
			out = append(out, l)
		case in:
			return out
		}
	}
	return out
}

// scriptEnv is the script's environment for a child process.
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "AGENTAUTH_CONFIG_DIR", "AGENTAUTH_STORE", "NO_COLOR", "BROWSER", "TMPDIR", "XDG_RUNTIME_DIR"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}
