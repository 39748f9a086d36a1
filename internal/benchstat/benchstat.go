// Package benchstat is what the benchmark programs under testdata/bench
// and the packages' benchmarks share: latency percentiles, the median of
// per-round figures, and CPU time (of this process, or of a server it
// started). Only they import it; nothing the agentauth binary runs
// depends on it.
package benchstat

import (
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 to 100) of latencies, in any
// order: the latency at rank ⌊(n−1)·p/100⌋ of the n sorted (0-based), so
// p 0 is the fastest and p 100 the slowest; 0 when there are none.
func Percentile(latencies []time.Duration, p int) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	s := slices.Clone(latencies)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// Millis is d in milliseconds, to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Median is the median of xs (the mean of the middle two when their number
// is even); 0 when there are none.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
