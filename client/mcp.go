package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// CallTimeout bounds each request of a call (connecting, initialize,
// authenticate, the method); a login has its own bound.
const CallTimeout = 60 * time.Second

// MCPCall is one call to an MCP server over Streamable HTTP (MCP
// 2026-07-28, else 2025-11-25 and earlier, "Transports"): server/discover
// (or initialize with a server that does not speak 2026-07-28; both are
// the "initialize" step of messages, whose result `call TARGET initialize`
// prints), then Method unless it is initialize.
type MCPCall struct {
	Target string
	Method string
	// Params are the method's params (nil: none).
	Params json.RawMessage
	// Token is sent instead of the stored credential when not empty.
	Token string
	// Login allows logging in on a 401 and stepping up on a 403
	// insufficient_scope (call --login), with Choices.
	Login   bool
	Choices Choices
	// SignIn says how to follow an upstream sign-in the server asks for.
	SignIn SignInOptions
	// Version, when set, is the only MCP revision to speak
	// (wire.HTTPSession.Version).
	Version string
}

// CallError is a failed step of a call: Method is the method that failed.
type CallError struct {
	Method string
	Err    error
}

func (e *CallError) Error() string { return fmt.Sprintf("cannot call %s: %v", e.Method, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// mcpCall is a call under way.
type mcpCall struct {
	cl    *Client
	req   MCPCall
	retry *authRetry
	// method is the method being sent, for messages.
	method string
}

// CallMCP runs req, authorizing through the step-up state machine
// (authRetry), and returns the method's raw result. A refused or failed
// step is a *CallError; a failed login or refresh says itself what went
// wrong.
func (cl *Client) CallMCP(ctx context.Context, req MCPCall) (json.RawMessage, error) {
	c := &mcpCall{cl: cl, req: req, retry: &authRetry{Login: req.Login}}
	if req.Token != "" {
		c.retry.Held = &store.Credential{AccessToken: req.Token}
	} else if err := c.useStored(ctx); err != nil {
		return nil, err
	}
	c.retry.Authorize = c.authorize

	// Each request is bounded by CallTimeout; a login has its own bound.
	hc := http.Client{}
	if cl.HTTPClient != nil {
		hc = *cl.HTTPClient
	}
	hc.Timeout = 0
	sess, err := wire.NewHTTPSession(req.Target, &hc, func(context.Context) (string, error) {
		if c.retry.Held == nil {
			return "", nil
		}
		return c.retry.Held.AccessToken, nil
	})
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	sess.Capabilities = wire.URLElicitationCapabilities
	sess.Version = req.Version
	sess.HandleRequest = c.serverRequest

	var raw json.RawMessage
	err = c.send(ctx, wire.MethodInitialize, func(ctx context.Context) error {
		res, err := sess.Initialize(ctx, "agentauth", cl.Version)
		if err == nil {
			raw = res.Raw
		}
		return err
	})
	if err != nil {
		return nil, c.failure(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sess.Close(cctx); err != nil {
			cl.logger().Debug("cannot end the MCP session", "err", err)
		}
	}()
	if req.Method != wire.MethodInitialize {
		if raw, err = c.callFollowing(ctx, sess); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// callFollowing sends the method; when the server asks for an upstream
// sign-in (mcpSignInAsks), it follows it and sends the method once more.
func (c *mcpCall) callFollowing(ctx context.Context, sess *wire.HTTPSession) (json.RawMessage, error) {
	params := c.req.Params
	var raw json.RawMessage
	call := func(params json.RawMessage) error {
		var p any
		if params != nil {
			p = params
		}
		return c.send(ctx, c.req.Method, func(ctx context.Context) error {
			raw = nil
			return sess.Call(ctx, c.req.Method, p, &raw)
		})
	}
	err := call(params)
	if asks, retry, ok := mcpSignInAsks(err, raw, params); ok {
		w := signInWait{Origin: httpOrigin(c.req.Target)}
		if c.retry.Held != nil {
			w.Token = c.retry.Held.AccessToken
		}
		if err := c.cl.followAll(ctx, c.req.Method, asks, c.req.SignIn, w); err != nil {
			return nil, err
		}
		err = call(retry)
		if asks, _, ok := mcpSignInAsks(err, raw, params); ok {
			return nil, stillNeeded(c.req.Method, asks[0])
		}
	}
	if err != nil {
		return nil, c.failure(err)
	}
	return raw, nil
}

// failure wraps a failed step's error, except a failed login or refresh
// (an *AuthError), which says itself what went wrong.
func (c *mcpCall) failure(err error) error {
	var auth *AuthError
	if errors.As(err, &auth) && !errors.As(err, new(*RefusedError)) {
		return err
	}
	return &CallError{Method: c.method, Err: err}
}

// useStored sets up the stored credential for the target, refreshed when
// it expires within RefreshLeeway. With Login, the store must work (the
// keyring is probed before anything is approved), and a credential that
// cannot be refreshed is replaced by a login when the server asks.
func (c *mcpCall) useStored(ctx context.Context) error {
	cl, target := c.cl, c.req.Target
	if c.req.Login {
		if _, err := cl.UsableStore(ctx); err != nil {
			return err
		}
	}
	cs, err := cl.Credentials()
	if err != nil {
		return err
	}
	c.retry.Refresh = func(ctx context.Context, stale *store.Credential) (*store.Credential, error) {
		cl.logger().Debug("the server rejected the stored token; refreshing it", "resource", stale.Resource)
		return cs.Refresh(ctx, stale, target)
	}
	creds, err := cs.ForTarget(ctx, target, "")
	if err != nil {
		return err
	}
	for _, cred := range creds {
		if cred.SchemeID != "" {
			continue // an agent host's scheme: log in to the MCP server itself
		}
		held, err := cs.Usable(ctx, cred.Key, target)
		var auth *AuthError
		if errors.As(err, &auth) && c.req.Login {
			cl.UI.Warn(err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		c.retry.Held = held
		return nil
	}
	return nil
}

// send runs one step (initialize or the method) through the state machine,
// each attempt within CallTimeout.
func (c *mcpCall) send(ctx context.Context, method string, step func(context.Context) error) error {
	c.method = method
	return c.retry.do(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, CallTimeout)
		defer cancel()
		return step(ctx)
	})
}

// authorize is authRetry.Authorize: discovery from the refusal's challenge
// (its resource_metadata and scope; no new probe), then Login with the
// call's choices.
func (c *mcpCall) authorize(ctx context.Context, refusal *wire.HTTPAuthError, scopes []string) (*store.Credential, error) {
	cl := c.cl
	d, err := flows.DiscoverResourceFromChallenge(ctx, cl.HTTPClient, c.req.Target, refusal.StatusCode, refusal.Challenge)
	if err != nil {
		return nil, err
	}
	info := HTTPTargetInfo(ctx, cl.HTTPClient, d)
	for _, warning := range info.Warnings {
		cl.UI.Warn(warning)
	}
	r := info.Requirements[0]
	if scopes != nil {
		r.ChallengeScope = wire.JoinScope(scopes)
		cl.UI.Say(fmt.Sprintf("%s needs more scope (%s); logging in again for %s (authorization %d of %d).",
			c.method, RefusalStatus(refusal), r.ChallengeScope, c.retry.authorizations, maxAuthorizations))
	} else {
		cl.UI.Say(fmt.Sprintf("%s needs authorization (%s); logging in to %s.", c.method, RefusalStatus(refusal), r.Resource))
	}
	// A step-up logs in with the client that just got a token: the
	// server knows it, and no check runs before the browser.
	cred, err := cl.Login(ctx, LoginRequest{Target: c.req.Target, Requirement: r, Choices: c.req.Choices, knownClient: scopes != nil})
	if err != nil {
		return nil, err
	}
	c.dropReplaced(ctx, cred)
	return cred, nil
}

// dropReplaced deletes the held credential when the login just stored one
// for the same resource from another authorization server: the protected
// resource now names that one (RFC 9728 §2 authorization_servers), and the
// old server's token and client are of no use to it (MCP 2026-07-28
// "Authorization": credentials are bound to the server that issued them).
func (c *mcpCall) dropReplaced(ctx context.Context, cred *store.Credential) {
	old := c.retry.Held
	if old == nil || old.Key.Issuer == "" || old.Key.Issuer == cred.Key.Issuer ||
		old.Key.Resource != cred.Key.Resource || old.Key.SchemeID != cred.Key.SchemeID {
		return
	}
	cs, err := c.cl.Credentials()
	if err == nil {
		err = cs.Store.Delete(ctx, old.Key)
	}
	if err != nil {
		c.cl.logger().Warn("cannot delete the credential of the previous authorization server", "issuer", old.Key.Issuer, "err", err)
		return
	}
	c.cl.UI.Warn(fmt.Sprintf("%s now names the authorization server %s; the credential from %s was deleted.", cred.Key.Resource, cred.Key.Issuer, old.Key.Issuer))
}

// RefusalStatus is "HTTP 403 insufficient_scope" or "HTTP 401".
func RefusalStatus(e *wire.HTTPAuthError) string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if code := e.Challenge.Param("error"); code != "" {
		s += " " + code
	}
	return s
}

// HTTPLoginHint is the command that gets a token the refusal would
// accept: login, with the missing scopes for a 403.
func HTTPLoginHint(target string, e *RefusedError) string {
	cmd := "agentauth login "
	if e.Refusal.StatusCode == http.StatusForbidden {
		cmd += "--scope " + ShellQuote(wire.JoinScope(e.MissingScopes())) + " "
	}
	return cmd + ShellQuote(target)
}

// AuthenticateHTTP proves the stored credential c to an MCP server: made
// usable first, refreshed once more and retried after invalid_token.
func (cl *Client) AuthenticateHTTP(ctx context.Context, cs *Credentials, target string, c *store.Credential) (SchemeResult, error) {
	res := SchemeResult{Resource: c.Resource, Required: true, Source: "store"}
	cur, err := cs.Usable(ctx, c.Key, target)
	if err != nil {
		return res, refusal(err, &res)
	}
	refreshed := cur.AccessToken != c.AccessToken
	if err := cl.ProveHTTP(ctx, target, cur.AccessToken, &res); err != nil {
		return res, err
	}
	if !res.Accepted && res.Error == wire.ErrInvalidToken && !refreshed {
		next, err := cs.Refresh(ctx, cur, target)
		var ae *AuthError
		switch {
		case errors.As(err, &ae):
			res.RefreshError = ae.Err.Error()
			return res, nil
		case err != nil:
			return res, err
		}
		cur, refreshed = next, true
		if err := cl.ProveHTTP(ctx, target, cur.AccessToken, &res); err != nil {
			return res, err
		}
	}
	res.Refreshed = refreshed
	if res.Accepted {
		res.accept(cur)
		res.credential = cur
	}
	return res, nil
}

// ProveHTTP sends one MCP initialize to target with token as the bearer
// token (RFC 6750 §2.1; an empty token sends none) and records the answer:
// its HTTP status, and for a 401 or 403 its Bearer challenge (RFC 6750 §3).
func (cl *Client) ProveHTTP(ctx context.Context, target, token string, res *SchemeResult) error {
	hc := cl.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	rec := &statusRecorder{next: hc.Transport}
	client := *hc
	client.Transport = rec
	sess, err := wire.NewHTTPSession(target, &client, func(context.Context) (string, error) { return token, nil })
	if err != nil {
		return err
	}
	_, err = sess.Initialize(ctx, "agentauth", cl.Version)
	res.HTTPStatus = rec.first
	var ae *wire.HTTPAuthError
	switch {
	case err == nil:
		_ = sess.Close(ctx)
		res.accept(nil)
	case errors.As(err, &ae):
		res.Challenge = strings.Join(ae.Header, ", ")
		desc := ae.Challenge.Param("error_description")
		if desc == "" {
			desc = fmt.Sprintf("HTTP %d %s", ae.StatusCode, http.StatusText(ae.StatusCode))
		}
		res.refuse(ae.Challenge.Param("error"), desc)
	default:
		return fmt.Errorf("cannot reach %s: %w", target, err)
	}
	return nil
}

// statusRecorder remembers the status of the first response it carries.
type statusRecorder struct {
	next  http.RoundTripper
	first int
}

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := s.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil && s.first == 0 {
		s.first = resp.StatusCode
	}
	return resp, err
}

// AuthenticateStoredHTTP proves the credential stored for an MCP server
// (one logged in through target, else one for its resource) with
// AuthenticateHTTP; none stored is a no_credential result.
func (cl *Client) AuthenticateStoredHTTP(ctx context.Context, target string) (SchemeResult, error) {
	cs, err := cl.Credentials()
	if err != nil {
		return SchemeResult{}, err
	}
	creds, err := cs.ForTarget(ctx, target, "")
	if err != nil {
		return SchemeResult{}, err
	}
	creds = LoggedInThrough(creds, target)
	if len(creds) == 0 {
		res := SchemeResult{Resource: target, Required: true, Source: "store"}
		res.refuse(ResultNoCredential, "no stored credential for "+target)
		return res, nil
	}
	return cl.AuthenticateHTTP(ctx, cs, target, creds[0])
}
