// Module mcpapp is an outside project's view of agentauth: it uses only
// agentauth's public packages, as any other module would (its go.mod
// replaces agentauth with this checkout).
//
//   - app: an MCP server made with the Go SDK, and its tests, which put
//     agentauthtest's server (serve's gateway and issuer) in front of it;
//   - mcpclient: a Go SDK MCP client authorized by mcptransport;
//   - e2e: a testscript suite with agentauthtest/script's programs and
//     commands: agentauth serve, login, token and call, and mcpclient
//     against serve and against oidc-provider (testdata/oidc).
//
// run.sh runs it all.
package mcpapp
