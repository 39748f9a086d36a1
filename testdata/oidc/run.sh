#!/usr/bin/env bash
# Sign-in at a real OpenID Provider: installs oidc-provider (pinned in
# package-lock.json) with npm ci, then runs the oidc_*.txtar scripts
# (testdata/script), which start it with provider.mjs, against serve:
# `agentauth login` through the provider's login and consent pages, the
# allow-list, subjects, bound broker sign-in links, and serve's gateway
# getting a backend's token by RFC 8693 token exchange at the provider
# (oidc_gateway_exchange). Prints one line per
# script and "N passed, N failed"; exits 1 on a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$here" && npm ci --no-audit --no-fund --silent)
cd "$here/../.."
status=0
AGENTAUTH_REQUIRE_OIDC=1 go test -count=1 -v -run 'TestScripts/oidc_' . >"$work/out" 2>&1 || status=$?
passed=$(grep -c -- '--- PASS: TestScripts/oidc_' "$work/out" || true)
failed=$(grep -c -- '--- FAIL: TestScripts/oidc_' "$work/out" || true)
skipped=$(grep -c -- '--- SKIP: TestScripts/oidc_' "$work/out" || true)
grep -E -- '--- (PASS|FAIL|SKIP): TestScripts/oidc_' "$work/out" | sed -E 's/^ *--- (PASS|FAIL|SKIP): TestScripts\/(oidc_[^ ]*).*/\1 \2/; s/^PASS/ok  /' || true
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$skipped" -ne 0 ] || [ "$passed" -eq 0 ]; then
	cat "$work/out" >&2
	failed=$((failed + skipped))
	[ "$failed" -eq 0 ] && failed=1
	echo "$passed passed, $failed failed"
	exit 1
fi
echo "$passed passed, $failed failed"
