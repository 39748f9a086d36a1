// Package issuer is agentauth's embedded development authorization server: a
// strict OAuth 2.0 server that `serve` mounts on its own listener so
// that `login` works without an external identity provider.
//
// It implements RFC 8414 metadata (also served as openid-configuration), the
// authorization code grant with mandatory PKCE S256 (RFC 6749 §4.1, RFC 7636),
// loopback redirects for native clients (RFC 8252 §7.3), the iss authorization
// response parameter (RFC 9207), resource indicators (RFC 8707), refresh token
// rotation with reuse detection, the device authorization grant (RFC 8628),
// revocation (RFC 7009), introspection (RFC 7662), open dynamic client
// registration (RFC 7591) and JWT access tokens (RFC 9068) signed with ES256.
// With Options.AssertionIssuers it also runs the JWT bearer grant (RFC 7523
// §2.1) for workload identity tokens and enterprise ID-JAGs: the
// assertion's sub becomes the token's subject, its jti is remembered
// (maxAssertionJTIs, shared with client assertions) until it expires, at
// most maxGrantAssertionLifetime (1 hour) away.
//
// Its state (registered clients, codes, device codes, grants, refresh
// tokens, revocations, pending consent pages and signing keys) lives in a
// state.Store: in memory by default, or in SQLite or PostgreSQL, where it
// survives a restart and several issuers may share it. Codes, refresh
// tokens, device and user codes and page nonces are stored as their
// SHA-256, client secrets too; access tokens are not stored (the signature
// vouches for them), only their jtis, in their grant and, once revoked,
// until they expire; signing keys are sealed with Options.StateKey when
// one is given. Signing keys rotate every Options.KeyRotation (kid = RFC
// 7638 thumbprint); a rotated key stays in the JWKS until every token it
// signed has expired. Expired records are swept at most every sweepEvery
// (30s), at most maxSweep (1000) per pass. The user code guessing count
// below and the OnRevoke callbacks are per process.
//
// Users sign in at an OpenID Provider when Options.Login is set
// (oidclogin.go: OIDC Core §3.1 code flow with PKCE and a nonce, the ID
// token checked per §3.1.3.7 in idtoken.go, subjects "ISSUER#SUB" or a
// configured claim, allow-lists); otherwise with the development "Sign in
// as" box, which signs anyone in as any name without a password: never
// expose that to a network you do not trust. Either way the browser then
// holds a sealed session cookie (browsersession.go) that the consent and
// device pages and serve's broker read (SignedIn). Logins under way at
// the provider are bounded like consent pages (maxPendingConsents, the
// first to expire evicted). A sign-in there that signs nobody in (the
// provider's error, the allow-lists) goes back to the redirect URI of the
// authorization request that started it, with error and state (RFC 6749
// §4.1.2.1), once that URI checks out for the client (refusal.go);
// otherwise the browser gets a page.
//
// A client_id that is an https URL is a client ID metadata document
// (draft-ietf-oauth-client-id-metadata-document; cimd.go), as
// Options.CIMD says: a document pinned in the configuration stands for its
// URL and is never fetched (so an offline server logs in Claude Code,
// Codex or Copilot CLI: examples in deploy/cimd); any other is fetched
// (CIMDFetch, from CIMDOptions.Hosts only when given; never from a
// private, link-local or, unless the issuer is, loopback address) and
// cached for cimdCacheTTL, or refused (CIMDPinned). CIMDOff neither
// accepts nor advertises documents (client_id_metadata_document_supported
// is then absent from the metadata).
//
// The issuer hands codes only to loopback
// redirect URIs (http://127.0.0.1, http://[::1], http://localhost, any
// port; RFC 8252 §7.3), at registration and for pre-registered clients,
// unless Options.AllowedRedirectOrigins names the https origin; and only the
// metadata documents and the JWKS are readable cross-origin (CORS).
//
// Everything it keeps for a caller is bounded, each bound a constant or a
// field of Limits:
//   - used DPoP proof ids (per key), client assertion ids (per client),
//     JWT bearer assertion ids (per issuer and subject), unredeemed codes
//     (per client) and registrations (per source address and window):
//     each kept until its own expiry, under a bound per owner and one on
//     owners (internal/bounded); at a bound a new one is refused (429 or
//     503 with Retry-After) and a live one is never evicted (Limits);
//   - maxPendingConsents (1000) consent and device pages awaiting an
//     answer: a new one evicts the one that expires first;
//   - maxDeviceAuthorizations (1000) device authorizations and
//     Limits.Clients (10000) registered clients: beyond them a request is
//     refused with 503 temporarily_unavailable; a registered client that
//     was never issued a token is dropped unusedClientTTL (15 minutes)
//     after its last request; a registration is at most
//     maxRegistrationBytes (8 KiB) with maxRedirectURIs (20);
//   - parameters: state and scope at most 1024 bytes (maxStateBytes,
//     maxScopeBytes), redirect_uri and resource 2048 (maxURIBytes),
//     client_id, response_type, code_challenge(_method) and a typed user
//     code 256 (maxParamBytes), client_name 200 characters (maxClientName);
//     longer is invalid_request; parameters the issuer does not read are
//     ignored and not kept; request bodies at most 64 KiB (maxBodyBytes);
//   - user codes typed on the device page (RFC 8628 §5.1): after
//     userCodeFreeFailures (10) wrong codes a code typed within
//     userCodeRetryInterval (2s) of the last wrong one is refused, and after
//     userCodeMaxFailures (30) the page refuses every code for
//     userCodeLockout (5 minutes). The count is issuer-wide.
//
// Issued grants (used codes, refresh and access tokens) are kept until
// their tokens expire, except those without a refresh token (client
// credentials, RFC 6749 §4.4, and JWT bearer, RFC 7523 §2.1), which keep
// no record at all: their access token is a self-contained JWT, checked
// by its signature and the revocation log, and revoked (RFC 7009) by the
// jti it carries; no refresh token names the grant, so reuse detection
// needs nothing of it. The trade-off: such a token is revoked one at a
// time, by presenting it (there is no list of a client's tokens to revoke
// them all at once), and what one client can hold is bounded by a count,
// per process, of its tokens that may still live, not by records:
// Limits.ClientTokens (100,000 per client by default), beyond which a
// grant is refused with 429 and a Retry-After (when its oldest counted
// token expires). A grant's memory is then the same whatever the volume
// (about 100 bytes per client holding a live token). Registered clients
// are decoded from their record once per change of that record, not on
// every request. A grant (a login and its refreshes) is a family
// whose access tokens carry its id as their sid claim: revoking it puts
// that one id in the Store's revocation log (state.Revocation), however
// many tokens it issued, and a refresh revokes nothing. A revoked access
// token's jti goes in the log too. With a shared Store the bounds count every process's records,
// and are approximate under concurrent requests.
//
// issuer owns the HTTP endpoints above and their HTML pages. It imports wire
// for the metadata and error types, state for its Store, and must not
// import commands, flows, store or the agent host: a host learns about
// revocations through OnRevoke (ids: jtis and family ids).
//
// Not meant for import by other modules: issuer is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package issuer
