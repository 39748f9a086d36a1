//go:build !unix

package gateway

import "time"

// processCPU is not measured outside Unix.
func processCPU() time.Duration { return 0 }
