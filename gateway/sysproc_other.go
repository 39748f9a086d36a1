//go:build !linux

package gateway

import "os/exec"

// setProcessGroup: process groups are set up on Linux only.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the backend process (its children are not tracked
// outside Linux).
func signalGroup(cmd *exec.Cmd, _ bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
