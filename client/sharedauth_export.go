package client

import "context"

// SharedAuth is one target's credential shared by every request of a
// long-lived client (agentauth proxy, the mcptransport package): the
// step-up state machine (authRetry) runs per request, one recovery at a
// time, and what it obtains serves the others. Build it with
// NewSharedAuth.
type SharedAuth = proxyAuth

// NewSharedAuth reads the stored credential for target (useStored, but a
// store that does not work is only a warning: a server that needs no
// token is served all the same, and a 401 then reports the store's
// error).
func (cl *Client) NewSharedAuth(ctx context.Context, target string, choices Choices) *SharedAuth {
	return newProxyAuth(ctx, cl, target, choices)
}

// Token is the access token to send: the held one, refreshed first when
// it expires within the leeway. A failed refresh keeps the token: the
// server's 401 then starts a recovery.
func (a *proxyAuth) Token(ctx context.Context) (string, error) { return a.token(ctx) }

// Do runs send until the server stops refusing it with a 401 or 403, or
// the state machine gives up (a *RefusedError, or the login's error).
func (a *proxyAuth) Do(ctx context.Context, method string, send func(context.Context) error) error {
	return a.do(ctx, method, send)
}
