//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package commands

import (
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentauth/agentauth/wire"
)

// runOnTerminal runs cmd (not yet started) on the terminal tty, as a shell
// runs a job (POSIX.1-2017 XBD 11.1.2 "Process Groups", tcsetpgrp): in a
// process group of its own, made the terminal's foreground group so that
// the terminal's input and Ctrl-C reach the command alone; the terminal's
// settings (termios) are saved before and restored after, so a login
// command that is stopped in raw mode does not leave the terminal so; when
// ctx ends (--timeout, SIGTERM), SIGTERM and then, 2 s later, SIGKILL go to
// the whole group, whatever the command started. When agentauth is not in
// the terminal's foreground (started with &), the group stays in the
// background and only the settings are restored. The command's output
// goes to out, agentauth's stderr (stdout carries data only). stopped
// reports that ctx ended the command.
func runOnTerminal(ctx context.Context, cmd *exec.Cmd, tty, out *os.File) (stopped bool, err error) {
	fd := int(tty.Fd())
	saved, terr := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if terr == nil {
		defer func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, saved) }()
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, out, out
	fg, ferr := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	foreground := ferr == nil && fg == unix.Getpgrp()
	if foreground {
		// The child makes its group the foreground one before exec (its
		// signals are blocked then, so SIGTTOU does not stop it).
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: fd}
	} else {
		wire.SetProcessGroup(cmd)
	}
	cmd.Cancel = func() error { return wire.TerminateProcessGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return false, err
	}
	err = cmd.Wait()
	stopped = ctx.Err() != nil
	wire.EndProcessGroup(cmd.Process.Pid)
	if foreground {
		takeTerminalBack(fd)
	}
	if _, err := unix.IoctlGetTermios(int(out.Fd()), ioctlGetTermios); stopped && err == nil {
		// A full-screen command ended by a signal leaves the cursor
		// hidden (DECTCEM): show it again.
		io.WriteString(out, "\x1b[?25h")
	}
	return stopped, err
}

// takeTerminalBack makes agentauth's process group the terminal's
// foreground group again. A background process that calls tcsetpgrp is
// sent SIGTTOU, which would stop it: it is ignored for the call.
func takeTerminalBack(fd int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
}
