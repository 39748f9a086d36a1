# The agentauth image built from source, for `docker compose build`
# (deploy/compose.yaml): a Go build stage, then the same FROM scratch
# image as the Dockerfile at the top of the checkout, which the release and
# deploy/container/build.sh build from a binary made beforehand (pulling
# nothing). Keep the final stage's lines the same as that Dockerfile's
# (testdata/deploy/run.sh compares them).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -tags urfave_cli_no_docs -o /out/agentauth . && \
    cp /etc/ssl/certs/ca-certificates.crt /out/ca-certificates.crt

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED
# OCI image annotations (github.com/opencontainers/image-spec, annotations.md).
LABEL org.opencontainers.image.title="agentauth" \
      org.opencontainers.image.description="Standards-based authentication for agent protocols: agent host, MCP resource server and gateway, authorization server" \
      org.opencontainers.image.url="https://github.com/agentauth/agentauth" \
      org.opencontainers.image.source="https://github.com/agentauth/agentauth" \
      org.opencontainers.image.documentation="https://github.com/agentauth/agentauth#readme" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/agentauth /agentauth
COPY --from=build /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY deploy/container/passwd /etc/passwd
COPY deploy/container/group /etc/group
COPY --chown=65532:65532 deploy/container/state/ /var/lib/agentauth/
USER 65532:65532
ENV HOME=/var/lib/agentauth
# State goes to this volume; replicas use --database postgres://… instead.
VOLUME ["/var/lib/agentauth"]
EXPOSE 7777
# No shell or curl here: the binary checks its own /readyz (loopback only).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/agentauth", "healthcheck", "--url", "http://127.0.0.1:7777/readyz", "--timeout", "4s"]
ENTRYPOINT ["/agentauth"]
# The serve config (schemes, the login provider or an external issuer) is
# mounted at /etc/agentauth/serve.json: serve on 0.0.0.0 needs one, since
# the development sign-in is for loopback only.
CMD ["serve", "--listen", "0.0.0.0:7777", "--data-dir", "/var/lib/agentauth", "--config", "/etc/agentauth/serve.json"]
