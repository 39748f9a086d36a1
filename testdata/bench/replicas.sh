#!/bin/sh
# Benchmark: serve replicas sharing one PostgreSQL.
#
# perf (-mode replicas) starts a throwaway PostgreSQL (Debian's postgresql
# package, over its Unix socket; skipped without it) and REPLICAS `agentauth
# serve --database` replicas publishing one issuer origin (net/http's
# reverse proxy stands in for the load balancer). With two replicas or
# more it first times REVOCATIONS revocations: a token used at replica B,
# revoked at replica A (RFC 7009), then used at B in a closed loop until B
# refuses it; it prints the time from A's answer to B's first refusal
# (p50, p99, max) and how often B still accepted the token after A's
# answer. Then, for 1 to REPLICAS replicas, CLIENTS confidential clients,
# spread over the replicas, run client_credentials grants for DURATION:
# grants/s, CPU per grant of the replicas and of PostgreSQL, RSS and
# PostgreSQL connections per replica. Loopback only; stops by itself;
# never asserts a time. AGENTAUTH names another agentauth binary.
#
# Usage: testdata/bench/replicas.sh [DURATION [REPLICAS [CLIENTS [REVOCATIONS]]]]
#        (5s 3 16 100)
set -eu
duration=${1:-5s}
replicas=${2:-3}
clients=${3:-16}
revocations=${4:-100}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

bin=${AGENTAUTH:-}
if [ -z "$bin" ]; then
	CGO_ENABLED=0 go build -o "$tmp/agentauth" .
	bin=$tmp/agentauth
fi
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$bin" -mode replicas -duration "$duration" -replicas "$replicas" -conns "$clients" -revocations "$revocations"
