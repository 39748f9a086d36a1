// Package client is agentauth's client core: one plain Go API for each
// user-level flow, usable without the CLI.
//
//   - login (login.go): scope choice, client choice (pre-registered, stored
//     registration, client ID metadata document, dynamic registration,
//     once per issuer under the store lock), the grant (PKCE loopback or
//     device), the credential saved; GitHub hosts with GitHub's own flow
//     (github.go) and servers without metadata with the endpoints the user
//     gives (legacy.go);
//   - credentials (credentials.go): selection for a target with the origin
//     binding (mayReceive), refresh under the store's inter-process lock,
//     rotation, rejected registrations marked;
//   - host session (host.go, session.go): dial (ws, wss, stdio), initialize
//     in either dialect, authenticate per scheme, renew after
//     invalid_token, follow auth pushes and re-authenticate (Watch);
//   - MCP session (mcp.go, stepup.go): Streamable HTTP with the 401 / 403
//     insufficient_scope retry and step-up state machine;
//   - the shared credential (sharedauth.go): one target's credential and
//     the MCP session's step-up state machine shared by every message a
//     long-lived bridge forwards (the proxy and mcptransport packages,
//     which import client; client never imports them);
//   - discovery (discover.go), revoke (revoke.go) and status (status.go).
//
// Each flow takes a request struct and its dependencies (Client: the
// store, the HTTP client, the browser opener, the UI callbacks, the clock)
// and returns a result struct or an error; an *AuthError means the user
// must log in (its Hint says how), a *UsageError that the request cannot
// work as given.
//
// It is a package of its own, beside flows rather than inside it, because
// it is a different layer: flows holds the OAuth protocol primitives, one
// file per RFC, and imports only wire; the client core composes them with
// the credential store and the agent host protocol, so it imports flows,
// store and wire. Putting it in flows would make the primitives depend on
// storage.
//
// The layers, each importing only those below it (a login walks down them
// once: commands → client → flows → wire, and client → store):
//
//	main.go       os.Exit(commands.Main())
//	commands/     flags, terminal (colour, spinner, opener), rendering, exit codes
//	proxy/        agentauth proxy: another MCP client's messages with client's credential
//	client/       login, credentials, host session, MCP session, revoke, status
//	flows/        OAuth primitives: discovery, authorization code, device, token, registration, revocation
//	host/ issuer/ the server side
//	wire/ store/  protocol types and transports; credential storage
//
// client never touches the terminal: what the person must see goes through
// UI, and strings from peers are made safe there. It imports flows, store
// and wire, never commands, proxy, host or issuer. Secrets never appear in its
// errors or logs.
//
// Not meant for import by other modules: client is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package client
