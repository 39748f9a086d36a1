package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The replicas mode's layout of processes on CPUs (taskset, util-linux;
// Linux). Replica k runs on CPU k mod C of the C CPUs this program may
// use, from its start, so that its Go runtime sizes GOMAXPROCS to that
// one CPU. While fewer replicas than CPUs are measured, PostgreSQL and
// this program (the load generator) run on the CPUs no measured replica
// has; otherwise they may run on every CPU.

// allowedCPUs lists the CPUs this program may use (/proc/self/status).
func allowedCPUs() []string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return expandCPUList(strings.TrimSpace(list))
		}
	}
	return nil
}

// expandCPUList expands a CPU list as the kernel writes it ("0-3,8").
func expandCPUList(list string) []string {
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

// pinPID moves every thread of process pid to cpus (taskset -a -p).
func pinPID(pid int, cpus []string) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", strings.Join(cpus, ","), strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset %d: %v: %s", pid, err, out)
	}
	return nil
}

// pinPostgres moves the PostgreSQL server whose socket directory is dir
// (the postmaster and its children; the backends it forks later inherit
// the postmaster's CPUs) and this program to cpus.
func pinPostgres(dir string, cpus []string) error {
	if err := pinPID(os.Getpid(), cpus); err != nil {
		return err
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var master string
	parent := map[string]string{}
	for _, path := range procs {
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte("(postgres)")) {
			continue
		}
		pid := filepath.Base(filepath.Dir(path))
		parent[pid] = strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))[1]
		if cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "cmdline")); bytes.Contains(cmd, []byte("-k\x00"+dir+"\x00")) || bytes.Contains(cmd, []byte("-k "+dir+" ")) {
			master = pid
		}
	}
	if master == "" {
		return fmt.Errorf("no PostgreSQL server on %s", dir)
	}
	for pid, ppid := range parent {
		if pid == master || ppid == master {
			n, _ := strconv.Atoi(pid)
			if err := pinPID(n, cpus); err != nil {
				return err
			}
		}
	}
	return nil
}
