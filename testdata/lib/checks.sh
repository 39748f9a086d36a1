# Sourced by the suites that check by running commands
# (testdata/deploy/run.sh, testdata/release/run.sh):
#   check NAME COMMAND...   runs COMMAND, prints PASS NAME or FAIL NAME
#                           with the last 25 lines of its output;
#   checks_done             prints "N passed, N failed" and fails when
#                           any check failed.
passed=0 failed=0
check() {
	local name=$1
	shift
	if out=$("$@" 2>&1); then
		echo "PASS $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		printf '%s\n' "$out" | tail -n 25 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}
checks_done() {
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}
