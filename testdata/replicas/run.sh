#!/usr/bin/env bash
# The replica stack without containers: one PostgreSQL, two `agentauth
# serve` replicas sharing it (--database), HAProxy in front of them with
# deploy/haproxy.cfg (the compose file's topology, deploy/compose.yaml).
# Checks, each printed PASS or FAIL, then "N passed, N failed":
#   both replicas ready (/readyz through HAProxy's health checks);
#   `agentauth login` through the balancer (the embedded issuer published at
#   the balancer's origin, its requests spread over both replicas);
#   the token accepted by each replica directly;
#   revoked at replica A, refused by replica B (401 invalid_token);
#   the replicas' logs name the client's address from HAProxy's
#   X-Forwarded-For (--trusted-proxy) and hold no token;
#   a client-sent Forwarded or X-Forwarded-For changes neither the
#   registration bound's key (429 at the 101st registration from one
#   address, with or without forged headers) nor the address logged.
# Needs: go, haproxy, curl, PostgreSQL's initdb and pg_ctl (.ci/run installs
# them). Exits non-zero when a check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. testdata/lib/suite.sh

work=$(mktemp -d)
chmod 755 "$work"
pids=()
pgctl=
asuser=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ -n "$pgctl" ]; then "${asuser[@]}" "$pgctl" stop -D "$work/pg/data" -m immediate -w >/dev/null 2>&1 || true; fi
	if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

passed=0 failed=0
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@" >"$work/check.out" 2>&1; then
		echo "PASS $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		sed 's/^/    /' "$work/check.out"
		failed=$((failed + 1))
	fi
}

go build -o "$work/agentauth" .
go build -o "$work/freeport" ./testdata/replicas/freeport

# PostgreSQL on a Unix socket in $work/pg (initdb refuses root: run it as
# an unprivileged user then).
bin=$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
pgctl=$bin/pg_ctl
mkdir "$work/pg"
if [ "$(id -u)" = 0 ]; then
	user=postgres
	id "$user" >/dev/null 2>&1 || user=nobody
	chown "$user" "$work/pg"
	asuser=(runuser -u "$user" --)
fi
"${asuser[@]}" "$bin/initdb" -D "$work/pg/data" -A trust -U agentauth -E UTF8 --no-sync >/dev/null
"${asuser[@]}" "$pgctl" start -D "$work/pg/data" -w -l "$work/pg/log" -o "-k $work/pg -c listen_addresses= -p 5432 -F" >/dev/null
db="postgres://agentauth@/postgres?host=$work/pg&port=5432&sslmode=disable"

lbport=$("$work/freeport")
lb=127.0.0.1:$lbport
for r in a b; do
	"$work/agentauth" serve --listen 127.0.0.1:0 --addr-file "$work/$r.addr" --auto-approve --database "$db" \
		--resource "http://$lb/mcp" --trusted-proxy 127.0.0.1/32 --log-format json --log-file "$work/$r.log" &
	pids+=($!)
done
waitfile "$work/a.addr"
waitfile "$work/b.addr"
a=$(cat "$work/a.addr") b=$(cat "$work/b.addr")

LB_BIND=$lb LB_HOST=$lb REPLICA_A=$a REPLICA_B=$b haproxy -f deploy/haproxy.cfg -db >"$work/haproxy.log" 2>&1 &
pids+=($!)
ready() { # until HAProxy answers /readyz (a replica passed its health check)
	for _ in $(seq 100); do
		curl -fsS "http://$lb/readyz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
check "HAProxy is up and a replica is ready" ready
check "replica A ready" curl -fsS "http://$a/readyz"
check "replica B ready" curl -fsS "http://$b/readyz"

export HOME=$work/home AGENTAUTH_CONFIG_DIR=$work/config AGENTAUTH_STORE=file NO_COLOR=1
export BROWSER="curl -fsSL -o /dev/null"
check "login through the balancer" "$work/agentauth" login "http://$lb/mcp"
token=$("$work/agentauth" token "http://$lb/mcp" 2>/dev/null || true)
ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
post() { # post ADDR: POST ping to ADDR/mcp with the token, print the status
	curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data "$ping" "http://$1/mcp"
}
both_served() { # the login's requests reached both replicas (HAProxy's log)
	grep -q ' replicas/a ' "$work/haproxy.log" && grep -q ' replicas/b ' "$work/haproxy.log"
}
check "the balancer spread the login over both replicas" both_served
check "replica A accepts the token" test "$(post "$a")" = 200
check "replica B accepts the token" test "$(post "$b")" = 200
client=$("$work/agentauth" status --json "http://$lb/mcp" 2>/dev/null | grep -o '"clientId": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/' || true)
revoke_at_a() { # RFC 7009 at replica A directly, as the login's (public) client
	curl -fsS -X POST --data-urlencode "token=$token" --data-urlencode "client_id=$client" "http://$a/revoke"
}
check "revoked at replica A" revoke_at_a
refused_by_b() { # B learns it from PostgreSQL (LISTEN/NOTIFY): wait for it, at most 10 s
	for _ in $(seq 100); do
		[ "$(post "$b")" = 401 ] && return 0
		sleep 0.1
	done
	echo "replica B still answers $(post "$b")"
	return 1
}
check "replica B refuses the revoked token" refused_by_b
check "replica A refuses the revoked token" test "$(post "$a")" = 401
no_token_logged() { [ -n "$token" ] && ! grep -qF "$token" "$work/a.log" "$work/b.log" "$work/haproxy.log"; }
check "no token in the logs" no_token_logged

# Registrations are bounded per source address (100 per 10 minutes): from
# 127.0.0.2 plainly, then from 127.0.0.3 with a forged Forwarded and
# X-Forwarded-For on every request (a new address each time). HAProxy
# appends the address it sees; serve must take that one and nothing the
# client wrote, so both sources are refused at their 101st.
register() { # register SOURCE N [forge]: print the status of N registrations from SOURCE
	local src=$1 n=$2 forge=${3:-} i
	for i in $(seq "$n"); do
		local hdrs=()
		if [ -n "$forge" ]; then
			hdrs=(-H "Forwarded: for=198.51.100.$((i % 250));proto=https" -H "X-Forwarded-For: 203.0.113.$((i % 250))")
		fi
		curl -sS --interface "$src" -o "$work/reg.out" -w '%{http_code}\n' -X POST -H 'Content-Type: application/json' "${hdrs[@]}" \
			--data '{"client_name":"flood","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none"}' "http://$lb/register"
	done
}
refused_at_101st() { # refused_at_101st SOURCE [forge]
	local codes
	codes=$(register "$1" 101 "${2:-}" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	echo "from $1${2:+ with forged headers}: $codes"
	[ "$codes" = " 100 201; 1 429;" ] && grep -q "registered from $1 " "$work/reg.out"
}
check "101 registrations from one address: the 101st refused" refused_at_101st 127.0.0.2
check "forged Forwarded and X-Forwarded-For: still refused at the 101st" refused_at_101st 127.0.0.3 forge
logged_source() { # the refusal is logged with the client's real address, never a forged one
	grep -h 'registration refused, too many from one source' "$work/a.log" "$work/b.log" >"$work/refusals"
	grep -q '"source":"127.0.0.3"' "$work/refusals" && ! grep -qE '198\.51\.100\.|203\.0\.113\.' "$work/a.log" "$work/b.log"
}
check "the logged address is HAProxy's, not the client's forgery" logged_source

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
