// Package mcptransport is an http.RoundTripper that authorizes a Go MCP
// client's requests the way agentauth's own commands do: with the
// credential agentauth stored for the server (agentauth login, or a login
// this transport ran), refreshed before it expires, and a login or a
// step-up when the server refuses.
//
//	t, err := mcptransport.New(mcptransport.Options{})
//	…
//	transport := &mcp.StreamableClientTransport{
//		Endpoint:   "https://mcp.example.com/mcp",
//		HTTPClient: &http.Client{Transport: t},
//	}
//
// # What it does with each request
//
// The request's URL without query and fragment is the MCP server it is
// for (its target, as in agentauth call TARGET). For each target, the
// transport reads the credential stored for it once, then for each
// request:
//   - attaches the access token (Authorization: Bearer, RFC 6750 §2.1;
//     for a DPoP-bound credential Authorization: DPoP with a fresh proof,
//     RFC 9449 §7.1), refreshed first when it expires within a minute
//     (RFC 6749 §6; one refresh across processes, under the store's
//     lock);
//   - on 401, refreshes once, else logs in (RFC 9728 discovery from the
//     challenge, then the authorization code grant with PKCE, or the
//     device grant with Options.Device), then sends the request again;
//   - on 403 with error="insufficient_scope" and a scope, logs in again
//     for the scopes it held plus the challenge's (MCP "Authorization",
//     step-up), then sends it again; at most three logins and step-ups
//     a request, then the server's answer is returned as it is;
//   - any other answer is returned as it came, streams included.
//
// # What it promises
//
// A token goes only to the origin (scheme, host, port) of the resource it
// was issued for, or to a target the user allowed at login (agentauth
// login --allow-resource): the same rule as agentauth call and agentauth
// proxy. A request to any other origin, a redirect included, is sent
// without one (and with a token of that origin's own, if one is stored).
// Tokens never appear in errors or in what Options.Output receives.
//
// Credentials are shared with the agentauth command line: by default the
// transport opens the store agentauth uses ($AGENTAUTH_STORE, the choice
// remembered in $AGENTAUTH_CONFIG_DIR, else the OS keyring, with the
// file store as fallback), so a user's agentauth login serves a Go
// program and the other way round. Options.Store takes any other
// store.Store, for example store.NewMemory() in a test.
//
// A login needs a person: its authorization URL goes to Options.Browser,
// else to Options.Output for someone to open, and the request waits for
// it (Options.Timeout). Options.NoLogin never starts one, for a program
// without a person: the server's 401 or 403 is returned instead. A refused login, or one that times out, fails the
// request with that error; a request the server still refuses after the
// state machine gave up returns the server's 401 or 403.
//
// A Transport is safe for concurrent use; requests to one target share
// its credential, and one login at a time runs for it. It keeps at most
// MaxTargets targets; a request for one more fails.
package mcptransport
