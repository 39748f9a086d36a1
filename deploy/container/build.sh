#!/bin/sh
# Builds the agentauth container image (tag: agentauth:dev, or $1) from this
# checkout: a static binary and the host's CA bundle beside the Dockerfile,
# then docker build, or buildah bud when docker has no engine (or BUILDER=buildah).
set -eu
cd "$(dirname "$0")/../.."
tag=${1:-agentauth:dev}
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -tags urfave_cli_no_docs -o deploy/container/agentauth .
cp /etc/ssl/certs/ca-certificates.crt deploy/container/ca-certificates.crt
if [ "${BUILDER:-}" != buildah ] && docker info >/dev/null 2>&1; then
	docker build -t "$tag" .
else
	buildah bud --layers=false -t "$tag" .
fi
