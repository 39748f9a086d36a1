package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/cpuset"
)

// The replicas mode's layout of processes on CPUs (taskset, util-linux;
// Linux). Replica k runs on CPU k mod C of the C CPUs this program may
// use, from its start, so that its Go runtime sizes GOMAXPROCS to that
// one CPU. While fewer replicas than CPUs are measured, PostgreSQL and
// this program (the load generator) run on the CPUs no measured replica
// has; otherwise they may run on every CPU.

// allowedCPUs lists the CPUs this program may use (none where it cannot
// tell).
func allowedCPUs() []string {
	list, _ := cpuset.Allowed()
	return list
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

// cpuTimes reads each CPU's busy and idle time so far (/proc/stat, in
// USER_HZ = 100 ticks): busy is user, nice, system, irq, softirq and
// steal (time the hypervisor gave to others), idle is idle and iowait.
func cpuTimes() map[string][2]time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	out := map[string][2]time.Duration{}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var t [8]int64
		for k := range t {
			t[k], _ = strconv.ParseInt(f[k+1], 10, 64)
		}
		busy := t[0] + t[1] + t[2] + t[5] + t[6] + t[7]
		idle := t[3] + t[4]
		out[strings.TrimPrefix(f[0], "cpu")] = [2]time.Duration{time.Duration(busy) * 10 * time.Millisecond, time.Duration(idle) * 10 * time.Millisecond}
	}
	return out
}

// machine is what the CPUs did during a run, in CPUs (seconds per
// second): busy with anything, idle; by CPU.
type machine map[string][2]float64

func since(before map[string][2]time.Duration, wall time.Duration) machine {
	m := machine{}
	for cpu, t := range cpuTimes() {
		b := before[cpu]
		m[cpu] = [2]float64{(t[0] - b[0]).Seconds() / wall.Seconds(), (t[1] - b[1]).Seconds() / wall.Seconds()}
	}
	return m
}

// sum adds the busy and idle CPUs of cpus (all when nil).
func (m machine) sum(cpus []string) (busy, idle float64) {
	for cpu, t := range m {
		if cpus == nil || slices.Contains(cpus, cpu) {
			busy += t[0]
			idle += t[1]
		}
	}
	return busy, idle
}
