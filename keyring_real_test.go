package main

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/rogpeppe/go-internal/testscript"
)

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
