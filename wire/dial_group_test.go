//go:build unix

package wire

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStdioChildGroupEnds: a stdio target's helper (a grandchild that
// ignores stdin's end, as an agent's browser sign-in server does) does
// not outlive Close: the child's whole process group is ended.
func TestStdioChildGroupEnds(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	target := "stdio:sh -c 'sleep 300 & echo $! > " + pidFile + "; cat'"
	c, err := DialTarget(context.Background(), target, DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		t.Fatal("the child did not start its helper")
	}
	start := time.Now()
	c.Close()
	if syscall.Kill(pid, 0) == nil && !zombie(pid) {
		t.Fatalf("helper %d still runs after Close", pid)
	}
	if d := time.Since(start); d > 3*stdioCloseGrace {
		t.Errorf("Close took %v", d)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
