#!/usr/bin/env bash
# Checks of the deployment files, each printed PASS or FAIL, then
# "N passed, N failed":
#   the systemd unit's exposure (systemd-analyze security --offline) stays
#   at 2.0 or below (1.4 when written);
#   the container image builds from the Dockerfile with buildah
#   (deploy/container/build.sh: FROM scratch, nothing pulled; the vfs
#   storage driver, which needs no overlay support), runs as 65532:65532
#   with /agentauth as its entrypoint, and holds no shell;
#   the compose file's replicas and HAProxy agree with deploy/haproxy.cfg;
#   the unit's ExecStartPre is serve --check with ExecStart's flags; the
#   image carries the OCI labels and the healthcheck HEALTHCHECK, and
#   build.sh leaves no binary or CA bundle behind; build.sh names the
#   engines it needs and found; the compose file builds its image (whose
#   final stage is the Dockerfile's) and seals the state with a key.
# Needs systemd (systemd-analyze) and buildah (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."

. testdata/lib/checks.sh

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

unit_check_first() { # ExecStartPre=… serve --check FLAGS, ExecStart=… serve FLAGS
	local pre start
	pre=$(sed -n 's/^ExecStartPre=\(.*\) serve --check \(.*\)$/\1 serve \2/p' deploy/systemd/agentauth.service)
	start=$(sed -n 's/^ExecStart=//p' deploy/systemd/agentauth.service)
	echo "pre:   $pre"
	echo "start: $start"
	test -n "$pre" && test "$pre" = "$start"
}
check "systemd ExecStartPre is serve --check with ExecStart's flags" unit_check_first
image_labels() {
	local hc
	hc=$(buildah inspect --format '{{.Docker.Config.Healthcheck.Test}}' "$tag")
	echo "healthcheck: $hc"
	test "$hc" = '[CMD /agentauth healthcheck --url http://127.0.0.1:7777/readyz --timeout 4s]' || return 1
	for l in title source licenses version revision created; do
		v=$(buildah inspect --format "{{index .OCIv1.Config.Labels \"org.opencontainers.image.$l\"}}" "$tag")
		echo "org.opencontainers.image.$l=$v"
		test -n "$v" || return 1
	done
	test "$(buildah inspect --format '{{index .OCIv1.Config.Labels "org.opencontainers.image.revision"}}' "$tag")" = "$(git rev-parse HEAD)"
}
check "image has the OCI labels and the healthcheck HEALTHCHECK" image_labels
check "build.sh leaves no binary or CA bundle in deploy/container" \
	test ! -e deploy/container/agentauth -a ! -e deploy/container/ca-certificates.crt
engine_named() { # no engine on PATH: build.sh names the three and what it found
	local bin out
	bin=$(mktemp -d)
	ln -s "$(command -v dirname)" "$bin/dirname"
	if out=$(PATH=$bin "$(command -v sh)" deploy/container/build.sh 2>&1); then rm -r "$bin"; return 1; fi
	rm -r "$bin"
	echo "$out"
	echo "$out" | grep -q 'needs a container engine: docker (with a running daemon), podman or buildah; found: none' &&
		echo "$out" | grep -q 'apt-get install buildah'
}
check "build.sh without an engine names what to install" engine_named
engine_missing() { # BUILDER names an engine that is not there
	local out
	if command -v podman >/dev/null; then echo "podman is installed"; return 0; fi
	! out=$(BUILDER=podman sh deploy/container/build.sh 2>&1) && echo "$out" && echo "$out" | grep -q 'BUILDER=podman, but podman is not usable here (found:.*buildah'
}
check "BUILDER=podman without podman says what was found" engine_missing
compose_builds() { # the compose file builds its image and seals the state
	grep -q '^    dockerfile: deploy/container/source.Dockerfile$' deploy/compose.yaml &&
		test "$(grep -c '"--state-key-file", "/run/secrets/state-key"' deploy/compose.yaml)" = 2 &&
		grep -q '^  state-key:$' deploy/compose.yaml &&
		grep -q '^    file: ./state-key$' deploy/compose.yaml &&
		diff <(sed -n '/^FROM scratch/,$p' Dockerfile | grep -v '^COPY deploy/container/\(agentauth\|ca-certificates.crt\) ') \
			<(sed -n '/^FROM scratch/,$p' deploy/container/source.Dockerfile | grep -v '^COPY --from=build ')
}
check "compose builds its image (the Dockerfile's final stage) and sets a state key" compose_builds

checks_done
