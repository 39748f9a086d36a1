// Package gateway puts serve in front of other MCP servers ("backends"):
// it forwards every MCP message of an authenticated caller to a backend
// reached over Streamable HTTP or run as a stdio process, and back, and
// applies serve's controls on the way:
//
//   - no token passthrough (MCP "Security Best Practices", Token
//     Passthrough): the caller's Authorization, DPoP and Cookie headers
//     never reach a backend; a backend gets nothing, or the broker
//     session's upstream token in a header (HTTP) or an environment
//     variable (stdio) its config names, and/or a token for its own
//     audience: an identity assertion serve's embedded issuer mints
//     (Options.Assert), or an access token the configured authorization
//     server issues in exchange for the caller's (RFC 8693, exchange.go;
//     the caller's token goes to that server, which issued it, and to
//     no backend);
//   - deny by default: a tools/call for a name the backend did not list
//     in tools/list, exactly, is refused (-32602) before it sees it, so
//     a policy, which names listed tools, cannot be stepped around by a
//     name the backend matches loosely (names.go);
//   - tool policy: toolScopes hides a tool from tools/list and refuses
//     tools/call with HTTP 403 insufficient_scope (RFC 6750 §3.1) when
//     the caller's grant lacks a scope; toolUpstreams asks for an
//     upstream sign-in by URL elicitation before the call;
//   - argument validation: tools/call arguments are checked against the
//     backend's inputSchema (JSON Schema, github.com/google/jsonschema-go)
//     before the backend sees them (-32602), with bounded size and depth;
//   - response scrubbing: tokens serve holds, and configured patterns, are
//     replaced in every message a backend sends, counted per tool;
//   - bounds: a caller's calls in flight and the bytes of their bodies
//     are bounded, per caller (429) and in all (503), with Retry-After
//     (Options.Limits, limits.go);
//   - audit: one structured record per forwarded request, to
//     Options.CallLog (serve holds these up to 10 ms and writes them
//     together; ops.LogWriter says what a crash may lose).
//
// Sessions: the gateway mints its own Mcp-Session-Id for each MCP session
// (MCP 2025-11-25 "Transports", Session Management), bound to the caller
// (subject and client id), and keeps the backend's session id to itself.
//
// HTTP backends are reached by backendTransport (client.go, http.go): requests
// written in one write and answers read by net/http's own parser, on the
// calling goroutine, over a pool of keep-alive connections, which costs
// serve less CPU per call than net/http's Transport; https backends use
// the latter. The common answer to a POST (HTTP/1.1, a Content-Length, a
// JSON or event-stream Content-Type, its head whole in the buffer, written
// plainly) is read without net/http's parser, which reads every other
// answer (head.go).
//
// Stdio backends (stdio.go, process.go, shared*.go) run in one of two
// process modes, the config key process:
//
//   - "session" (the default): one process per MCP session, initialized
//     by the client itself; the only mode that can hold a session's
//     upstream token in its environment (upstreamEnv).
//   - "shared": one process for every caller. serve initializes it (MCP
//     2025-11-25, capabilities sampling and elicitation, not roots, which
//     are each client's own) at start and after each restart, and answers
//     each caller's initialize from that result with the caller's
//     revision when it is older. Requests get ids and progress tokens of
//     serve's, unique on the process, and the caller's come back with the
//     answer and the progress; notifications/cancelled is rewritten
//     likewise. A request of the process (sampling, elicitation, roots)
//     goes to the caller whose request is in flight when exactly one
//     caller has any and declared the capability; otherwise serve answers
//     it with a JSON-RPC error saying why (-32603, or -32601 for an
//     undeclared capability); serve answers ping itself. list_changed
//     notifications fan out to every session's GET stream, and
//     resources/updated to the sessions that subscribed to the URI;
//     other notifications follow the routing of requests or are dropped.
//     upstreamEnv with a shared process is refused by Backend.Check.
//
// MCP 2026-07-28 requests (no session) to a stdio backend are bridged to
// its shared process (in session mode, one shared by the 2026-07-28
// callers; refused with upstreamEnv): Options.CheckRequest checks them as
// serve's MCP face does, server/discover is answered from the process's
// initialize result, the removed methods get 404 -32601,
// subscriptions/listen is served from the fan-out above, results get
// resultType and errors their HTTP status. A request of the process
// during such a call becomes its answer, input_required with a
// requestState of serve's; the caller's retry with inputResponses answers
// the process and goes on with the same call (MCP 2026-07-28 "Multi
// Round-Trip"); further requests the process sent meanwhile are asked in
// the following rounds, one each. A requestState of serve's naming no
// waiting call is refused (-32602); the process's own is passed to it.
//
// A caller of MCP 2025-11-25/06-18/03-26 and an HTTP backend of MCP
// 2026-07-28 only (bridge.go): when the backend refuses the caller's
// initialize with 400 UNSUPPORTED_PROTOCOL_VERSION (-32022) or 404 and
// its server/discover lists 2026-07-28, serve answers the initialize
// (wire.BridgedInitializeResult: the caller's revision, the capabilities
// the bridge carries, serve's session id) and the session's httpConn
// hands the rest to a bridge: requests go with the 2026-07-28 _meta
// envelope (the caller's clientInfo, capabilities and log level) and
// standard headers; input_required becomes requests to the caller on the
// POST's event stream, whose answers go back in inputResponses with the
// backend's requestState (maxBridgeRounds rounds of maxBridgeInputs,
// maxBridgeAsked unanswered per session, each round the backend's
// timeout); ping and logging/setLevel are answered by serve,
// notifications/cancelled closes the backend request, other
// notifications stay, GET is 405. serve probes at every initialize
// instead of caching the finding (a backend changed in place is followed
// at once; one refused request per session). The envelope and unpacking
// pieces live in wire (bridge.go), shared with agentauth proxy's bridge
// (proxy/proxy_bridge.go), which speaks through wire.HTTPSession where
// the gateway speaks through its own transport.
//
// The gateway does not authenticate: its caller (serve's HTTP face) checks
// the token first and passes what it established as a Caller. It imports
// wire, broker, ops (its audit and metrics hook) and flows (the RFC 8693
// client of the token exchange) only.
//
// Not meant for import by other modules: gateway is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
//
// # Layers
//
// The files stand in three layers over a base, read top-down in the order
// a request travels, from the caller's POST to the backend:
//
// The front, the HTTP face and the session:
//
//   - gateway.go: Options, New, Close and the idle sweep.
//   - front.go: Mount.Serve: POST, GET and DELETE of MCP Streamable
//     HTTP, and the relay of a backend's answer to the caller.
//   - session.go: the gateway's sessions (minted, bound to the caller,
//     bounded) and the backend connection each one dials.
//
// The controls, applied to each call on its way:
//
//   - limits.go: what callers hold at once (calls in flight and the bytes
//     of their bodies, per caller and in all): 429 or 503 with
//     Retry-After before the body is read.
//   - names.go: deny by default: a tools/call goes on only for a name
//     the backend listed, matched exactly (listed by serve itself when
//     the name is new; a list serve cannot read or hold whole refuses
//     the names it lacks).
//   - headers.go: MCP 2026-07-28's standard headers (Mcp-Method,
//     Mcp-Name, Mcp-Param-*) checked against the body and rebuilt from
//     it; the caller's never reach the backend.
//   - policy.go: tool scopes, upstream sign-in by URL elicitation, the
//     filtered tools/list and the upstream token a backend gets.
//   - schema.go: tools/call arguments checked against inputSchema.
//   - schemacheck.go, numbers.go, flatschema.go: a backend's inputSchema
//     checked once, when listed, before it is used (and the tool cache
//     taught); numbers float64 cannot hold; arguments of a flat schema
//     accepted without decoding them (refusals are jsonschema-go's).
//   - scrub.go: tokens and patterns replaced in every answer.
//   - identity.go, exchange.go: the backend's own token: an identity
//     assertion, or an RFC 8693 exchange of the caller's.
//   - call.go: one call on its way: its refusals and its audit record.
//
// The transports, one conn (conn.go: post, listen, end) per session:
//
//   - http.go, client.go, head.go, sse.go, peer_*.go: a Streamable HTTP
//     backend (httpConn) over backendTransport.
//   - bridge.go: the bridge to an HTTP backend of MCP 2026-07-28 only.
//   - process.go, sysproc_*.go: a stdio process: started, read, its
//     messages routed, restarted with backoff.
//   - stdio.go: process "session", one process per session.
//   - shared.go, shared_conn.go, shared_route.go, shared_bridge.go:
//     process "shared": the process and its callers, a caller's session,
//     the process's messages routed to callers, and MCP 2026-07-28 callers.
//   - roundtrip.go: the gateway's own requests (tools/list) over a conn.
//
// The base, read by every layer: caller.go (Caller, Broker), config.go
// (Backend, Policy, Redact, TokenExchange and their checks), message.go
// (reading and writing JSON-RPC messages; a member named twice in an
// envelope, which front.go refuses: 400 -32600), jsontext.go (JSON text
// read as bytes: nesting, strings, names a decoder could confuse),
// toolcache.go (the tools a backend listed) and mount.go (Gateway and Mount: the state of the
// gateway and of one backend, which every layer reads).
//
// A file uses its own layer and the layers below it: the base uses no
// control, transport or front file, a transport no control or front file
// (toolcache.go is base), a control no front file. Go's package boundary
// does not enforce this inside one package; three ties run the other way
// by design: a Mount holds its parts (mount.go names the shared process,
// the conn, the exchanger, the scrubber and the tool cache), a stdio
// process hands a shared backend's messages to it (process.go to
// shared.go and shared_route.go), and a bridged HTTP session posts
// through an httpConn of its own (bridge.go to http.go).
package gateway
