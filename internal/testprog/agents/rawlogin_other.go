//go:build !linux

package agents

import (
	"fmt"
	"os"
)

// rawLogin needs Linux's terminal ioctls (rawlogin_linux.go).
func rawLogin(string) {
	fmt.Fprintln(os.Stderr, "raw login: Linux only")
	os.Exit(1)
}
