// Package gateway puts serve in front of other MCP servers ("backends"):
// it forwards every MCP message of an authenticated caller to a backend
// reached over Streamable HTTP or run as a stdio process, and back, and
// applies serve's controls on the way:
//
//   - no token passthrough (MCP "Security Best Practices", Token
//     Passthrough): the caller's Authorization, DPoP and Cookie headers
//     never reach a backend; a backend gets nothing, or the broker
//     session's upstream token in a header (HTTP) or an environment
//     variable (stdio) its config names, and/or an identity assertion
//     minted for its own audience (Options.Assert);
//   - tool policy: toolScopes hides a tool from tools/list and refuses
//     tools/call with HTTP 403 insufficient_scope (RFC 6750 §3.1) when
//     the caller's grant lacks a scope; toolUpstreams asks for an
//     upstream sign-in by URL elicitation before the call;
//   - argument validation: tools/call arguments are checked against the
//     backend's inputSchema (JSON Schema, github.com/google/jsonschema-go)
//     before the backend sees them (-32602), with bounded size and depth;
//   - response scrubbing: tokens serve holds, and configured patterns, are
//     replaced in every message a backend sends, counted per tool;
//   - audit: one structured record per forwarded request.
//
// Sessions: the gateway mints its own Mcp-Session-Id for each MCP session
// (MCP 2025-11-25 "Transports", Session Management), bound to the caller
// (subject and client id), and keeps the backend's session id to itself.
//
// The gateway does not authenticate: its caller (serve's HTTP face) checks
// the token first and passes what it established as a Caller. It imports
// wire, broker and ops (its audit and metrics hook) only.
package gateway
