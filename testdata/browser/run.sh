#!/usr/bin/env bash
# Web pages in a real browser: installs playwright-core (pinned in
# package-lock.json) with npm ci and runs the browser_*.txtar scripts
# (testdata/script) with Debian's Chromium (/usr/bin/chromium, or
# $CHROMIUM; .ci/run installs it): a page of an allowed origin using an
# MCP server behind serve's gateway across origins, and a page of another
# origin refused (CORS). Prints one line per script and "N passed, N
# failed"; exits 1 on a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$here" && npm ci --no-audit --no-fund --silent)
cd "$here/../.."
status=0
AGENTAUTH_REQUIRE_BROWSER=1 go test -count=1 -v -run 'TestScripts/browser_' . >"$work/out" 2>&1 || status=$?
passed=$(grep -c -- '--- PASS: TestScripts/browser_' "$work/out" || true)
failed=$(grep -c -- '--- FAIL: TestScripts/browser_' "$work/out" || true)
skipped=$(grep -c -- '--- SKIP: TestScripts/browser_' "$work/out" || true)
grep -E -- '--- (PASS|FAIL|SKIP): TestScripts/browser_' "$work/out" | sed -E 's/^ *--- (PASS|FAIL|SKIP): TestScripts\/(browser_[^ ]*).*/\1 \2/; s/^PASS/ok  /' || true
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$skipped" -ne 0 ] || [ "$passed" -eq 0 ]; then
	cat "$work/out" >&2
	failed=$((failed + skipped))
	[ "$failed" -eq 0 ] && failed=1
	echo "$passed passed, $failed failed"
	exit 1
fi
echo "$passed passed, $failed failed"
