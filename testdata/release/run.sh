#!/usr/bin/env bash
# The release, as a GoReleaser snapshot (.goreleaser.yaml), checked the way
# a user receives it; each check printed PASS or FAIL, then "N passed, N
# failed" (non-zero when one failed):
#   the snapshot builds (goreleaser installed with `go install` at the
#   pinned version), from a clone of the checkout's HEAD (commit first:
#   uncommitted changes are not in it; cyclonedx-gomod reads the version
#   with go-git, which cannot open a git worktree), limited to linux/amd64
#   (a copy of .goreleaser.yaml with goos [linux] and goarch [amd64]: the
#   six targets took 17 minutes on two shared cores against about 2, and
#   .ci/run builds darwin/arm64 and windows/amd64 already);
#   the archive packs the named files only, not a binary or CA bundle a
#   local container build left in deploy/container (this script puts
#   decoys there), with the man page and completions;
#   the deb and rpm hold the binary, the systemd unit, the man page and
#   the completion scripts; the SBOM is CycloneDX and lists the modules;
#   checksums.txt matches; the Homebrew cask names the binary, man page
#   and completions;
#   the deb installed into an empty root (dpkg-deb -x) runs
#   `agentauth --version` (the snapshot's version), its man page renders,
#   and `systemd-analyze verify --root` accepts its unit there (the root
#   also gets the host's systemd units and kill, as any system running
#   systemd has).
# Needs dpkg-deb, rpm2cpio and cpio, systemd-analyze, man, jq
# (.ci/run installs them). GORELEASER=path skips the install.
set -euo pipefail
cd "$(dirname "$0")/../.."

GORELEASER_VERSION=v2.17.0 # v2.18 needs Go 1.27
CYCLONEDX_VERSION=v1.10.0
tools=$(mktemp -d)
root=$(mktemp -d)
src=
cleanup() { rm -rf "$tools" "$root" ${src:+"$src"}; }
trap cleanup EXIT

. testdata/lib/checks.sh

export PATH="$tools:$PATH"
install_tools() {
	if [ -n "${GORELEASER:-}" ]; then ln -s "$GORELEASER" "$tools/goreleaser"; else
		GOBIN=$tools go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
	fi
	GOBIN=$tools go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_VERSION"
	goreleaser --version | grep "${GORELEASER_VERSION#v}" >/dev/null || [ -n "${GORELEASER:-}" ]
}
check "goreleaser $GORELEASER_VERSION and cyclonedx-gomod install with go install" install_tools

check "goreleaser check accepts .goreleaser.yaml" goreleaser check

src=$(mktemp -d)
git clone -q "$PWD" "$src"
sed -e 's/^    goos: \[linux, darwin, windows\]$/    goos: [linux]/' -e 's/^    goarch: \[amd64, arm64\]$/    goarch: [amd64]/' \
	.goreleaser.yaml >"$src/.goreleaser.ci.yaml"
grep -q '^    goos: \[linux\]$' "$src/.goreleaser.ci.yaml" && grep -q '^    goarch: \[amd64\]$' "$src/.goreleaser.ci.yaml"
repo=$PWD
cd "$src"
# Decoys: what `sh deploy/container/build.sh` leaves while it builds.
echo decoy >deploy/container/agentauth
echo decoy >deploy/container/ca-certificates.crt
start=$SECONDS
check "snapshot build (linux/amd64)" goreleaser release --config .goreleaser.ci.yaml --snapshot --clean --skip=publish
echo "     (snapshot took $((SECONDS - start)) s)"

one() { # one GLOB: the single file matching GLOB
	local f
	f=$(compgen -G "$1" | head -n 1)
	[ -n "$f" ] && echo "$f"
}
archive=$(one 'dist/agentauth_*_linux_amd64.tar.gz' || true)
deb=$(one 'dist/agentauth_*_linux_amd64.deb' || true)
rpm=$(one 'dist/agentauth_*_linux_amd64.rpm' || true)

archive_contents() {
	local got want
	got=$(tar -tzf "$archive" | sort)
	want=$(printf '%s\n' agentauth README.md SECURITY.md CHANGELOG.md LICENSE \
		deploy/systemd/agentauth.service deploy/haproxy.cfg man/agentauth.1 \
		completions/agentauth.bash completions/_agentauth completions/agentauth.fish completions/agentauth.ps1 \
		$(ls docs/*.md docs/reference/*.md) | sort)
	diff <(echo "$want") <(echo "$got")
}
check "archive packs the named files only (no deploy/container leftovers)" archive_contents

package_files() { # package_files LISTING: the files each package must hold
	local listing=$1
	for f in /usr/bin/agentauth /usr/lib/systemd/system/agentauth.service /usr/share/man/man1/agentauth.1.gz \
		/usr/share/bash-completion/completions/agentauth /usr/share/fish/vendor_completions.d/agentauth.fish; do
		grep -qx "$f" <<<"$listing" || { echo "missing $f"; echo "$listing"; return 1; }
	done
}
deb_contents() {
	package_files "$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')" &&
		dpkg-deb -c "$deb" | grep -q ' ./usr/share/zsh/vendor-completions/_agentauth$'
}
check "deb holds the binary, unit, man page and completions" deb_contents
rpm_contents() {
	local listing
	listing=$(rpm2cpio "$rpm" | cpio -it --quiet | sed 's|^\.||')
	package_files "$listing" && grep -qx /usr/share/zsh/site-functions/_agentauth <<<"$listing"
}
check "rpm holds the binary, unit, man page and completions" rpm_contents

sbom() {
	local f
	f=$(one 'dist/agentauth_*_linux_amd64.cdx.json') || { ls dist; return 1; }
	jq -e '.bomFormat == "CycloneDX" and ([.components[].name] | index("github.com/urfave/cli/v2") != null) and ([.components[].name] | index("github.com/itchyny/gojq") != null)' "$f"
}
check "SBOM is CycloneDX from the module graph" sbom
checksums() {
	(cd dist && sha256sum -c checksums.txt) && for f in "$archive" "$deb" "$rpm"; do grep -q " $(basename "$f")$" dist/checksums.txt; done
}
check "checksums.txt covers the archive and packages and matches" checksums
cask() {
	local f
	f=$(one 'dist/homebrew/Casks/agentauth.rb') || { find dist -name '*.rb'; return 1; }
	cat "$f"
	grep -q 'binary "agentauth"' "$f" && grep -q 'manpage "man/agentauth.1"' "$f" && grep -q 'bash_completion "completions/agentauth.bash"' "$f"
}
check "Homebrew cask names the binary, man page and completions" cask

installed() {
	dpkg-deb -x "$deb" "$root"
	local v
	v=$("$root/usr/bin/agentauth" --version)
	echo "$v"
	grep -q 'SNAPSHOT' <<<"$v"
}
check "deb installed into an empty root: agentauth --version" installed
check "installed man page renders" bash -c "man -l '$root/usr/share/man/man1/agentauth.1.gz' 2>/dev/null | grep -q 'agentauth help exit-codes\|EXIT STATUS'"
verify_unit() { # the root also gets what a system with systemd has: its units and kill
	cp -an /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
	mkdir -p "$root/bin" && cp "$(type -P kill)" "$root/bin/kill"
	systemd-analyze verify --root="$root" "$root/usr/lib/systemd/system/agentauth.service"
}
check "systemd-analyze verify accepts the installed unit" verify_unit

checks_done
