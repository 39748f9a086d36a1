// Package server assembles agentauth serve from its Options: the logs,
// the config and its reload on SIGHUP, the listener (TLS), the state
// store and its key, the embedded issuer and its sign-in, the upstream
// broker, the agent host, the gateway in front of the backends, the
// operations surface and the HTTP mux with its guard. New builds it, top
// to bottom; Run serves until the context ends (or, with Options.Stdio,
// until stdin closes) and shuts down.
//
// Files, one concern each:
//   - server.go: Server, New (the assembly, in order), Run, Close.
//   - options.go: Options; errors.go: OptionsError.
//   - config.go: the config file or the built-in one, what the embedded
//     issuer needs from it, the reload on SIGHUP.
//   - login.go: how the embedded issuer signs users in.
//   - state.go: the state store and the state key.
//   - broker.go: the upstream broker; gateway.go: the gateway and its
//     mounts behind the token checks.
//   - mux.go: the routes and the guard's options.
//   - ops.go: logs, metrics, health, landing page, TLS reload, HTTP
//     bounds; revocations.go: refusing while the revocation log is stale.
//
// It sits between commands (above) and host, issuer, broker, gateway,
// resource, mcpserver, ops and state (below). It must not import
// commands or client, and knows nothing of flags, colour or exit codes:
// a value or combination the caller got wrong is an *OptionsError, which
// the caller maps as it likes. (Its messages name serve's flags, as the
// user's next step; it reads none.)
//
// Not meant for import by other modules: server is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package server
