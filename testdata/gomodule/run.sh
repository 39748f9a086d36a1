#!/usr/bin/env bash
# agentauth as another Go module uses it: this module (example.com/mcpapp,
# its go.mod replacing agentauth with this checkout) uses only the public
# packages: agentauthtest for its Go SDK MCP server's tests, the
# agentauthtest/script programs and commands for its testscript suite
# (agentauth serve, login, token, call), and mcptransport for its Go SDK
# client, against serve and against oidc-provider from npm (installed
# into testdata/oidc as testdata/oidc/run.sh does; the suite may not skip
# it here). Prints each test and "N passed, N failed"; exits 1 on a
# failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

(cd "$root/testdata/oidc" && npm ci --no-audit --no-fund --silent)
cd "$here"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
MCPAPP_REQUIRE_OIDC=1 go test -count=1 -v ./... >"$log" 2>&1 || status=$?
grep -E '^(ok|FAIL|---|    ---) |^\?' "$log" | grep -vE '^\?' || true
passed=$(grep -cE '^ *--- PASS' "$log" || true)
failed=$(grep -cE '^ *--- FAIL' "$log" || true)
if [ "$status" != 0 ]; then
	# What failed, and why (a build failure reports no test).
	tail -n 80 "$log"
	[ "$failed" != 0 ] || failed=1
fi
echo "$passed passed, $failed failed"
[ "$status" = 0 ]
