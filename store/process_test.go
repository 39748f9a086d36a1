package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// childEnv switches the test binary into a child process (see TestMain);
// its value is the mode. The child works on the file store in
// $STORE_TEST_DIR.
const childEnv = "AGENTAUTH_STORE_TEST_CHILD"

// lockedKey is the key the lock children contend for.
var lockedKey = Key{Resource: "https://locked.example", Issuer: "https://issuer.example", SchemeID: "dev"}

func child(mode string) int {
	ctx := context.Background()
	dir := os.Getenv("STORE_TEST_DIR")
	n, _ := strconv.Atoi(os.Getenv("STORE_TEST_N"))
	s := newFile(dir)
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "put": // n puts of distinct credentials
		for i := range n {
			if err := s.Put(ctx, testCred(fmt.Sprintf("https://%s.example/%d", os.Getenv("STORE_TEST_PREFIX"), i), "dev")); err != nil {
				return fail(err)
			}
		}
	case "count": // n increments of a counter file, each under Lock
		counter := filepath.Join(dir, "counter")
		for range n {
			unlock, err := s.Lock(ctx, lockedKey)
			if err != nil {
				return fail(err)
			}
			b, _ := os.ReadFile(counter)
			v, _ := strconv.Atoi(string(b))
			if err := os.WriteFile(counter, []byte(strconv.Itoa(v+1)), 0o600); err != nil {
				return fail(err)
			}
			unlock()
		}
	case "trylock": // exit 3 when the lock is held elsewhere
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		unlock, err := s.Lock(short, lockedKey)
		if errors.Is(err, context.DeadlineExceeded) {
			return 3
		}
		if err != nil {
			return fail(err)
		}
		unlock()
	case "hold-and-die": // take the lock, say so, and exit holding it
		if _, err := s.Lock(ctx, lockedKey); err != nil {
			return fail(err)
		}
		fmt.Println("locked")
	case "put-forever": // rewrite the store until killed
		for i := 0; ; i++ {
			c := testCred("https://crash.example", "dev")
			c.AccessToken = strings.Repeat("x", 4096) + strconv.Itoa(i)
			if err := s.Put(ctx, c); err != nil {
				return fail(err)
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	default:
		return fail(fmt.Errorf("unknown child mode %q", mode))
	}
	return 0
}

func childCmd(t *testing.T, mode, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "STORE_TEST_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// startWriter starts a child that rewrites the store in dir until it is
// killed, and returns once the child has written once.
func startWriter(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := childCmd(t, "put-forever", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("child said %q, %v", line, err)
	}
	return cmd
}

// runChildren runs n children of mode at once and fails on any error.
func runChildren(t *testing.T, n int, mode, dir string, env func(i int) []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		cmd := childCmd(t, mode, dir, env(i)...)
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("child %d (%s): %v", i, mode, err)
		}
	}
}

func TestConcurrentPutsFromProcesses(t *testing.T) {
	const procs, each = 6, 10
	dir := filepath.Join(t.TempDir(), "config")
	runChildren(t, procs, "put", dir, func(i int) []string {
		return []string{"STORE_TEST_PREFIX=p" + strconv.Itoa(i), "STORE_TEST_N=" + strconv.Itoa(each)}
	})
	list, err := newFile(dir).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != procs*each {
		t.Errorf("List has %d credentials after %d puts from %d processes", len(list), procs*each, procs)
	}
}

// TestLockExcludesProcesses: increments of a plain file, each under Lock,
// from several processes at once, add up.
func TestLockExcludesProcesses(t *testing.T) {
	const procs, each = 4, 50
	dir := t.TempDir()
	runChildren(t, procs, "count", dir, func(int) []string { return []string{"STORE_TEST_N=" + strconv.Itoa(each)} })
	b, err := os.ReadFile(filepath.Join(dir, "counter"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != strconv.Itoa(procs*each) {
		t.Errorf("counter = %s, want %d: increments were lost, so the lock did not exclude", got, procs*each)
	}
}

func TestLockHeldByThisProcessBlocksAnother(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	unlock, err := newFile(dir).Lock(context.Background(), lockedKey)
	if err != nil {
		t.Fatal(err)
	}
	err = childCmd(t, "trylock", dir).Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child trylock while held: %v, want exit 3 (lock busy)", err)
	}
	unlock()
	if err := childCmd(t, "trylock", dir).Run(); err != nil {
		t.Fatalf("child trylock after unlock: %v", err)
	}
}

func TestLockReleasedWhenHolderDies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	out, err := childCmd(t, "hold-and-die", dir).Output()
	if err != nil || string(out) != "locked\n" {
		t.Fatalf("child: %q, %v", out, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlock, err := newFile(dir).Lock(ctx, lockedKey)
	if err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	unlock()
}

// TestCrashDuringWrites kills a process that rewrites the store in a loop:
// whatever moment it dies at, the file still parses, and the next write
// (whose lock the dead process held) succeeds.
func TestCrashDuringWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	cmd := startWriter(t, dir)
	// Let it write a few more times, by waiting for our own writes to pass.
	s := newFile(dir)
	for i := range 3 {
		mustPut(t, s, testCred(fmt.Sprintf("https://parent.example/%d", i), "dev"))
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	list, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List after crash: %v", err)
	}
	if len(list) != 4 {
		t.Errorf("List after crash = %v, want the crash credential and 3 of ours", keysOf(list))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Put(ctx, testCred("https://after.example", "dev")); err != nil {
		t.Fatalf("Put after crash: %v", err)
	}
}
