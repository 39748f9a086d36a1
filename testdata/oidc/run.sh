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
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"

(cd "$here" && npm ci --no-audit --no-fund --silent)
cd "$root"
script_suite oidc_ AGENTAUTH_REQUIRE_OIDC
