//go:build unix

package issuer_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the test process has used:
// a benchmark figure that other load on the machine disturbs less than
// wall time. (A PostgreSQL server's own time is not counted.)
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
