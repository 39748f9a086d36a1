#!/bin/sh
# Benchmark: memory and rate of client_credentials grants at volume.
#
# perf (-mode grants) starts one `agentauth serve` per store (memory:
# --ephemeral; SQLite: --data-dir; PostgreSQL when named, as in
# exchange.sh), one after the other, registers CLIENTS confidential
# clients and has each ask for tokens in a closed loop until GRANTS grants
# were issued, every token living an hour (serve's default). It prints
# the rate and serve's CPU per grant for each tenth of the grants, the
# last tenth's rate against the first's, and serve's RSS after the first
# tenth and at the end. Loopback only; stops by itself; never asserts a
# time. AGENTAUTH names another agentauth binary to measure (an earlier
# build, for a side-by-side run).
#
# Usage: testdata/bench/grants.sh [GRANTS [CLIENTS [STORES]]]
#        (1000000 16 memory,sqlite)
set -eu
grants=${1:-1000000}
clients=${2:-16}
stores=${3:-memory,sqlite}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

bin=${AGENTAUTH:-}
if [ -z "$bin" ]; then
	CGO_ENABLED=0 go build -o "$tmp/agentauth" .
	bin=$tmp/agentauth
fi
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$bin" -mode grants -grants "$grants" -conns "$clients" -stores "$stores"
