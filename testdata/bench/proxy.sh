#!/bin/sh
# Benchmark: the latency agentauth proxy adds to a tools/call, against a
# direct HTTP client of the same server in the same run
# (testdata/bench/proxylat): whoami on agentauth serve's /mcp over
# loopback, CALLS sequential calls per client per round, ROUNDS
# interleaved rounds (direct, proxy, direct, …); it prints p50 and p99 per
# round and client, and the medians with the p50 the proxy adds. Loopback
# only; never asserts a time.
#
# Usage: testdata/bench/proxy.sh [CALLS [ROUNDS]]   (500 5)
set -eu
calls=${1:-500}
rounds=${2:-5}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/proxylat" ./testdata/bench/proxylat
"$tmp/proxylat" -agentauth "$tmp/agentauth" -calls "$calls" -rounds "$rounds"
