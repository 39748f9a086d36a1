#!/bin/sh
# Builds the agentauth container image (tag: agentauth:dev, or $1) from this
# checkout: a static binary and the host's CA bundle are put beside the
# Dockerfile (and removed afterwards), then the image is built with a
# container engine. It needs one of:
#   docker  (with a daemon it can reach: `docker info` succeeds)
#   podman
#   buildah
# BUILDER=docker|podman|buildah picks one; otherwise the first that works,
# in that order. podman and buildah build in Docker's image format, which
# keeps the Dockerfile's HEALTHCHECK (the OCI format has none).
set -eu
cd "$(dirname "$0")/../.."
tag=${1:-agentauth:dev}

found=
have() { command -v "$1" >/dev/null 2>&1; }
if have docker; then
	if docker info >/dev/null 2>&1; then found="$found docker"; else found="$found docker(no-daemon)"; fi
fi
have podman && found="$found podman"
have buildah && found="$found buildah"

engine=${BUILDER:-}
if [ -n "$engine" ]; then
	case $engine in
	docker | podman | buildah) ;;
	*) echo "build.sh: BUILDER must be docker, podman or buildah, not $engine" >&2; exit 2 ;;
	esac
	case " $found " in
	*" $engine "*) ;;
	*) echo "build.sh: BUILDER=$engine, but $engine is not usable here (found:${found:- nothing})" >&2; exit 1 ;;
	esac
else
	for e in docker podman buildah; do
		case " $found " in *" $e "*) engine=$e; break ;; esac
	done
fi
if [ -z "$engine" ]; then
	echo "build.sh: needs a container engine: docker (with a running daemon), podman or buildah; found:${found:- none}" >&2
	echo "Install one, for example: apt-get install buildah (or podman), or start the docker daemon." >&2
	exit 1
fi
echo "build.sh: building $tag with $engine (found:$found)" >&2

version=$(git describe --tags --always 2>/dev/null || echo dev)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} +%Y-%m-%dT%H:%M:%SZ)
trap 'rm -f deploy/container/agentauth deploy/container/ca-certificates.crt' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -tags urfave_cli_no_docs -o deploy/container/agentauth .
cp /etc/ssl/certs/ca-certificates.crt deploy/container/ca-certificates.crt
set -- --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$created" -t "$tag" .
case $engine in
docker) docker build "$@" ;;
podman) podman build --format docker "$@" ;;
buildah) buildah bud --format docker --layers=false "$@" ;;
esac
