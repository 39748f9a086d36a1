//go:build unix

package commands

import (
	"context"
	"syscall"
	"testing"
)

// TestInterruptContextListensOnFirstWait: Main's context installs no
// signal handler until something waits on it; then SIGINT cancels it and
// every context made from it.
func TestInterruptContextListensOnFirstWait(t *testing.T) {
	c := &interruptContext{}
	defer c.stop()
	if c.started() != nil || c.Err() != nil || c.Value("k") != nil {
		t.Fatal("listening before anything waited")
	}
	if _, ok := c.Deadline(); ok {
		t.Fatal("a deadline")
	}
	child, cancel := context.WithCancel(c) // waits on c.Done
	defer cancel()
	if c.started() == nil {
		t.Fatal("context.WithCancel did not start listening")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-child.Done()
	if c.Err() != context.Canceled || child.Err() != context.Canceled {
		t.Fatalf("after SIGINT: Err %v, child's %v", c.Err(), child.Err())
	}
}

// TestOfflineCommandsDoNotListen: status without TARGET, completion and
// --version leave the signals alone; status with a TARGET and the other
// commands listen before they start.
func TestOfflineCommandsDoNotListen(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		listen bool
	}{
		{[]string{"status"}, false},
		{[]string{"completion", "bash"}, false},
		{[]string{"--version"}, false},
		{[]string{"status", "--help"}, false},
		{[]string{"status", "http://127.0.0.1:1/mcp"}, true},
		{[]string{"logout", "http://127.0.0.1:1/mcp"}, true},
	} {
		tf := newTestFactory(t, "")
		c := &interruptContext{}
		RunContext(c, tf.Factory, append([]string{"agentauth"}, tc.args...))
		c.stop()
		if got := c.started() != nil; got != tc.listen {
			t.Errorf("%v: listening %v, want %v", tc.args, got, tc.listen)
		}
	}
}
