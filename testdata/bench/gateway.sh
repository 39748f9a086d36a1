#!/bin/sh
# Benchmark: tools/call through serve's gateway (`serve --backend URL`,
# bearer token checked, arguments validated, answer scrubbed) against the
# same MCP Go SDK backend called directly, and against net/http's
# httputil.ReverseProxy in front of it (checking nothing), and against the
# floor: a gateway that only forwards, on net/http's server with serve's
# timeouts (serve's CPU per call against it is what serve's own work
# costs), from CONNS keep-alive connections in ROUNDS interleaved rounds
# of DURATION each; prints the medians of throughput, p50 and p99 and
# serve's and the reverse proxy's ratios to direct, the CPU
# per call of serve (or the proxy, or the floor), the backend and the load generator for each target,
# and the count of serve's audit records (serve runs at its default log
# level, info, writing one per call to a log file) (testdata/bench/gateway).
# It runs twice, in two layouts of the processes on the CPUs: "shared", every
# process on every CPU, where serve's CPU is taken from the backend's and
# the throughput ratio follows the CPU each call costs all three; and
# "separate" (taskset, 2 CPUs or more), the backend alone on one CPU, serve
# (or the reverse proxy) and the load generator on the others, as a server
# behind a gateway keeps its own CPU in a deployment: what the hop costs its
# callers. Loopback only; never asserts a time.
#
# With REF set to a commit (REF=17b5d1e), that build of agentauth runs too,
# as a second serve, a fourth target interleaved with the others: its CPU
# and allocations per call beside this build's, and their ratios.
#
# Usage: [REF=COMMIT] testdata/bench/gateway.sh [DURATION [ROUNDS [CONNS]]]   (5s 5 64)
set -eu
duration=${1:-5s}
rounds=${2:-5}
conns=${3:-64}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/gateway-bench" ./testdata/bench/gateway
ref=
if [ -n "${REF:-}" ]; then
	mkdir "$tmp/ref"
	git archive "$REF" | tar -x -C "$tmp/ref"
	(cd "$tmp/ref" && CGO_ENABLED=0 go build -o "$tmp/agentauth-ref" .)
	ref="$tmp/agentauth-ref"
	echo "reference: agentauth at $(git rev-parse --short "$REF")"
fi
"$tmp/gateway-bench" -agentauth "$tmp/agentauth" -reference "$ref" -duration "$duration" -rounds "$rounds" -conns "$conns" -layout shared
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
	echo
	"$tmp/gateway-bench" -agentauth "$tmp/agentauth" -reference "$ref" -duration "$duration" -rounds "$rounds" -conns "$conns" -layout separate
else
	echo "layout separate: skipped (it needs taskset and 2 CPUs or more)"
fi
