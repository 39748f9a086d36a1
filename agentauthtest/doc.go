// Package agentauthtest starts a real MCP authorization setup inside a Go
// test, as net/http/httptest does for HTTP: agentauth serve's embedded
// OAuth 2.1 authorization server and a protected MCP endpoint, on
// 127.0.0.1 and a free port, stopped when the test ends.
//
//	srv := agentauthtest.NewServer(t)
//	tok := srv.Token(t, agentauthtest.TokenRequest{Subject: "bob"})
//	// tok.HTTPClient() sends it to srv.URL; srv.URL without it gets a 401
//	// whose WWW-Authenticate names the RFC 9728 metadata.
//
// The endpoint at Server.URL is either serve's own MCP server (tools
// whoami and echo), or, with WithHandler, serve's gateway in front of
// your MCP server: the gateway checks each request's token and forwards
// only accepted ones, so your handler is reached by authorized callers
// only and its tests need no token code of their own. The gateway names
// the caller to your handler in an identity assertion, which
// Server.Caller checks.
//
// # What the server is
//
// Everything is agentauth serve's own code, assembled by package server
// as the agentauth serve command assembles it; nothing is faked. It
// speaks, and so a client under test meets:
//   - RFC 9728 protected resource metadata, and a 401 with
//     WWW-Authenticate: Bearer resource_metadata=… for a missing or bad
//     token (MCP "Authorization");
//   - RFC 8414 authorization server metadata, the authorization code
//     grant with mandatory PKCE S256 (RFC 7636) and loopback redirects
//     (RFC 8252 §7.3), the device authorization grant (RFC 8628), refresh
//     token rotation, RFC 8707 resource indicators (the token's audience
//     is the resource), RFC 7009 revocation, RFC 7591 dynamic client
//     registration, client ID metadata documents and RFC 9449 DPoP;
//   - RFC 9068 JWT access tokens signed with ES256;
//   - 403 insufficient_scope naming the scope a tool needs
//     (WithToolScope), which an MCP client answers by stepping up.
//
// Sign-in is auto-approved: no page is shown, and the user is the
// request's Subject (default "alice", WithSubject). So a client under
// test can run its whole login, opening the authorization URL with an
// HTTP GET instead of a browser (Server.Browser does that).
//
// # What it promises
//
// NewServer, the options, Server's fields and methods, TokenRequest and
// Token are the API, kept compatible. The server listens on loopback
// only, on a port it picks (never a fixed one); it is ready when
// NewServer returns and stopped by t.Cleanup. Each Server is independent:
// tests may run them in parallel. Tokens are real and secret: the package
// never logs them. Its logs go to t.Log (WithLogOutput to change that).
//
// The helpers (Token, AuthorizationCode, DeviceCode, Refresh, Revoke) run
// the real grants over HTTP, as a client would, with agentauth's own
// OAuth client (package flows); by default as the pre-registered public
// client agentauth-cli, with WithDCR as a client registered dynamically
// for each grant, with WithCIMD as a client whose client_id is the URL of
// its metadata document (served on loopback for the test), and with
// WithDPoP bound to a fresh DPoP key.
package agentauthtest
