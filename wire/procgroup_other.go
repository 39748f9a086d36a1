//go:build !unix

package wire

import (
	"os"
	"os/exec"
)

// SetProcessGroup: process groups are a unix notion; the child's own
// process is what is ended (endGroup).
func SetProcessGroup(*exec.Cmd) {}

// TerminateProcessGroup ends process pid (no group here).
func TerminateProcessGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// endGroup ends process pid, whose children are not tracked here; done,
// when not nil, is its Wait, received before returning.
func endGroup(pid int, done <-chan error) {
	_ = TerminateProcessGroup(pid)
	if done != nil {
		<-done
	}
}
