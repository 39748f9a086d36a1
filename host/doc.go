// Package host is the agent host side of the auth protocol (PROTOCOL.md):
// the requirements (schemes) read from the JSON config, token validation,
// the per-connection or host-wide auth state, the methods of the minimal
// agent host, and the server pushes when a token expires or is revoked.
// It serves them on connections (WebSocket, stdio) and on the HTTP face
// (HTTPHandler): the RFC 9728 metadata and POST to the resource's path
// with a bearer token per request (RFC 6750 §2.1), answering the host's
// methods and an MCP server (mcp.go, mcp_tools.go) for MCP 2026-07-28
// (stateless: server/discover, per-request _meta and standard headers,
// input requests) and 2025-11-25 back to 2025-03-26 (initialize), with
// the tools whoami and echo, the conformance suite's fixture tools, a
// resource and two prompts.
//
// Tokens are validated by one of three validators per scheme:
//   - static: tokens listed in the config. A static token's expiresIn
//     lifetime starts when the host first sees the token (its first
//     authenticate) and stays fixed for the life of the process, so a test
//     can configure "2s" and watch it expire.
//   - jwt: RFC 9068 JWT access tokens verified with go-jose against an
//     ES256/RS256/EdDSA allow-list and the JWKS found through the
//     authorization server's RFC 8414 metadata (fetched lazily, cached,
//     refetched on an unknown kid at most once per 10 s, at most 64 keys and
//     1 MiB). typ must be at+jwt (an ID token, typ JWT or none, is
//     refused), every segment canonical base64url; iss must be one of the
//     scheme's authorization servers, aud must contain the resource; nbf
//     and iat get 30 s of leeway, exp none (the host pushes "expired" at
//     exp).
//   - introspection: RFC 7662 with client_secret_basic; a result is
//     trusted for at most cacheTTL (default 30 s) and never past exp, and a
//     held token is re-introspected every cacheTTL so that active:false
//     (revoked) is pushed without waiting for the next call.
//
// Every message to a connection goes through its bounded send queue
// (sendQueueSize), so a peer that stops reading is closed rather than
// allowed to stall the pushes to others; one owner holds at most
// maxSessionsPerOwner agent sessions, kept in Options.Store (memory by
// default) so that they survive a restart and replicas share them. NewGuard wraps a listener's handler
// so that it answers only requests whose Host names it (DNS rebinding) and
// refuses foreign Origins on the MCP endpoint and WebSocket upgrades.
//
// Every accepted token is cached by its SHA-256 until it expires; the token
// itself is kept only in memory while a connection (or the host) holds it,
// and never appears in logs, errors or results.
//
// With Options.Broker, the host also calls upstream APIs as the user
// (broker.go): the upstream_call tool and the gated methods named in
// methodUpstreams ask the client, each protocol its own way, to send the
// user to a sign-in page, and BrokerHandler serves /auth-status,
// /auth/logout and the plain HTTP face POST /tools/{name}.
//
// host imports wire, state (for its Store) and broker, and no other
// agentauth package; it knows nothing of flags, colour or exit codes
// (that is commands).
package host
