#!/usr/bin/env bash
# Checks of the deployment files, each printed PASS or FAIL, then
# "N passed, N failed":
#   the systemd unit's exposure (systemd-analyze security --offline) stays
#   at 2.0 or below (1.4 when written);
#   the container image builds from the Dockerfile with buildah
#   (deploy/container/build.sh: FROM scratch, nothing pulled; the vfs
#   storage driver, which needs no overlay support), runs as 65532:65532
#   with /agentauth as its entrypoint, and holds no shell;
#   the compose file's replicas and HAProxy agree with deploy/haproxy.cfg.
# Needs systemd (systemd-analyze) and buildah (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."

passed=0 failed=0
check() { # check NAME COMMAND...
	local name=$1
	shift
	if out=$("$@" 2>&1); then
		echo "PASS $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}

check "systemd unit exposure at most 2.0" \
	systemd-analyze security --offline=yes --threshold=20 deploy/systemd/agentauth.service

export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs}
tag=localhost/agentauth:ci-$$
cleanup() { buildah rmi "$tag" >/dev/null 2>&1 || true; rm -f deploy/container/agentauth deploy/container/ca-certificates.crt; }
trap cleanup EXIT
check "container image builds (buildah, FROM scratch)" env BUILDER=buildah sh deploy/container/build.sh "$tag"
image_config() {
	test "$(buildah inspect --format '{{.OCIv1.Config.User}}' "$tag")" = 65532:65532 &&
		test "$(buildah inspect --format '{{.OCIv1.Config.Entrypoint}}' "$tag")" = '[/agentauth]'
}
check "image runs as 65532:65532, entrypoint /agentauth" image_config
no_shell() { # the image's files: the binary, CA bundle, passwd, group; no shell
	local ctr files
	ctr=$(buildah from "$tag")
	if [ "$(id -u)" = 0 ]; then
		files=$(cd "$(buildah mount "$ctr")" && find . -type f)
	else
		files=$(buildah unshare sh -c "cd \$(buildah mount $ctr) && find . -type f")
	fi
	buildah rm "$ctr" >/dev/null
	printf '%s\n' "$files"
	printf '%s\n' "$files" | grep -qx './agentauth' && ! printf '%s\n' "$files" | grep -q '/sh$\|/bash$\|/busybox$'
}
check "image holds no shell" no_shell
compose_matches() { # the compose file starts HAProxy with the config's variables
	for v in LB_BIND LB_HOST REPLICA_A REPLICA_B; do
		grep -q "\"\${$v}\"" deploy/haproxy.cfg && grep -q "^      $v: " deploy/compose.yaml || { echo "missing $v"; return 1; }
	done
}
check "compose file sets what haproxy.cfg reads" compose_matches

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
