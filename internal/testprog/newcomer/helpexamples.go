package newcomer

import (
	"bufio"
	"context"
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
		"helpexamples": helpExamples,
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
	run := func(line string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	top, err := run("agentauth --help")
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
		if pages[name], err = run("agentauth " + name + " --help"); err != nil {
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
			line := strings.ReplaceAll(ex, "127.0.0.1:7777", addr)
			if strings.HasPrefix(line, "agentauth serve") {
				runServe(ts, env, dir, line)
			} else {
				if needsLogin(line) {
					for _, target := range []string{"ws://" + addr, "http://" + addr + "/mcp"} {
						if out, err := run("agentauth login --force " + target); err != nil {
							ts.Fatalf("logging in before %q: %v\n%s", ex, err, out)
						}
					}
				}
				if strings.Contains(line, "--watch") {
					runWatch(ts, env, dir, line)
				} else if out, err := run(line); err != nil {
					ts.Fatalf("the example %q (agentauth %s --help) fails: %v\n%s", ex, name, err, out)
				}
			}
			fmt.Fprintf(ts.Stdout(), "ok: %s\n", ex)
			n++
		}
	}
	fmt.Fprintf(ts.Stdout(), "%d examples ran\n", n)
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

// runServe starts a serve example on a free port, waits for its address
// file and stops it with SIGINT: it must exit 0.
func runServe(ts *testscript.TestScript, env []string, dir, line string) {
	file := "serve-example.addr"
	inject := " --listen 127.0.0.1:0 --ephemeral"
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
	if err := cmd.Wait(); err != nil {
		ts.Fatalf("%s: after Ctrl-C: %v (its help says 0)\n%s", line, err, out.String())
	}
}

// runWatch runs a --watch example until its first output on stdout,
// then stops it with SIGINT: it must then exit 0 (a watch ended) or 130.
func runWatch(ts *testscript.TestScript, env []string, dir, line string) {
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, env
	var errOut strings.Builder
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		ts.Fatalf("%s: %v", line, err)
	}
	first := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first <- sc.Scan()
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-first:
		if !ok {
			cmd.Wait()
			ts.Fatalf("%s: ended without output\n%s", line, errOut.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		ts.Fatalf("%s: no output after a minute\n%s", line, errOut.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if exit, ok := err.(*exec.ExitError); err != nil && (!ok || exit.ExitCode() != 130) {
		ts.Fatalf("%s: after Ctrl-C: %v, want exit status 0 or 130\n%s", line, err, errOut.String())
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
