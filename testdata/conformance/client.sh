#!/usr/bin/env bash
# The client command the conformance suite runs for each scenario:
#   bash client.sh SERVER_URL
# with MCP_CONFORMANCE_SCENARIO (the scenario name) and, for some scenarios,
# MCP_CONFORMANCE_CONTEXT (a JSON object) in the environment. It does what a
# user would: `agentauth call --login` lists the tools, then calls the test
# tool (the call that needs more scope in auth/scope-step-up), with a fresh
# file store shared by the two commands. AGENTAUTH_BIN and BROWSER come from
# run.sh.
set -euo pipefail

url="${!#}"
: "${AGENTAUTH_BIN:?run this through run.sh}"
context="${MCP_CONFORMANCE_CONTEXT:-"{}"}"

# The suite's client ID metadata document URL: the auth/basic-cimd mock
# authorization server expects exactly this client_id, and the suite does not
# pass it in the context. agentauth uses it only where the authorization
# server advertises client_id_metadata_document_supported.
cimd_url="https://conformance-test.local/client-metadata.json"

client_id="$(jq -r '.client_id // empty' <<<"$context")"
client_secret="$(jq -r '.client_secret // empty' <<<"$context")"
flags=(--login)
if [ -n "$client_id" ]; then
	flags+=(--client-id "$client_id")
	if [ -n "$client_secret" ]; then
		flags+=(--client-secret-stdin)
	fi
else
	flags+=(--client-metadata-url "$cimd_url")
fi

AGENTAUTH_CONFIG_DIR="$(mktemp -d)"
export AGENTAUTH_CONFIG_DIR AGENTAUTH_STORE=file
trap 'rm -rf "$AGENTAUTH_CONFIG_DIR"' EXIT

# call METHOD [PARAMS]: the client secret, if any, goes on stdin, never in
# the arguments this script echoes. A here-string, not a pipe: agentauth
# reads stdin only with --client-secret-stdin, and a pipe's writer would
# then die of SIGPIPE (exit 141 under pipefail).
call() {
	echo "+ agentauth call ${flags[*]} $url $*" >&2
	"$AGENTAUTH_BIN" call "${flags[@]}" "$url" "$@" <<<"$client_secret"
}

call tools/list
call tools/call '{"name":"test-tool","arguments":{}}'
