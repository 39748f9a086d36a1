#!/usr/bin/env bash
# Runs every Fuzz target of the module (found with `go test -list`, so new
# targets need no change here) for FUZZTIME each (default 10s), one line
# per target with its exec count, then "N passed, N failed"; exits 1 if a
# target failed or none was found. A failing input is kept by go test in
# the package's testdata/fuzz/<Target>/ and replays in `go test ./...`.
#
#   FUZZTIME=5m bash testdata/fuzz/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
fuzztime=${FUZZTIME:-10s}

# go test -list prints a package's matching names, then its "ok" line.
if ! listing=$(go test -list '^Fuzz' ./... 2>&1); then
	printf '%s\n' "$listing" >&2
	echo "cannot list the fuzz targets" >&2
	exit 1
fi
targets=() names=()
while IFS=$'\t' read -r first pkg _; do
	case "$first" in
	Fuzz*) names+=("$first") ;;
	ok*)
		for n in ${names[@]+"${names[@]}"}; do targets+=("$pkg $n"); done
		names=()
		;;
	esac
done <<<"$listing"
if [ ${#targets[@]} -eq 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi

passed=0 failed=0
for t in "${targets[@]}"; do
	pkg=${t% *} name=${t#* }
	# -fuzzminimizetime bounds the shrinking of each new corpus entry,
	# which otherwise eats most of a short run.
	fuzz=(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x "$pkg")
	out=$("${fuzz[@]}" 2>&1)
	rc=$?
	# Go's fuzz coordinator can stop with "context deadline exceeded" and no
	# failing input on a loaded machine (golang/go#75804): that is no
	# finding, so the target runs again, up to twice (it was seen twice in a
	# row once); a real failure writes its input and is never run again.
	for retry in 1 2; do
		if [ $rc -eq 0 ] || ! grep -q 'context deadline exceeded' <<<"$out" || grep -q 'Failing input written' <<<"$out"; then
			break
		fi
		echo "note $name ($pkg): the fuzz coordinator timed out without a finding (golang/go#75804); running it again ($retry of 2)"
		out=$("${fuzz[@]}" 2>&1)
		rc=$?
	done
	execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -n 1 | cut -d' ' -f2)
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok   $name ($pkg): ${execs:-0} execs in $fuzztime"
	else
		failed=$((failed + 1))
		echo "FAIL $name ($pkg): ${execs:-0} execs"
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
	fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
