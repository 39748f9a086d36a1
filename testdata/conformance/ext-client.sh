#!/usr/bin/env bash
# The client command the conformance suite runs for the authorization
# extension scenarios (EXTENSION_SCENARIOS in run.sh):
#   bash ext-client.sh SERVER_URL
# with MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT (a JSON object
# with the machine client's client_id and client_secret or
# private_key_pem) in the environment. Without a client_id in the context
# (the DPoP scenarios: a user logs in) it runs call --login --dpop as
# client.sh runs call --login. With a valid_jwt
# (workload identity) it logs in with --assertion-file; with an
# idp_id_token (enterprise-managed authorization) with --id-token-file and
# the IdP's token endpoint. Otherwise it does
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
	# DPoP: a user logs in (BROWSER from run.sh) and asks for a bound token.
	for args in tools/list "tools/call {\"name\":\"test-tool\",\"arguments\":{}}"; do
		read -r method params <<<"$args"
		echo "+ agentauth call --login --dpop $url $method" >&2
		"$AGENTAUTH_BIN" call --login --dpop --client-metadata-url https://conformance-test.local/client-metadata.json "$url" "$method" ${params:+"$params"} </dev/null
	done
	exit 0
fi
client_secret="$(jq -r '.client_secret // empty' <<<"$context")"
flags=(--client-credentials --client-id "$client_id")
if [ -n "$(jq -r '.idp_id_token // empty' <<<"$context")" ]; then
	# Enterprise-managed authorization: the user's ID token from the IdP.
	idt="$AGENTAUTH_CONFIG_DIR/id.jwt"
	(umask 077 && jq -r '.idp_id_token' <<<"$context" >"$idt")
	flags=(--client-id "$client_id" --client-secret-stdin --id-token-file "$idt"
		--idp-token-endpoint "$(jq -r '.idp_token_endpoint' <<<"$context")" --idp-client-id "$(jq -r '.idp_client_id' <<<"$context")")
elif [ -n "$(jq -r '.valid_jwt // empty' <<<"$context")" ]; then
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
