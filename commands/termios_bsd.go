//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package commands

import "golang.org/x/sys/unix"

// The ioctls that read and write a terminal's settings (tcgetattr,
// tcsetattr TCSANOW).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
