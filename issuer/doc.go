// Package issuer is agentauth's embedded development authorization server: a
// strict, in-memory OAuth 2.0 server that `serve` mounts on its own listener so
// that `login` works without an external identity provider.
//
// It implements RFC 8414 metadata (also served as openid-configuration), the
// authorization code grant with mandatory PKCE S256 (RFC 6749 §4.1, RFC 7636),
// loopback redirects for native clients (RFC 8252 §7.3), the iss authorization
// response parameter (RFC 9207), resource indicators (RFC 8707), refresh token
// rotation with reuse detection, the device authorization grant (RFC 8628),
// revocation (RFC 7009), introspection (RFC 7662), open dynamic client
// registration (RFC 7591) and JWT access tokens (RFC 9068) signed with ES256.
//
// State (clients, codes, tokens) lives in memory and dies with the process;
// the signing key is generated at New. Every approval signs in as a dev user
// (Options.Subject) without a password: never expose this server to a network
// you do not trust.
//
// issuer owns the HTTP endpoints above and their HTML pages. It imports wire
// for the metadata and error types and must not import commands, flows, store
// or the agent host: a host learns about revocations through OnRevoke.
package issuer
