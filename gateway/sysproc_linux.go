package gateway

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a stdio backend in its own process group, so that
// ending it ends what it started (npx starts node), and has the kernel
// kill it if serve dies without ending it (PR_SET_PDEATHSIG).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends SIGTERM, or SIGKILL, to the backend's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}
