#!/bin/sh
# Benchmark: sustained refresh on each state store, beside oidc-provider.
#
# perf (-mode refresh) starts one `agentauth serve` per store (memory:
# --ephemeral; SQLite: --data-dir; PostgreSQL: --database on a throwaway
# server of Debian's postgresql package, skipped without it) and
# oidc-provider (testdata/bench/oidc: pinned in package-lock.json, one
# public client whose refresh tokens rotate, default in-memory adapter,
# opaque access tokens), logs in CHAINS refresh chains on each, then
# rotates them as fast as it can for ROUNDS interleaved rounds of
# DURATION per server, each round in ten slices of a tenth of DURATION,
# the servers in turn (memory, sqlite, postgres, oidc-provider, memory,
# …), so that a passing slowdown of the machine falls on every server's
# round alike rather than on one server's whole round. Access tokens live
# an hour, so every token issued during the run is still alive at its
# end: a cost that grows with the tokens issued or revoked shows as a
# falling rate. It prints each server's rate by round,
# the last round against the first, CPU per refresh, and each store
# against oidc-provider over the whole run. Loopback only; stops by
# itself; never asserts a time.
#
# Usage: testdata/bench/refresh.sh [DURATION [ROUNDS [CHAINS [STORES]]]]
#        (10s 6 16 memory,sqlite,postgres)
set -eu
duration=${1:-10s}
rounds=${2:-6}
chains=${3:-16}
stores=${4:-memory,sqlite,postgres}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

oidc=
if command -v node >/dev/null && command -v npm >/dev/null; then
	(cd testdata/bench/oidc && npm ci --no-audit --no-fund --silent) && oidc=testdata/bench/oidc
else
	echo "refresh.sh: no node/npm: oidc-provider is not measured" >&2
fi
CGO_ENABLED=0 go build -o "$tmp/agentauth" .
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$tmp/agentauth" -mode refresh -duration "$duration" -rounds "$rounds" -conns "$chains" -stores "$stores" -oidc "$oidc"
