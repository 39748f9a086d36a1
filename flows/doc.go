// Package flows owns agentauth's OAuth protocol primitives, one file per
// thing it implements: discovery of what a
// protected HTTP resource needs (RFC 9728, RFC 8414, OpenID Connect
// Discovery, and the MCP 2025-03-26 fallback), scope and client
// authentication choice, dynamic client registration (RFC 7591), the
// authorization code grant with PKCE over a loopback redirect (RFC 6749,
// RFC 7636, RFC 8252, RFC 9207), the device authorization grant (RFC 8628),
// refresh (RFC 6749 §6) and revocation (RFC 7009), all with resource
// indicators (RFC 8707). The user-level flows that compose them (login,
// refresh under the store lock, sessions) are package client's.
//
// golang.org/x/oauth2 does what it can: PKCE (GenerateVerifier,
// S256ChallengeOption), the authorization URL, and the device grant
// (DeviceAuth, DeviceAccessToken with the resource on the request and every
// poll). The code exchange, refresh, registration and revocation are short
// POSTs here, each saying why.
//
// Before the browser is sent, AuthorizationCode checks what can be
// checked (preflight.go), so that a login the server will refuse ends at
// once with the server's reason rather than at the timeout, the user
// stranded on the server's error page (RFC 6749 §4.1.2.1 forbids it to
// send the browser back when the client or the redirect URI is wrong):
//   - the authorization request itself is sent once without a browser,
//     with a state and a PKCE S256 challenge of its own (RFC 7636 §4.3:
//     a probe is a request as MCP requires it), following no redirect.
//     This is the only way to learn whether the redirect URI is
//     registered: the token endpoint does not compare it with the
//     registration, and RFC 7592 reads need a registration access token
//     that a pre-registered client does not have. A redirect to the
//     redirect URI accepts (a server that approves at once issues a code
//     there that is never redeemed); a redirect elsewhere carrying error=,
//     as ORY Hydra sends to its error page, or a 400, 404 or 410 page
//     refuses; anything else (a sign-in page, a gateway's 401 or 403, a
//     5xx) lets the login go on;
//   - then the token endpoint is asked to redeem a made-up code with the
//     real client, redirect URI and the probe's PKCE verifier:
//     invalid_client (or a bare 401) means the server does not know the
//     client or its secret, invalid_grant that it does (RFC 6749 §3.2.1:
//     the client is authenticated first); a 404 or 405, or no answer,
//     means no token endpoint there.
//
// Neither is sent for a client the server knows by construction: one
// registered in this login (RFC 7591) or a client ID metadata document
// (AuthCodeRequest.NoPreflight). So the MCP conformance suite, which
// counts authorization attempts and checks every request's PKCE, sees
// one authorization request per login there.
//
// github.com/cli/oauth runs GitHub's own device flow (github.go): GitHub's
// device endpoints, its form-encoded answers and its errors in 200
// answers. Its web flow has no PKCE, so GitHub's web flow is the
// authorization code grant here, on the endpoints cli/oauth names.
//
// flows never touches the terminal: URLs, user codes and prompts go through
// callbacks that the caller supplies. It imports wire and no other agentauth
// package (never commands, client or store). Every URL it fetches or hands out must be
// https, or http to a loopback address; every response is bounded to
// MaxBodySize and every request to a timeout. Secrets (tokens, codes,
// verifiers, client secrets) never appear in its errors.
//
// Not meant for import by other modules: flows is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package flows
