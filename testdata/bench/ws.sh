#!/bin/sh
# Benchmark: WebSocket echo at CONNS connections (default 1,000) against a
# coder/websocket reference in the same run (issue 18).
#
# agentauth: each connection initializes and authenticates with the same
# ES256 access token, then runs a closed loop of echo calls (a gated
# method: one authenticated JSON-RPC call per message). The reference
# (testdata/bench/perf, -reference) verifies the token of the upgrade with
# go-jose, caches the claims by the token's SHA-256, and answers each
# JSON-RPC message after checking the cached grant. Prints the medians of
# round trips per second and server CPU per message over ROUNDS interleaved
# rounds of DURATION, with the ratio. Loopback only; stops by itself.
#
# Usage: testdata/bench/ws.sh [DURATION [ROUNDS [CONNS]]]   (3s 5 1000)
set -eu
duration=${1:-3s}
rounds=${2:-5}
conns=${3:-1000}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$tmp/agentauth" -mode ws -duration "$duration" -rounds "$rounds" -conns "$conns"
