#!/bin/sh
# Benchmark: serve replicas sharing one PostgreSQL, and the capacity model.
#
# perf (-mode replicas) starts a throwaway PostgreSQL (Debian's postgresql
# package, over its Unix socket; skipped without it) and REPLICAS `agentauth
# serve --database` replicas publishing one issuer origin (net/http's
# reverse proxy stands in for the load balancer). With taskset and 2 CPUs
# or more (PIN=0 turns it off), replica k runs on CPU k mod CPUs from its
# start; while fewer replicas than CPUs are measured, PostgreSQL and the
# load generator run on the CPUs no measured replica has, else on all.
#
# With two replicas or more it first times REVOCATIONS revocations: a
# token used at replica B, revoked at replica A (RFC 7009), then used at B
# in a closed loop until B refuses it; it prints the time from A's answer
# to B's first refusal (p50, p99, max) and how often B still accepted the
# token after A's answer. Then, in ROUNDS rounds, for 1 to REPLICAS
# replicas in turn:
#   - CLIENTS confidential clients, spread over the replicas, run
#     client_credentials grants for DURATION: grants/s, CPU per grant of
#     the replicas, PostgreSQL and the load generator, RSS and PostgreSQL
#     connections per replica;
#   - REVOKES tokens are revoked from CLIENTS workers, all at replica 1,
#     then spread over the replicas: revocations answered per second,
#     enforced by every replica per second (each replica refuses every
#     token, learnt through LISTEN/NOTIFY and the revocation log), CPU per
#     revocation, and how many reads of the log each receiving replica
#     made.
# It ends with the capacity model's predictions for 2 replicas and more,
# made from the costs measured with one, against the medians measured
# (see docs/performance.md, "Capacity of replicas"). Loopback only; stops
# by itself; never asserts a time. AGENTAUTH names another agentauth
# binary.
#
# Usage: testdata/bench/replicas.sh [DURATION [REPLICAS [CLIENTS [REVOCATIONS [ROUNDS [REVOKES]]]]]]
#        (5s 3 16 100 3 4000)
set -eu
duration=${1:-5s}
replicas=${2:-3}
clients=${3:-16}
revocations=${4:-100}
rounds=${5:-3}
revokes=${6:-4000}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

bin=${AGENTAUTH:-}
if [ -z "$bin" ]; then
	CGO_ENABLED=0 go build -o "$tmp/agentauth" .
	bin=$tmp/agentauth
fi
pin=false
if [ "${PIN:-1}" != 0 ] && command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
	pin=true
fi
go build -o "$tmp/perf" ./testdata/bench/perf
"$tmp/perf" -agentauth "$bin" -mode replicas -duration "$duration" -replicas "$replicas" -conns "$clients" \
	-revocations "$revocations" -rounds "$rounds" -revoke-count "$revokes" -pin="$pin"
