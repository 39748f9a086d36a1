// Package resource is what a protected resource (RFC 9728) needs to check
// the access tokens sent to it, one file per standard, as the MCP Go SDK's
// auth and oauthex packages are laid out:
//   - scheme.go: Scheme, one auth requirement (who issues its tokens, how
//     they are validated), NewValidator, and CheckFetchURL (https, or http
//     on loopback only).
//   - static.go: tokens listed in the config, for tests and demos; a
//     token's expiresIn lifetime starts when it is first seen.
//   - jwt.go: RFC 9068 JWT access tokens verified with go-jose against an
//     ES256/RS256/EdDSA allow-list (RFC 8725 §3.1): typ at+jwt (an ID
//     token is refused), every segment canonical base64url, iss one of the
//     scheme's authorization servers, aud the resource; nbf and iat get 30
//     s of leeway, exp none.
//   - fetch.go: JWKS and RFC 8414 / OpenID metadata fetching: lazily,
//     cached, refetched on an unknown kid at most once per 10 s, at most
//     64 keys and 1 MiB, over https or loopback http.
//   - introspect.go: RFC 7662 introspection with client_secret_basic; a
//     result is trusted for at most the scheme's cacheTTL (default 30 s)
//     and never past exp.
//   - grant.go: Grant (what a token establishes; never the token),
//     TokenError, and Checker: a scheme's validator behind a grant cache
//     keyed by the token's SHA-256 (at most 4096 grants), with single
//     flight: the concurrent first uses of one token validate it once.
//   - dpop.go: RFC 9449 DPoP: the cnf.jkt binding and the proof checks
//     (htm, htu, iat within 60 s, ath, jkt) with a replay cache of proof
//     ids kept until iat + 60 s, bounded per key and in all
//     (DPoPProofLimits, internal/bounded); full, it refuses new proofs
//     with 429 or 503 and Retry-After, never evicting a kept id.
//   - bearer.go: RFC 6750 bearer tokens on HTTP: RequireBearerToken, a
//     middleware in the spirit of the MCP Go SDK's auth.RequireBearerToken.
//     It reads the token from the Authorization header only (Bearer or
//     DPoP; a token in the query or a form body is refused), checks it with
//     a Verifier, holds a DPoP-bound token to a proof per request, and
//     answers 400/401/403/415/503 with the WWW-Authenticate challenge
//     naming resource_metadata (RFC 9728 §5.1) and a JSON-RPC error body;
//     an accepted request reaches the next handler with its grant in the
//     context (GrantFromContext). Bearer is the same check for a handler
//     that answers refusals itself (the MCP face).
//   - metadata.go: RFC 9728 §3 metadata addresses and answers. The
//     root document (/.well-known/oauth-protected-resource) of a resource
//     with a path names the origin, not the path: §3.3 has clients check
//     the resource against the identifier the URL was built from, and
//     the MCP Go SDK, Gemini CLI and the TypeScript SDK (mcp-remote, the
//     Inspector) each accept that, each in its own way (RootMetadata says
//     how); tokens are still accepted for the path only.
//
// A protected resource answers a request without a valid token with 401
// and the challenge whatever its method (GET and HEAD included), before
// any 405: a client that probes with HEAD to find the challenge finds it.
//
// A handler outside the host is protected with the host's schemes by
//
//	mux.Handle("/mcp/backend", resource.RequireBearerToken(h.VerifyBearer,
//		&resource.BearerOptions{ResourceMetadataURL: h.ResourceMetadataURL(), Resource: resourceID})(backend))
//
// and reads resource.GrantFromContext(r.Context()) in backend.
//
// resource imports wire (and may import state) and no other agentauth package (no
// host, no mcpserver, no commands): host, mcpserver and a gateway use it.
//
// Not meant for import by other modules: resource is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package resource
