// Package wire is the protocol core shared by the agent host (serve) and the
// client commands: JSON-RPC 2.0 messages, the auth messages of PROTOCOL.md in
// both dialects (the seed design and the published Agent Host Protocol 0.9),
// the -32007 challenge, RFC 9728 / RFC 8414 metadata types, WWW-Authenticate
// (RFC 6750 §3, RFC 9728 §5.1) and the transports: WebSocket and stdio
// behind Conn, plus the client side of MCP Streamable HTTP (HTTPSession,
// with its SSE reader; Forward and Listen pass another client's messages
// through it) and of the legacy HTTP+SSE transport (LegacySSESession).
//
// wire imports none of agentauth's other packages.
//
// Not meant for import by other modules: wire is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package wire
