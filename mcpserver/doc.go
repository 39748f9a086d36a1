// Package mcpserver is serve's MCP face: Streamable HTTP on the resource's
// path (/mcp by default) for MCP 2026-07-28 (stateless: server/discover,
// the protocol version and client capabilities in each request's _meta,
// the standard Mcp-Method/Mcp-Name/Mcp-Param headers, input requests,
// per-request log levels sent as server-sent events before the answer)
// and 2025-11-25, 2025-06-18 and 2025-03-26 (initialize, no
// Mcp-Session-Id), with its tools (whoami, echo and the conformance
// suite's fixtures), a resource and two prompts, and the RFC 9728
// document of the resource (server.go, mcp.go, tools.go).
//
// It is a package of its own so that a gateway can serve MCP, or extend
// this face, without touching the agent host. The one endpoint also
// answers the agent host's methods (before 2026-07-28) and the broker's
// upstream_call tool; rather than import host, which would tie the face
// to the agent host and make an import cycle, it receives a Backend, a
// small interface host.Host implements (Answer, Tools, CallTool), and a
// resource.Verifier for the tokens. Every request's token is checked by
// resource.Bearer before its body is read.
//
// mcpserver imports resource and wire and no other agentauth package.
//
// Not meant for import by other modules: mcpserver is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package mcpserver
