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
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"

(cd "$here" && npm ci --no-audit --no-fund --silent)
cd "$root"
script_suite browser_ AGENTAUTH_REQUIRE_BROWSER
