//go:build !unix

package benchstat

import "time"

// SelfCPU is not measured outside Unix: 0.
func SelfCPU() time.Duration { return 0 }
