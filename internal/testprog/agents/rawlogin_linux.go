package agents

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"
)

// rawLogin is a full-screen login command that never finishes: it puts
// its terminal (stdin) in raw mode and hides the cursor, as pi's login
// screen does, starts a helper, writes "pid helper pgid tpgid" to file
// (its process group, and the terminal's foreground group) and waits.
func rawLogin(file string) {
	t, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "raw login: no terminal:", err)
		os.Exit(1)
	}
	t.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
	t.Iflag &^= unix.ICRNL | unix.IXON
	if err := unix.IoctlSetTermios(0, unix.TCSETS, t); err != nil {
		fmt.Fprintln(os.Stderr, "raw login:", err)
		os.Exit(1)
	}
	fmt.Print("\x1b[?25lLog in: ")
	helper := exec.Command("acp-meta-agent", "--helper")
	if err := helper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "raw login:", err)
		os.Exit(1)
	}
	tpgid, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	os.WriteFile(file+".tmp", fmt.Appendf(nil, "%d %d %d %d\n", os.Getpid(), helper.Process.Pid, unix.Getpgrp(), tpgid), 0o600)
	os.Rename(file+".tmp", file)
	time.Sleep(time.Hour)
}
