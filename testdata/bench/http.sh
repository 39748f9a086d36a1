#!/bin/sh
# Benchmark: the HTTP face (POST /mcp, whoami) against a Go reference
# server in the same run (issue 18).
#
# The reference (testdata/bench/perf, -reference) is net/http + go-jose
# verifying the same ES256 access token (from serve's embedded issuer)
# against the issuer's JWKS, with verified claims cached in a
# map[sha256]claims: the ceiling of a cached verifier. perf drives both
# from CONNS keep-alive connections (default 64, like wrk -c64) for ROUNDS
# interleaved rounds of DURATION each (agentauth, reference, agentauth, …)
# and prints the medians of throughput, p50, p99 and server CPU per request
# (/proc/PID/stat), each with the reference's and the ratio. Loopback only;
# stops by itself; never asserts a time. Quote ratios, not absolute numbers:
# the load generator shares the machine.
#
# Usage: testdata/bench/http.sh [DURATION [ROUNDS [CONNS]]]   (5s 5 64)
set -eu
duration=${1:-5s}
rounds=${2:-5}
conns=${3:-64}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$tmp/agentauth" -mode http -duration "$duration" -rounds "$rounds" -conns "$conns"
