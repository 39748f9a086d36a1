//go:build unix

package wire

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SetProcessGroup makes cmd (not yet started) the leader of a process
// group of its own, so that what it starts can be ended with it.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// TerminateProcessGroup sends SIGTERM to process group pgid.
func TerminateProcessGroup(pgid int) error {
	return syscall.Kill(-pgid, syscall.SIGTERM)
}

// groupAlive reports whether a process of group pgid is running: a
// zombie (exited, its parent gone, waiting for an init that may never
// reap it) does not count. Without /proc, any member counts.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(procs) == 0 {
		return true
	}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and ")".
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if i >= 0 && len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// endGroup ends process group pgid: SIGTERM, then SIGKILL after
// stdioCloseGrace if any of it remains; done, when not nil, is the
// leader's Wait, received before returning.
func endGroup(pgid int, done <-chan error) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		if done != nil {
			<-done
		}
		return // no process of the group is left
	}
	deadline := time.After(stdioCloseGrace)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			done = nil
		case <-tick.C:
			if done == nil && !groupAlive(pgid) {
				return
			}
			continue
		case <-deadline:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			if done != nil {
				<-done
			}
			return
		}
	}
}
