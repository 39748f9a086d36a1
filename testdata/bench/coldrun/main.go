// Command coldrun times cold runs of programs, interleaved: each round runs
// every program once, in turn (A B C A B C …), so that a change in the
// machine's load touches them alike. For each program it prints one line,
//
//	NAME WALL_MS CPU_MS FAULTS
//
// the medians of the wall time from fork to exit, the CPU time (user +
// system, all threads) and the minor page faults, the last two from the
// child's rusage (wait4). Unlike timing with date +%s%N in a shell loop,
// no other process's start-up is inside the measured interval.
//
// Usage: coldrun RUNS ARGS -- NAME=PATH... (ARGS: the programs' arguments,
// space-separated; each runs with stdout and stderr discarded).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentauth/agentauth/internal/benchstat"
)

func main() {
	if len(os.Args) < 5 || os.Args[3] != "--" {
		fmt.Fprintln(os.Stderr, "usage: coldrun RUNS ARGS -- NAME=PATH...")
		os.Exit(2)
	}
	runs, err := strconv.Atoi(os.Args[1])
	if err != nil || runs < 1 {
		fmt.Fprintln(os.Stderr, "coldrun: RUNS must be a positive number")
		os.Exit(2)
	}
	args := strings.Fields(os.Args[2])
	type program struct {
		name, path        string
		wall, cpu, faults []float64
	}
	var progs []*program
	for _, a := range os.Args[4:] {
		name, path, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "coldrun: %q is not NAME=PATH\n", a)
			os.Exit(2)
		}
		progs = append(progs, &program{name: name, path: path})
	}
	for range runs {
		for _, p := range progs {
			cmd := exec.Command(p.path, args...)
			start := time.Now()
			err := cmd.Run()
			wall := time.Since(start)
			if _, exited := err.(*exec.ExitError); err != nil && !exited {
				fmt.Fprintf(os.Stderr, "coldrun: %s: %v\n", p.name, err)
				os.Exit(1)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			p.wall = append(p.wall, benchstat.Millis(wall))
			p.cpu = append(p.cpu, benchstat.Millis(time.Duration(ru.Utime.Nano()+ru.Stime.Nano())))
			p.faults = append(p.faults, float64(ru.Minflt))
		}
	}
	for _, p := range progs {
		fmt.Printf("%s %.2f %.2f %.0f\n", p.name, benchstat.Median(p.wall), benchstat.Median(p.cpu), benchstat.Median(p.faults))
	}
}
