#!/bin/sh
# Benchmark: a cold burst of one token over CONNS connections (default
# 1,000) at once (issue 18).
#
# A fresh `agentauth serve --log-level debug`; CONNS HTTP connections
# are opened first, then all POST /mcp with the same new access token at
# once; then CONNS WebSocket connections, initialized, all authenticate
# with another new token at once. perf counts the token validations serve
# ran in each burst (its debug log's "token validated" lines: a signature
# check, or an introspection) — the reference figure is 1, the first
# validation, which the others wait for — and prints the burst's wall time
# and serve's CPU. Loopback only; stops by itself.
#
# Usage: testdata/bench/burst.sh [CONNS]   (1000)
set -eu
conns=${1:-1000}
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$tmp/agentauth" -mode burst -conns "$conns"
