// Package broker is serve's OAuth client for upstream APIs: it signs each
// broker session (one signed-in client of serve: its token's subject and
// client id) in to an upstream authorization server itself, keeps the
// upstream tokens in the state store, refreshes them, and revokes them on
// logout, so that serve can call the upstream API as the user while the
// upstream tokens never leave serve (seed 004: an MCP server calling Rally
// as the user).
//
// A sign-in is the authorization code grant (RFC 6749 §4.1) with PKCE S256
// (RFC 7636) unless the upstream cannot, run between serve's own
// /auth/start and /callback: the URL handed to the user names a pending
// sign-in by an opaque id and carries no secret. When serve's embedded
// issuer issued the session's token (Options.Browser), the link is bound
// to that user: /auth/start opens it only in a browser signed in at the
// issuer as the session's subject, after the user confirmed a page naming
// the client, session, upstream and scopes (confirm.go); anyone else is
// refused. /auth/start then binds the browser with a cookie, and /callback
// refuses an unknown, expired, reused or cross-browser state and an iss
// that is not the upstream's (RFC 9207 §2.4).
//
// A broker session ends, for the broker, when serve is told so: POST
// /auth/logout or ACP logout (revoking at the upstreams unless
// revokeOnLogout is false), or, for clients of serve's embedded issuer,
// when the client revokes its last grant there (RFC 7009; the host's
// EndSession, revokeOnSessionEnd). A connection closing does not end it
// (the session outlives connections and restarts by design), and the
// sessions of an external authorization server have no end serve can
// observe: an expired or revoked token looks like one not presented.
//
// broker owns its records in the state store (kinds broker_*) and imports
// flows, state and wire only; the host asks it for tokens and sign-ins.
// The upstream tokens are kept (the refresh token must be used, so it is
// not hashed), sealed with AES-256-GCM under the state key when serve has
// one (--state-key-file), in clear in the store otherwise.
//
// Not meant for import by other modules: broker is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package broker
