# Sourced by the suites' run.sh scripts (gateway, conformance, proxy,
# mcp-sdk) that keep their npm packages in a cache directory outside the
# checkout.

# npm_install SRC DEST [WHAT]: installs the pins of SRC (its package.json
# and package-lock.json) into DEST with npm ci --ignore-scripts, unless
# DEST already holds that package-lock.json (DEST/installed.lock, written
# only after npm ci succeeded). When it installs it says
# "run.sh: installing WHAT into DEST" on stderr (WHAT defaults to
# "the pins of SRC").
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
