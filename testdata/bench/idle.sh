#!/bin/sh
# Benchmark: memory per idle authenticated WebSocket connection at CONNS
# connections (default 10,000), against the coder/websocket reference in
# the same run (issue 18).
#
# Each server gets one connection first (keys and caches), then CONNS
# connections, each initialized and authenticated (agentauth) or upgraded
# with the bearer token (reference); perf prints the growth of the
# server's VmRSS (/proc/PID/status, Linux only) divided by CONNS, in KiB.
# Every connection needs a file descriptor on both ends: the soft limit is
# raised to the hard one, and CONNS must stay below it (ulimit -Hn).
# Loopback only; stops by itself.
#
# Usage: testdata/bench/idle.sh [CONNS]   (10000)
set -eu
conns=${1:-10000}
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -le $((conns + 100)) ]; then
	echo "idle.sh: $conns connections need more than $(ulimit -n) file descriptors (ulimit -Hn); pass fewer" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$tmp/agentauth" -mode idle -conns "$conns"
