#!/usr/bin/env bash
# Runs the official ACP TypeScript SDK (@agentclientprotocol/sdk, pinned in
# package-lock.json, installed with npm ci) on both ends of agentauth:
#   - as a client against `agentauth serve --stdio` (client.mjs):
#     initialize, authenticate by methodId, a gated call, logout;
#   - as an agent (agent.mjs) against agentauth's client: discover lists
#     its auth methods by type, status reads getAuthState, authenticate
#     --method sends authenticate {methodId}.
# Prints one line per check; exits 1 on a failure.
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

aa="$work/agentauth"
agent="stdio:node $here/agent.mjs"
expect() { # NAME OUTPUT REGEXP
	if grep -Eq -- "$3" <<<"$2"; then echo "ok   $1"; else echo "FAIL $1"; echo "$2" >&2; exit 1; fi
}
out="$("$aa" discover "$agent" 2>&1)"
expect "discover lists the agent method" "$out" 'oauth \(agent\): Sign in'
expect "discover shows the env_var variable and link" "$out" 'set SDK_AGENT_API_KEY \(get it at https://example.com/keys\)'
expect "discover shows the terminal command" "$out" 'command: SDK_AGENT_MODE=login node .*agent.mjs --login'
out="$("$aa" discover --json "$agent" 2>&1)"
expect "discover --json lists the methods by type" "$out" '"type": "env_var"'
out="$("$aa" status "$agent" 2>&1)" && code=0 || code=$?
expect "status reads getAuthState" "$out" 'X oauth: not signed in'
expect "status exits 4 when the agent is not signed in" "$code" '^4$'
out="$("$aa" authenticate --method oauth "$agent" 2>&1)"
expect "authenticate --method sends authenticate {methodId}" "$out" 'oauth: authenticated by the agent'
out="$("$aa" authenticate --method api-key "$agent" 2>&1)" && code=0 || code=$?
expect "an env_var method names its unset variable" "$out" 'method api-key: SDK_AGENT_API_KEY not set'
expect "an unset env_var variable is exit 4" "$code" '^4$'
echo "agentauth's client against the ACP SDK agent: passed"
