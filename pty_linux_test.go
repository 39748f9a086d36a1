package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestTerminalMethodOnPTY runs `agentauth authenticate --method` on a
// pseudo-terminal, as a user would on theirs, with a login command that
// never finishes: it puts the terminal in raw mode, hides the cursor and
// starts a helper (acp-meta-agent -methods raw, as pi's login screen).
// While it runs it is the terminal's foreground job, in a process group
// of its own; when --timeout passes, agentauth exits 4 naming the step,
// no process of the login command is left (the helper included), the
// terminal's settings are those from before, and the cursor is shown
// again.
func TestTerminalMethodOnPTY(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cmd := exec.Command("agentauth", "authenticate", "--timeout", "5s", "--method", "login", "stdio:acp-meta-agent -methods raw -pids "+pids)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "AGENTAUTH_STORE=file", "NO_COLOR=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// agentauth leads a session whose controlling terminal is the pty,
	// as a login shell's job does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var mu sync.Mutex
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 4 {
		t.Errorf("agentauth ended with %v, want exit status 4", err)
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	// With the last of the terminal's side closed, reading ends (EIO)
	// once what agentauth wrote is drained.
	tty.Close()
	<-copied
	mu.Lock()
	out := screen.String()
	mu.Unlock()
	for _, want := range []string{
		"Running the agent's login command for login: acp-meta-agent --raw-login " + pids,
		"--timeout 5s ran out during the sign-in; the agent was stopped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal shows no %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "\x1b[?25l"), strings.LastIndex(out, "\x1b[?25h"); i < 0 || j < i {
		t.Errorf("the cursor the login command hid (at %d) is not shown again (at %d):\n%q", i, j, out)
	}

	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatalf("the login command did not start (it writes its pids once its terminal is raw): %v\n%s", err, out)
	}
	var f [4]int
	for i, s := range strings.Fields(string(b)) {
		if i < 4 {
			f[i], _ = strconv.Atoi(s)
		}
	}
	login, helper, pgid, fg := f[0], f[1], f[2], f[3]
	if pgid != login || fg != pgid || pgid == cmd.Process.Pid {
		t.Errorf("the login command ran in group %d (its pid %d) while the terminal's foreground group was %d and agentauth's %d: want a group of its own in the foreground", pgid, login, fg, cmd.Process.Pid)
	}
	for _, pid := range []int{login, helper} {
		if alive(pid) {
			t.Errorf("process %d of the login command outlived agentauth", pid)
		}
	}

	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag || after.Cflag != before.Cflag {
		t.Errorf("the terminal's settings were not restored: lflag %#x iflag %#x, want %#x %#x", after.Lflag, after.Iflag, before.Lflag, before.Iflag)
	}
	if after.Lflag&unix.ICANON == 0 || after.Lflag&unix.ECHO == 0 {
		t.Errorf("the terminal is left in raw mode (lflag %#x)", after.Lflag)
	}
}

// alive reports whether pid is a running process (not a zombie), polling
// up to 5 s for the signals sent to be delivered.
func alive(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); ; {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}
