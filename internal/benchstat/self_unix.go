//go:build unix

package benchstat

import (
	"syscall"
	"time"
)

// SelfCPU is the calling process's user and system time so far
// (getrusage(2)): a benchmark figure that other load on the machine
// disturbs less than wall time.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
