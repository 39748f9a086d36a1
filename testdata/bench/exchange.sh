#!/bin/sh
# Benchmark: the authorization code exchange on each state store.
#
# perf (-mode exchange) starts one `agentauth serve` per store (memory:
# --ephemeral; SQLite: --data-dir; PostgreSQL: --database on a throwaway
# server of Debian's postgresql package over its Unix socket, skipped
# without it); CLIENTS clients each run auto-approved code grants (GET
# /authorize, then POST /token) for ROUNDS interleaved rounds of DURATION
# per store. It prints the median rate of exchanges, each store against
# memory (round by round too), and the median p50 and p99 latency of POST
# /token. Loopback only; stops by itself; never asserts a time.
#
# Usage: testdata/bench/exchange.sh [DURATION [ROUNDS [CLIENTS [STORES]]]]
#        (5s 5 16 memory,sqlite,postgres)
set -eu
duration=${1:-5s}
rounds=${2:-5}
clients=${3:-16}
stores=${4:-memory,sqlite,postgres}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$tmp/agentauth" -mode exchange -duration "$duration" -rounds "$rounds" -conns "$clients" -stores "$stores"
