package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// SharedAuth is one target's credential shared by every message a
// long-lived bridge forwards for another MCP client (agentauth proxy, the
// proxy package): the step-up state machine (authRetry) runs per
// message, one recovery at a time, and what it obtains serves the others.
// Build it with NewSharedAuth.
type SharedAuth struct {
	cl     *Client
	target string
	call   MCPCall
	cs     *Credentials

	mu      sync.Mutex // one recovery at a time; guards held
	held    *store.Credential
	refresh func(context.Context, *store.Credential) (*store.Credential, error)
	// storeErr is why the store cannot be used (cs is then nil).
	storeErr error
}

// NewSharedAuth reads the stored credential for target (useStored, but a
// store that does not work is only a warning: a server that needs no
// token is served all the same, and a 401 then reports the store's
// error).
func (cl *Client) NewSharedAuth(ctx context.Context, target string, choices Choices) *SharedAuth {
	a := &SharedAuth{cl: cl, target: target, call: MCPCall{Target: target, Login: !choices.NoLogin, Choices: choices}}
	c := &mcpCall{cl: cl, req: a.call, retry: &authRetry{Login: a.call.Login}}
	if a.storeErr = c.useStored(ctx); a.storeErr != nil {
		// One line: the client shows its server's stderr as a log.
		cl.UI.Warn("no stored credential can be used: " + a.storeErr.Error())
		return a
	}
	if a.cs, a.storeErr = cl.Credentials(); a.storeErr != nil {
		return a
	}
	a.held, a.refresh = c.retry.Held, c.retry.Refresh
	return a
}

// Current is the credential sent now (nil: none).
func (a *SharedAuth) Current() *store.Credential {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// Token is the access token to send: the held one, refreshed first when it
// expires within the leeway (Credentials.Usable, under the store lock, so
// concurrent proxies refresh once). A failed refresh keeps the token: the
// server's 401 then starts a recovery.
func (a *SharedAuth) Token(ctx context.Context) (string, error) {
	held := a.Current()
	if held == nil {
		return "", nil
	}
	if held.Key.Resource != "" && !a.cs.fresh(held) {
		c, err := a.cs.Usable(ctx, held.Key, a.target)
		if err != nil {
			a.cl.logger().Debug("cannot refresh the token before it expires", "err", err)
			return held.AccessToken, nil
		}
		a.mu.Lock()
		if a.held == held {
			a.held = c
		}
		held = a.held
		a.mu.Unlock()
	}
	return held.AccessToken, nil
}

// maxSharedRetries bounds the sends of one message: each refusal is either
// recovered by the state machine (at most a refresh and maxAuthorizations
// logins) or met by a credential another message obtained meanwhile.
const maxSharedRetries = 2*maxAuthorizations + 2

// Do runs send until the server stops refusing it with a 401 or 403, or
// the state machine gives up (a *RefusedError, or the login's error).
func (a *SharedAuth) Do(ctx context.Context, method string, send func(context.Context) error) error {
	r := &authRetry{Login: a.call.Login, Refresh: a.refresh}
	c := &mcpCall{cl: a.cl, req: a.call, retry: r, method: method}
	r.Authorize = a.loginOnce(c.authorize)
	for try := 0; ; try++ {
		sent := a.Current()
		err := send(ctx)
		var refusal *wire.HTTPAuthError
		if !errors.As(err, &refusal) || try == maxSharedRetries {
			return err
		}
		if a.storeErr != nil {
			return fmt.Errorf("%w; cannot log in: %w", err, a.storeErr)
		}
		a.mu.Lock()
		if a.held != sent {
			a.mu.Unlock()
			continue // another message got a new credential: try it
		}
		if !a.call.Login {
			// No login of its own: one another process stored since
			// (agentauth login TARGET) is what can answer the refusal.
			if c := a.loggedInElsewhere(ctx, a.held, nil); c != nil {
				a.held = c
				a.mu.Unlock()
				continue
			}
		}
		r.Held = a.held
		err = r.recover(ctx, refusal)
		if err == nil {
			a.held = r.Held
		}
		a.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// loginOnce runs login under an inter-process lock on the target, so
// that of several proxies refused at once only the first logs in: the
// others, once they hold the lock, find its credential in the store and
// use it. It runs under a.mu (Do), so a.held is the credential refused.
func (a *SharedAuth) loginOnce(login func(context.Context, *wire.HTTPAuthError, []string) (*store.Credential, error)) func(context.Context, *wire.HTTPAuthError, []string) (*store.Credential, error) {
	return func(ctx context.Context, refusal *wire.HTTPAuthError, scopes []string) (*store.Credential, error) {
		refused := a.held
		unlock, err := a.cs.Store.Lock(ctx, store.Key{Resource: "login " + NormalizeTarget(a.target)})
		if err != nil {
			return nil, fmt.Errorf("cannot lock the login to %s: %w", wire.RedactTarget(a.target), err)
		}
		defer unlock()
		if c := a.loggedInElsewhere(ctx, refused, scopes); c != nil {
			a.cl.UI.Say("Using the login another agentauth process just completed for " + wire.RedactTarget(a.target) + ".")
			return c, nil
		}
		return login(ctx, refusal, scopes)
	}
}

// loggedInElsewhere is a credential for the target that another
// process's login stored, holding scopes, made usable; or nil. Any
// credential but the one refused counts (refused, nil when the request
// carried none): a time taken at the refusal would miss a login that
// ended between this process's reading the store and its 401.
func (a *SharedAuth) loggedInElsewhere(ctx context.Context, refused *store.Credential, scopes []string) *store.Credential {
	creds, err := a.cs.ForTarget(ctx, a.target, "")
	if err != nil {
		return nil
	}
	for _, c := range creds {
		if c.SchemeID != "" || c.Rejected != "" || (refused != nil && c.AccessToken == refused.AccessToken) ||
			slices.ContainsFunc(scopes, func(s string) bool { return !slices.Contains(c.Scopes, s) }) {
			continue
		}
		if u, err := a.cs.Usable(ctx, c.Key, a.target); err == nil {
			return u
		}
	}
	return nil
}
