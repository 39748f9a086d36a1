#!/usr/bin/env bash
# Sign-in at ORY Hydra v2.3.0, a second real OpenID Provider (beside
# oidc-provider, testdata/oidc). Hydra is built from the Go module proxy
# into a cache directory ($AGENTAUTH_HYDRA_CACHE, default
# ~/.cache/agentauth-hydra), once: `go install …@v2.3.0` refuses the
# module for its replace directives, so the module is downloaded (go mod
# download), the replace of github.com/ory/hydra-client-go/v2 (a folder
# the module does not ship) dropped, and it is built with -tags sqlite
# (its in-memory database) and cgo. Then the hydra_*.txtar scripts
# (testdata/script) run with $AGENTAUTH_HYDRA naming it: each starts
# `hydra serve all --dev` with an in-memory DSN on free loopback ports,
# with our login and consent app (internal/testprog/hydra), creates its
# clients with Hydra's admin API, and runs agentauth login against it and
# against serve signing users in there: an unknown client, an
# unregistered redirect URI, the user's refusal, serve's allow-list and
# Hydra's access_denied end the login at once, naming the cause; a
# success; a stale registration after serve restarts. Prints one line per
# script and "N passed, N failed"; exits 1 on a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/testdata/lib/suite.sh"

version=v2.3.0
cache="${AGENTAUTH_HYDRA_CACHE:-$HOME/.cache/agentauth-hydra}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
bin="$cache/hydra-$version"
if [ ! -x "$bin" ]; then
	echo "run.sh: building ORY Hydra $version into $cache" >&2
	# Outside any module, so that nothing here records it.
	dir="$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "github.com/ory/hydra/v2@$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$dir" ] || { echo "run.sh: go mod download gave no folder for github.com/ory/hydra/v2@$version" >&2; exit 1; }
	src="$cache/src-$version"
	rm -rf "$src"
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	(
		cd "$src"
		go mod edit -dropreplace github.com/ory/hydra-client-go/v2
		GOFLAGS=-mod=mod CGO_ENABLED=1 go build -tags sqlite \
			-ldflags "-X github.com/ory/hydra/v2/driver/config.Version=$version" -o "$bin.tmp" .
	)
	mv "$bin.tmp" "$bin"
	rm -rf "$src"
fi
# Its whole output first: grep -q would stop reading, and pipefail take
# Hydra's SIGPIPE for a failure.
case "$("$bin" version)" in
*"Version:"*"$version"*) ;;
*) echo "run.sh: $bin is not Hydra $version" >&2; exit 1 ;;
esac
export AGENTAUTH_HYDRA="$bin"

cd "$root"
script_suite hydra_ AGENTAUTH_REQUIRE_HYDRA
