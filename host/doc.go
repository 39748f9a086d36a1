// Package host is the agent host: the requirements (schemes) read from
// serve's JSON config, the per-connection or host-wide auth state (grant
// tables, held tokens, pushes when a token expires or is revoked), the
// three protocol faces on WebSocket and stdio connections, the agent
// sessions, and the broker glue that signs a session in to upstream APIs.
//
// Files, one concern each:
//   - config.go: the config file (Config, ParseConfig, Resolve).
//   - host.go: Host, New, the schemes in force (reload.go: Reload).
//   - validate.go, auth.go: token validation against the schemes and the
//     revocations (NotifyRevoked, ValidateBearer), the grant tables, the
//     gate of the gated methods, challenges and auth state.
//   - conn.go: connection I/O (connIO): the bounded send queue
//     (sendQueueSize; a peer that stops reading is closed with WebSocket
//     status 1008 rather than allowed to stall the pushes to others), the
//     write overrun (writeTimeout), WebSocket upgrades with small buffers.
//   - session.go: a connection's session: open, serve, stop, and the auth
//     push in its dialect.
//   - dispatch.go: one message in, one answer out, for every dialect
//     (handle), and Dispatch for requests of the HTTP face.
//   - initialize.go, authenticate.go: what the dialects share of
//     initialize and authenticate.
//   - ahp.go: AHP as shipped (microsoft/agent-host-protocol, the
//     published dialect): SemVer negotiation, root and session channels,
//     subscribe, the session commands, auth/required.
//   - design.go: the design dialect (PROTOCOL.md): its initialize,
//     notify/authRequired, the deprecated setAuthToken.
//   - acp.go: ACP (agentclientprotocol): its initialize, authenticate with
//     a token in _meta, logout, and the upstream sign-in auth methods.
//   - agentsessions.go: the agent sessions, kept in Options.Store (memory
//     by default) so that they survive a restart and replicas share them;
//     one owner holds at most maxSessionsPerOwner.
//   - broker.go, broker_http.go: with Options.Broker, calls to upstream
//     APIs as the user: the upstream_call tool and the gated methods named
//     in methodUpstreams ask the client, each protocol its own way, to send
//     the user to a sign-in page; BrokerHandler serves /auth-status,
//     /auth/logout and the plain HTTP face POST /tools/{name}.
//   - http.go, resources.go: the HTTP face (HTTPHandler: the MCP face of
//     package mcpserver with the host as its Backend, VerifyBearer its
//     token check) and the RFC 9728 documents of the other schemes.
//   - guard.go: NewGuard, which answers only requests whose Host names the
//     listener (DNS rebinding) and refuses foreign Origins on the MCP
//     endpoint and WebSocket upgrades.
//
// Tokens are checked by package resource (static, RFC 9068 JWT, RFC 7662
// introspection, DPoP), through a grant cache per scheme; a static
// token's expiresIn lifetime starts when the host first sees the token.
// The token itself is kept only in memory while a connection (or the
// host) holds it, and never appears in logs, errors or results.
//
// host imports resource, mcpserver, gateway (the types of the config's
// backends and tool policy), wire, state and broker, and no other
// agentauth package; it knows nothing of flags, colour or exit codes
// (that is commands). The layers: commands → host → mcpserver → resource
// → wire, state.
//
// Not meant for import by other modules: host is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package host
