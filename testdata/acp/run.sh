#!/usr/bin/env bash
# Runs the official ACP TypeScript SDK (@agentclientprotocol/sdk, pinned in
# package-lock.json, installed with npm ci) as a client against
# `agentauth serve --stdio` (client.mjs): initialize, authenticate by
# methodId, a gated call, logout. Prints one line per check; exits 1 on a
# failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$here" && npm ci --no-audit --no-fund --silent)
(cd "$here/../.." && go build -o "$work/agentauth" .)
cat >"$work/cfg.json" <<'JSON'
{"schemes": [{"id": "dev", "label": "Dev issuer", "authorizationServers": ["https://issuer.example"],
  "validation": {"type": "static", "tokens": [{"token": "t-alice", "subject": "alice"}]}}]}
JSON
cd "$here"
node client.mjs "$work/agentauth" "$work/cfg.json" t-alice 2> "$work/serve.log" || { cat "$work/serve.log" >&2; exit 1; }
echo "ACP SDK client against serve --stdio: passed"
