// End-to-end tests beside the testscripts (main_test.go): the README's
// walkthrough run on a pty, and the testdata/keyring scripts against a real
// gnome-keyring.

package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/godbus/dbus/v5"
	"github.com/rogpeppe/go-internal/testscript"
)

// walkthroughChecked is what the README carries once its walkthrough is
// the one TestREADMEWalkthrough checks.
const walkthroughChecked = "<!-- walkthrough: checked by TestREADMEWalkthrough -->"

// walkthroughCommand is one "$ command" of a README walkthrough with the
// output the README shows for it, or (script set) a ```sh block run as a
// whole, which must exit 0. variant is "keyring" or "no keyring" for a
// block only true on such a machine (the comment
// <!-- walkthrough: keyring --> before it), "" for both.
type walkthroughCommand struct {
	line    string
	want    []string
	script  string
	variant string
}

// readWalkthrough returns the steps of the manual page between start and
// the first end after it: its console blocks' commands, each with its
// quoted output, and its sh blocks.
func readWalkthrough(t *testing.T, readme, start, end string) []walkthroughCommand {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, start)
	j := -1
	if i >= 0 {
		j = strings.Index(text[i+len(start):], end)
	}
	if i < 0 || j < 0 {
		t.Fatalf("%s: no walkthrough between %q and %q", readme, start, end)
	}
	var cmds []walkthroughCommand
	block, variant, pending := "", "", ""
	var script strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text[i : i+len(start)+j]))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case block == "" && strings.HasPrefix(l, "<!-- walkthrough: keyring -->"):
			pending = "keyring"
		case block == "" && strings.HasPrefix(l, "<!-- walkthrough: no keyring -->"):
			pending = "no keyring"
		case block == "" && (l == "```console" || l == "```sh"):
			block, variant, pending = strings.TrimPrefix(l, "```"), pending, ""
			script.Reset()
		case block != "" && strings.HasPrefix(l, "```"):
			if block == "sh" {
				cmds = append(cmds, walkthroughCommand{script: script.String(), variant: variant})
			}
			block = ""
		case block == "sh":
			script.WriteString(l + "\n")
		case block != "console":
		case strings.HasPrefix(l, "$ "):
			cmds = append(cmds, walkthroughCommand{line: strings.TrimPrefix(l, "$ "), variant: variant})
		case strings.HasSuffix(cmds[len(cmds)-1].line, `\`):
			c := &cmds[len(cmds)-1]
			c.line = strings.TrimSuffix(c.line, `\`) + " " + strings.TrimSpace(l)
		default:
			c := &cmds[len(cmds)-1]
			c.want = append(c.want, l)
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("%s: the walkthrough has no console blocks", readme)
	}
	return cmds
}

// manualPageWith returns the page of the manual (readme, then
// docs/*.md beside it) that holds marker, wherever the manual's layout
// put that block.
func manualPageWith(t *testing.T, readme, marker string) string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(filepath.Dir(readme), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]string{readme}, pages...) {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(marker)) {
			return p
		}
	}
	t.Fatalf("no page of the manual (%s, docs/*.md) holds %s", readme, marker)
	return ""
}

// walkthroughMarker marks the processes a walkthrough's sh blocks start
// in the background (the servers), so that the test stops them.
const walkthroughMarker = "AGENTAUTH_WALKTHROUGH_MARKER"

// TestREADMEWalkthrough runs the README's walkthroughs as a user would:
// the main one (steps 2 to 6, against `agentauth serve` on a free port,
// approving at once: the browser is browser-fetch), then the upstream
// APIs' one (on the page of README.md or docs/*.md that holds its marker;
// its sh block starts "Rally" and the broker itself; ports 7800 and 7777
// become free ones), then the "for scripts and tests" block. Each console command runs on a terminal (a
// pty) through bash, its output compared with what the README quotes (…
// stands for anything; spaces and line breaks are compared loosely); each
// sh block must exit 0. It runs on a machine without a keyring (no D-Bus
// session: the README's "no keyring" blocks), and again with a real
// keyring (TestRealKeyring's; its "keyring" blocks) where gnome-keyring
// is installed. A README whose commands or quoted outputs drift from the
// program fails it. $AGENTAUTH_README names another file to check (a
// README being edited).
func TestREADMEWalkthrough(t *testing.T) {
	readme := os.Getenv("AGENTAUTH_README")
	if readme == "" {
		readme = "README.md"
	}
	if b, err := os.ReadFile(readme); err != nil || !bytes.Contains(b, []byte(walkthroughChecked)) {
		t.Skipf("SKIPPED: %s does not carry %s yet (the walkthrough text to check is in the issue 13 report)", readme, walkthroughChecked)
	}
	main := readWalkthrough(t, readme, "## Walkthrough", "**For scripts and tests**")
	const brokerMarker = "<!-- walkthrough: checked by TestREADMEWalkthrough (broker) -->"
	broker := readWalkthrough(t, manualPageWith(t, readme, brokerMarker), brokerMarker, "The upstream's whoami shows")
	scripts := readWalkthrough(t, readme, "**For scripts and tests**", "\n## ")
	t.Run("no keyring", func(t *testing.T) {
		dir := t.TempDir()
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "HOME=") {
				env = append(env, kv)
			}
		}
		run := filepath.Join(dir, "run")
		os.MkdirAll(run, 0o700)
		env = append(env, "HOME="+filepath.Join(dir, "home"), "XDG_RUNTIME_DIR="+run)
		runWalkthroughs(t, dir, env, "no keyring", main, broker, scripts)
	})
	t.Run("keyring", func(t *testing.T) {
		kr := startRealKeyring(t)
		runWalkthroughs(t, t.TempDir(), append(os.Environ(), kr.vars...), "keyring", main, broker, scripts)
		kr.checkNothingLeft(t)
	})
}

// runWalkthroughs runs the main walkthrough, then the broker's, then the
// "for scripts and tests" block, in dir with env, skipping the blocks of
// the other variant.
func runWalkthroughs(t *testing.T, dir string, env []string, variant string, main, broker, scripts []walkthroughCommand) {
	cfg := filepath.Join(dir, "config")
	marker := rand.Text()
	env = append(env, "AGENTAUTH_CONFIG_DIR="+cfg, "AGENTAUTH_STORE=", "NO_COLOR=1", "BROWSER=browser-fetch", "TERM=dumb", walkthroughMarker+"="+marker)
	t.Cleanup(func() { stopMarked(t, marker) })

	addrFile := filepath.Join(dir, "addr")
	srv := exec.Command("agentauth", "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--auto-approve", "--ephemeral", "--log-file", filepath.Join(dir, "serve.log"))
	srv.Env = env
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Signal(os.Interrupt); srv.Wait() })
	addr := waitAddr(t, addrFile)
	runSteps(t, env, dir, variant, main, strings.NewReplacer("127.0.0.1:7777", addr, "/home/you/.config/agentauth", cfg))

	bdir := filepath.Join(dir, "broker")
	if err := os.MkdirAll(bdir, 0o700); err != nil {
		t.Fatal(err)
	}
	runSteps(t, env, bdir, variant, broker, strings.NewReplacer("127.0.0.1:7800", freeAddr(t), "127.0.0.1:7777", freeAddr(t)))
	sdir := filepath.Join(dir, "scripts")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	runSteps(t, env, sdir, variant, scripts, strings.NewReplacer())
	stopMarked(t, marker)
}

// runSteps runs the walkthrough's steps of variant in dir, ports and
// paths replaced, comparing each command's output with the README's.
func runSteps(t *testing.T, env []string, dir, variant string, steps []walkthroughCommand, replace *strings.Replacer) {
	t.Helper()
	for _, c := range steps {
		if c.variant != "" && c.variant != variant {
			continue
		}
		if c.script != "" {
			runScript(t, env, dir, replace.Replace(c.script))
			continue
		}
		line := replace.Replace(c.line)
		got := runOnPTY(t, env, dir, line)
		want := replace.Replace(strings.Join(c.want, "\n"))
		if !looseMatch(want, got) {
			t.Errorf("$ %s\nthe manual shows:\n%s\nthe program prints:\n%s", c.line, strings.Join(c.want, "\n"), got)
		}
	}
}

// runScript runs an sh block with bash -e; what it starts in the
// background (servers) keeps running, marked, until stopMarked.
func runScript(t *testing.T, env []string, dir, script string) {
	t.Helper()
	log, err := os.CreateTemp(dir, "script-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		err = errors.New("still running after 60 s")
	}
	if err != nil {
		out, _ := os.ReadFile(log.Name())
		t.Fatalf("the manual's sh block fails: %v\n%s\noutput:\n%s", err, script, out)
	}
}

// freeAddr is a 127.0.0.1 address with a port free now, for the README's
// fixed ports.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// stopMarked interrupts the processes whose environment holds the
// walkthrough marker and waits (10 s at most) until they are gone.
func stopMarked(t *testing.T, marker string) {
	if left := stopProcesses(walkthroughMarker, marker); len(left) > 0 {
		t.Errorf("processes of the walkthrough left running: %v", left)
	}
}

// waitAddr waits for serve's address file (polling, 30 s at most).
func waitAddr(t *testing.T, path string) string {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("serve wrote no address")
	return ""
}

// runOnPTY runs line with bash on a terminal and returns what the
// terminal showed, spinner frames (erased lines) left out.
func runOnPTY(t *testing.T, env []string, dir, line string) string {
	cmd := exec.Command("bash", "-c", line)
	cmd.Env, cmd.Dir = env, dir
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 400})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, tty); close(done) }()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("$ %s: still running after 60 s", line)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	tty.Close()
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(out.String(), "\r\n", "\n"), "\n") {
		// A spinner redraws its line after \r and ESC[K; what stays on
		// the screen is what follows the last erase.
		if i := strings.LastIndex(l, "\x1b[K"); i >= 0 {
			l = l[i+len("\x1b[K"):]
		}
		if i := strings.LastIndex(l, "\r"); i >= 0 {
			l = l[i+1:]
		}
		if l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

var spaces = regexp.MustCompile(`\s+`)

// looseMatch says whether got is what want quotes: the same text, white
// space aside (the README folds JSON onto one line), … matching anything.
func looseMatch(want, got string) bool {
	parts := strings.Split(spaces.ReplaceAllString(want, ""), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`)
	return re.MatchString(spaces.ReplaceAllString(got, ""))
}

// keyringTestMarker is the environment variable every process of the
// real-keyring test carries, so that one left behind can be found.
const keyringTestMarker = "AGENTAUTH_KEYRING_TEST"

// TestRealKeyring runs testdata/keyring against a real gnome-keyring on a
// private D-Bus session bus (dbus-daemon), with a fresh unlocked login
// keyring: what the mock keyring of the other tests cannot show (a locked
// collection, D-Bus activation, the daemons). Afterwards no process that
// agentauth started may be left. Without dbus-daemon or
// gnome-keyring-daemon it is skipped, visibly, unless
// AGENTAUTH_REQUIRE_KEYRING=1 (set by .ci/run once it installed them).
func TestRealKeyring(t *testing.T) {
	kr := startRealKeyring(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "keyring"),
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			for _, kv := range kr.vars {
				k, v, _ := strings.Cut(kv, "=")
				e.Setenv(k, v)
			}
			e.Setenv("AGENTAUTH_CONFIG_DIR", filepath.Join(e.WorkDir, "config"))
			e.Setenv("AGENTAUTH_STORE", "keyring")
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: cmdsWith(map[string]func(*testscript.TestScript, bool, []string){"keyring-lock": keyringLock}),
	})
	kr.checkNothingLeft(t)
}

// realKeyring is a private D-Bus session bus with an unlocked
// gnome-keyring on it, for tests.
type realKeyring struct {
	// vars are the environment variables that lead to it (and mark the
	// processes that inherit them).
	vars   []string
	marker string
	ours   map[int]bool
}

// startRealKeyring starts dbus-daemon and gnome-keyring-daemon, stopped
// when t ends; it skips t, visibly, when they are not installed, unless
// AGENTAUTH_REQUIRE_KEYRING=1.
func startRealKeyring(t *testing.T) *realKeyring {
	for _, prog := range []string{"dbus-daemon", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("AGENTAUTH_REQUIRE_KEYRING") == "1" {
				t.Fatalf("%s is not installed, and AGENTAUTH_REQUIRE_KEYRING=1", prog)
			}
			t.Skipf("SKIPPED: %s is not installed, so the real-keyring test does not run (install gnome-keyring and dbus; AGENTAUTH_REQUIRE_KEYRING=1 makes this a failure)", prog)
		}
	}
	dir := t.TempDir()
	marker := rand.Text()
	home, run := filepath.Join(dir, "home"), filepath.Join(dir, "run")
	for _, d := range []string{home, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	vars := []string{keyringTestMarker + "=" + marker, "HOME=" + home, "XDG_RUNTIME_DIR=" + run, "DISPLAY=", "WAYLAND_DISPLAY="}
	env := append(os.Environ(), vars...)

	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1")
	bus.Env = env
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon gave no address: %v", err)
	}
	addr = strings.TrimSpace(addr)
	vars = append(vars, "DBUS_SESSION_BUS_ADDRESS="+addr)
	env = append(env, vars[len(vars)-1])

	gk := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	gk.Env = env
	gk.Stdin = strings.NewReader("test-password")
	if err := gk.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gk.Process.Kill(); gk.Wait() })
	waitSecretService(t, addr)

	return &realKeyring{vars: vars, marker: marker, ours: map[int]bool{bus.Process.Pid: true, gk.Process.Pid: true}}
}

// checkNothingLeft fails t when a process other than the bus and the
// keyring carries the marker: one that agentauth started and left (a
// prompter that gnome-keyring had the bus start, and that exits on its
// own, is waited for).
func (kr *realKeyring) checkNothingLeft(t *testing.T) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := markedProcesses(t, kr.marker, kr.ours)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind: %s", strings.Join(left, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdsWith is scriptCmds plus more.
func cmdsWith(more map[string]func(*testscript.TestScript, bool, []string)) map[string]func(*testscript.TestScript, bool, []string) {
	m := maps.Clone(scriptCmds)
	maps.Copy(m, more)
	return m
}

// waitSecretService waits until org.freedesktop.secrets has an owner on
// the bus at addr (polling, 10 s at most).
func waitSecretService(t *testing.T, addr string) {
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var has bool
		if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.secrets").Store(&has); err != nil {
			t.Fatal(err)
		}
		if has {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("gnome-keyring-daemon did not take org.freedesktop.secrets")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keyringLock locks the default collection, as a screen lock or a
// timeout would. Usage: keyring-lock
func keyringLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: keyring-lock")
	}
	conn, err := dbus.Connect(ts.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	ts.Check(err)
	defer conn.Close()
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	obj := conn.Object("org.freedesktop.secrets", "/org/freedesktop/secrets")
	ts.Check(obj.Call("org.freedesktop.Secret.Service.Lock", 0, []dbus.ObjectPath{"/org/freedesktop/secrets/aliases/default"}).Store(&locked, &prompt))
	if len(locked) == 0 {
		ts.Fatalf("nothing was locked")
	}
}

// markedProcesses lists the processes (other than ours) whose environment
// holds the marker, as "PID COMMAND".
func markedProcesses(t *testing.T, marker string, ours map[int]bool) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(keyringTestMarker + "=" + marker + "\x00")
	var left []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || ours[pid] || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(b), string(want)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie: exited, waiting for its parent
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		left = append(left, fmt.Sprintf("%d %s", pid, strings.TrimSpace(string(comm))))
	}
	return left
}
