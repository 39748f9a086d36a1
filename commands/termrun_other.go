//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package commands

import (
	"context"
	"os"
	"os/exec"

	"github.com/agentauth/agentauth/client"
)

// runOnTerminal runs cmd on the terminal tty in a process group of its own
// that ends with it; job control and the terminal's settings are handled
// only where agentauth knows them (termrun_unix.go).
func runOnTerminal(ctx context.Context, cmd *exec.Cmd, tty, out *os.File) (stopped bool, err error) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, out, out
	err = client.RunInGroup(ctx, cmd)
	return ctx.Err() != nil, err
}
