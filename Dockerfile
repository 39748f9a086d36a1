# agentauth serve in a container: a static binary on an empty base image,
# run as an unprivileged user, with no shell.
#
# The binary and the CA bundle are put beside this file first (as the release
# does), so the build pulls no base image:
#   sh deploy/container/build.sh            # docker, or buildah when docker is absent
FROM scratch
COPY deploy/container/agentauth /agentauth
COPY deploy/container/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY deploy/container/passwd /etc/passwd
COPY deploy/container/group /etc/group
COPY --chown=65532:65532 deploy/container/state/ /var/lib/agentauth/
USER 65532:65532
ENV HOME=/var/lib/agentauth
# State goes to this volume; replicas use --database postgres://… instead.
VOLUME ["/var/lib/agentauth"]
EXPOSE 7777
ENTRYPOINT ["/agentauth"]
# The serve config (schemes, the login provider or an external issuer) is
# mounted at /etc/agentauth/serve.json: serve on 0.0.0.0 needs one, since
# the development sign-in is for loopback only.
CMD ["serve", "--listen", "0.0.0.0:7777", "--data-dir", "/var/lib/agentauth", "--config", "/etc/agentauth/serve.json"]
