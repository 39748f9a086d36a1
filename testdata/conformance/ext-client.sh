#!/usr/bin/env bash
# The client command the conformance suite runs for the authorization
# extension scenarios (EXTENSION_SCENARIOS in run.sh):
#   bash ext-client.sh SERVER_URL
# with MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT (a JSON object
# with the machine client's client_id and client_secret or
# private_key_pem) in the environment. Without a client_id in the context
# (the DPoP scenarios: a user logs in) it is client.sh. With a valid_jwt
# (workload identity) it logs in with --assertion-file. Otherwise it does
# what a CI job would: `agentauth
# login --client-credentials` with the secret on stdin or the key in a file,
# then `agentauth call` lists the tools and calls the test tool, with a
# fresh file store. AGENTAUTH_BIN comes from run.sh.
set -euo pipefail

url="${!#}"
: "${AGENTAUTH_BIN:?run this through run.sh}"
context="${MCP_CONFORMANCE_CONTEXT:-"{}"}"

AGENTAUTH_CONFIG_DIR="$(mktemp -d)"
export AGENTAUTH_CONFIG_DIR AGENTAUTH_STORE=file
trap 'rm -rf "$AGENTAUTH_CONFIG_DIR"' EXIT

client_id="$(jq -r '.client_id // empty' <<<"$context")"
if [ -z "$client_id" ]; then
	exec bash "$(dirname "${BASH_SOURCE[0]}")/client.sh" "$@"
fi
client_secret="$(jq -r '.client_secret // empty' <<<"$context")"
flags=(--client-credentials --client-id "$client_id")
if [ -n "$(jq -r '.valid_jwt // empty' <<<"$context")" ]; then
	# Workload identity: the platform's JWT in a file, as CI systems give it.
	jwt="$AGENTAUTH_CONFIG_DIR/workload.jwt"
	(umask 077 && jq -r '.valid_jwt' <<<"$context" >"$jwt")
	flags=(--client-id "$client_id" --assertion-file "$jwt")
elif [ -n "$(jq -r '.private_key_pem // empty' <<<"$context")" ]; then
	key="$AGENTAUTH_CONFIG_DIR/client-key.pem"
	(umask 077 && jq -r '.private_key_pem' <<<"$context" >"$key")
	flags+=(--private-key "$key")
else
	flags+=(--client-secret-stdin)
fi

echo "+ agentauth login ${flags[*]} $url" >&2
"$AGENTAUTH_BIN" login "${flags[@]}" "$url" <<<"$client_secret"
echo "+ agentauth call $url tools/list" >&2
"$AGENTAUTH_BIN" call "$url" tools/list </dev/null
echo "+ agentauth call $url tools/call" >&2
"$AGENTAUTH_BIN" call "$url" tools/call '{"name":"test-tool","arguments":{}}' </dev/null
