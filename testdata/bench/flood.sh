#!/bin/sh
# Flood: serve's memory under a flood of requests (issue 9).
#
# Builds agentauth and testdata/bench/flood, then flood starts two
# `agentauth serve --listen 127.0.0.1:0` (one with --auto-approve, one that
# shows consent pages) and, for DURATION each (default 10s), floods:
#   GET /authorize with a 60 KB state (refused: state is at most 1024 bytes)
#   GET /authorize with the largest state, scope and resource allowed
#       (a pending consent page, or with --auto-approve a code, each)
#   POST /register with 60 KB of metadata (refused: over 8 KiB), then with
#       the largest registration allowed (100 per source address in 10
#       minutes are kept, then 429)
#   createSession over WebSocket (initialize, authenticate with a dev token,
#       then createSession as fast as the host answers)
# It prints serve's RSS (VmRSS, /proc/PID/status: Linux only) before and
# after each phase and the peak, and exits 1 when serve grew by more than
# BOUND MiB (default 64) over its RSS after start-up. Only loopback is
# touched; every phase stops by itself.
#
# Usage: testdata/bench/flood.sh [DURATION [BOUND_MIB [WORKERS]]]
set -eu
duration=${1:-10s}
bound=${2:-64}
workers=${3:-4}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

go build -o "$tmp/agentauth" .
go build -o "$tmp/flood" ./testdata/bench/flood
"$tmp/flood" -agentauth "$tmp/agentauth" -duration "$duration" -bound "$bound" -workers "$workers"
