// Package cpuset tells which CPUs a benchmark program may use, for the
// layouts that pin processes to CPUs with taskset (testdata/bench/perf's
// replicas mode, testdata/bench/gateway's separate layout). Linux only.
// Only they import it; nothing the agentauth binary runs depends on it.
package cpuset

import (
	"os"
	"strconv"
	"strings"
)

// Allowed lists the CPUs this process may use, from Cpus_allowed_list in
// /proc/self/status (an error where there is no such file).
func Allowed() ([]string, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return expand(strings.TrimSpace(list)), nil
		}
	}
	return nil, nil
}

// expand expands a CPU list as the kernel writes it ("0-3,8").
func expand(list string) []string {
	var cpus []string
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil {
			continue
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, strconv.Itoa(c))
		}
	}
	return cpus
}
