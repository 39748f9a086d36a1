#!/bin/sh
# Runs every benchmark script once with tiny sizes, so that CI notices a
# script that no longer builds or runs. The figures of so short
# a run mean nothing and nothing here compares them; the full runs are in
# docs/performance.md.
set -eu
cd "$(dirname "$0")"
sh http.sh 1s 1 8
sh ws.sh 1s 1 20
sh idle.sh 200
sh burst.sh 50
sh status.sh 3
sh refresh.sh 1s 2 2
sh exchange.sh 1s 1 2
sh grants.sh 2000 2
sh replicas.sh 1s 2 2 3
sh gateway.sh 1s 1 8
sh proxy.sh 20 1
echo "bench smoke: every script ran"
