# What the suites' run.sh scripts share; each sources it:
#   . "$root/testdata/lib/suite.sh"

# npm_install SRC DEST [WHAT]: installs the pins of SRC (its package.json
# and package-lock.json) into DEST with npm ci --ignore-scripts, unless
# DEST already holds that package-lock.json (DEST/installed.lock, written
# only after npm ci succeeded). When it installs it says
# "run.sh: installing WHAT into DEST" on stderr (WHAT defaults to
# "the pins of SRC"). The suites keep their packages in a cache directory
# outside the checkout.
npm_install() {
	local src="$1" dest="$2" what="${3:-the pins of $1}"
	mkdir -p "$dest"
	if ! cmp -s "$src/package-lock.json" "$dest/installed.lock"; then
		echo "run.sh: installing $what into $dest" >&2
		rm -f "$dest/installed.lock"
		cp "$src/package.json" "$src/package-lock.json" "$dest/"
		(cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
		cp "$src/package-lock.json" "$dest/installed.lock"
	fi
}

# waitfile FILE: waits until FILE is not empty (a server started with
# --addr-file or the like wrote its address), polling for at most 30 s;
# fails saying so on stderr when it stays empty.
waitfile() {
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	echo "run.sh: $1 did not appear" >&2
	return 1
}

# waitaddr FILE: waitfile, then prints the first line of FILE (the
# address).
waitaddr() {
	waitfile "$1" && head -n 1 "$1"
}

# freeport: a TCP port free on 127.0.0.1 now, for a server that takes a
# port number and cannot be given 0 (needs node on PATH).
freeport() {
	node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'
}

# script_suite PREFIX VAR: runs the testscripts testdata/script/PREFIX*.txtar
# (go test -run TestScripts/PREFIX, from the repository's root) with VAR=1,
# which makes a missing dependency of theirs an error instead of a skip;
# prints a line per script and "N passed, N failed" (a skip counts as a
# failure), the whole output on a failure, and returns 1 on a failure.
script_suite() {
	local prefix="$1" var="$2" out status=0 passed failed skipped
	out="$(mktemp)"
	env "$var=1" go test -count=1 -v -run "TestScripts/$prefix" . >"$out" 2>&1 || status=$?
	passed=$(grep -c -- "--- PASS: TestScripts/$prefix" "$out" || true)
	failed=$(grep -c -- "--- FAIL: TestScripts/$prefix" "$out" || true)
	skipped=$(grep -c -- "--- SKIP: TestScripts/$prefix" "$out" || true)
	grep -E -- "--- (PASS|FAIL|SKIP): TestScripts/$prefix" "$out" |
		sed -E "s/^ *--- (PASS|FAIL|SKIP): TestScripts\/($prefix[^ ]*).*/\1 \2/; s/^PASS/ok  /" || true
	if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$skipped" -ne 0 ] || [ "$passed" -eq 0 ]; then
		cat "$out" >&2
		rm -f "$out"
		failed=$((failed + skipped))
		[ "$failed" -eq 0 ] && failed=1
		echo "$passed passed, $failed failed"
		return 1
	fi
	rm -f "$out"
	echo "$passed passed, $failed failed"
}
