#!/usr/bin/env bash
# $BROWSER for the conformance run: "opens" the authorization URL by fetching
# it and following redirects. The suite's mock authorization servers approve
# at once with a redirect to the redirect_uri, so this lands on agentauth's
# loopback callback with the code and state, as a browser would.
set -euo pipefail
exec curl --silent --show-error --fail --location --max-redirs 5 --max-time 20 --output /dev/null -- "$1"
