// Package proxy is agentauth proxy TARGET: an MCP server on stdio for its
// parent process that forwards every message to TARGET, an MCP server
// over Streamable HTTP or the legacy HTTP+SSE transport, adding
// agentauth's credential (login on a 401, refresh, step-up on a 403
// insufficient_scope). Messages pass through as the client and the server
// wrote them: the proxy does not initialize by itself, the client's
// initialize goes through, and what the server sends (responses,
// requests, notifications, progress) comes back on stdout as it came.
// Two things it adds: the elicitation.url capability when the client did
// not declare it (URL elicitations are then opened by agentauth, as call
// does), and a JSON-RPC error for a request the server could not be
// reached for. One exception to passing through: a client of an earlier
// revision talking to a server of MCP 2026-07-28 only is bridged to it
// (proxy_bridge.go).
//
// The files, top-down:
//
//	proxy.go           Run: the stdio bridge, its requests under way and their answers
//	proxy_upstream.go  the target's transport: Streamable HTTP or legacy SSE, the fallback
//	proxy_bridge.go    a client of an earlier revision to a server of MCP 2026-07-28 only
//	proxy_listen.go    Server: the same bridge as a loopback Streamable HTTP endpoint (--listen)
//	proxy_listenauth.go  the endpoint's secret: who may use Server
//
// Server fails closed on its callers. A loopback port is open to every
// local process of every user, and Server calls the target with its
// owner's credential, so its endpoint is http://ADDR/SECRET/mcp (Path,
// URL): SECRET is 256 bits from crypto/rand made by NewServer (or kept
// in a 0600 file, --secret-file, so the URL stays the same across starts),
// compared in constant time, and a request without it is answered 403 before its
// body is read, with nothing forwarded. The caller (commands) shows the
// URL only to the owner (stderr, or a 0600 --url-file) and keeps serve's
// Host/Origin guard around Server against DNS rebinding and web pages.
//
// Logins, the stored credential and the step-up state machine are the
// client package's (client.SharedAuth, one per process, shared by every
// message and every --listen session; Client.FollowSignIns and
// Client.AnswerServerRequest for URL elicitations): proxy imports client
// and wire, and client never imports proxy. The terminal is not touched:
// what the person must see goes through client.UI.
//
// Not meant for import by other modules: proxy is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package proxy
