#!/bin/sh
# Benchmark: tools/call through serve's gateway (`serve --backend URL`,
# bearer token checked, arguments validated, answer scrubbed) against the
# same MCP Go SDK backend called directly, and against net/http's
# httputil.ReverseProxy in front of it (checking nothing: the floor of a Go
# gateway), from CONNS keep-alive connections in ROUNDS interleaved rounds
# of DURATION each; prints the medians of throughput, p50 and p99 and
# serve's and the reverse proxy's ratios to direct, the CPU
# per call of serve (or the proxy), the backend and the load generator for each target,
# and the count of serve's audit records (serve runs at its default log
# level, info, writing one per call to a log file) (testdata/bench/gateway).
# Loopback only; never asserts a time.
#
# Usage: testdata/bench/gateway.sh [DURATION [ROUNDS [CONNS]]]   (5s 5 64)
set -eu
duration=${1:-5s}
rounds=${2:-5}
conns=${3:-64}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/gateway-bench" ./testdata/bench/gateway
"$tmp/gateway-bench" -agentauth "$tmp/agentauth" -duration "$duration" -rounds "$rounds" -conns "$conns"
