package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/agentauth/agentauth/wire"
)

// Following an upstream sign-in (issue 15): a server that calls a
// third-party API as the user answers a call with "the ask" (MCP -32042 or
// a 2026-07-28 input_required URL elicitation, -32007/-32000 with a url,
// a plain HTTP 401 authentication_required). The call shows the URL,
// opens it, waits until the server says the sign-in completed, and sends
// the original request once more. The upstream's tokens stay with the
// server: the client only ever sees the URL of the server's own page.

// DefaultSignInWait bounds the wait for an upstream sign-in (call
// --wait-timeout).
const DefaultSignInWait = 10 * time.Minute

// The auth status URL is polled at once, then after signInPollFirst,
// doubling up to signInPollMax.
const (
	signInPollFirst = time.Second
	signInPollMax   = 5 * time.Second
)

// maxSignInAsks bounds the sign-ins one answer may ask for.
const maxSignInAsks = 4

// maxAuthStatusBody bounds an /auth-status answer.
const maxAuthStatusBody = 64 << 10

// SignInOptions say how a call follows an upstream sign-in.
type SignInOptions struct {
	// NoWait stops at the ask with a *SignInRequiredError (call --no-wait).
	NoWait bool
	// WaitTimeout bounds the wait; zero means DefaultSignInWait.
	WaitTimeout time.Duration
}

// SignInRequiredError says that a call needs an upstream sign-in that did
// not happen: --no-wait, the wait timed out, or the server asked again
// after it. It comes wrapped in an *AuthError (exit 4).
type SignInRequiredError struct {
	Method string
	Ask    wire.SignInAsk
	// Reason is the phrase that ends the message.
	Reason string
}

func (e *SignInRequiredError) Error() string {
	return fmt.Sprintf("%s needs a sign-in to %s: %s", e.Method, upstreamName(e.Ask.Upstream), e.Reason)
}

func signInRequired(method string, ask wire.SignInAsk, reason string) error {
	return &AuthError{Err: &SignInRequiredError{Method: method, Ask: ask, Reason: reason}}
}

// upstreamName is "Rally (rally1.rallydev.com)": the label (else the id)
// and the host where the user signs in, on one line (errors are printed
// with their line breaks).
func upstreamName(u wire.Upstream) string {
	name := cmp.Or(u.Label, u.ID, "the upstream service")
	if u.Host != "" {
		name += " (" + u.Host + ")"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
}

// signInWait is how the call learns that a sign-in completed.
type signInWait struct {
	// Push returns nil once the connection reports the completion (an
	// auth-state push, ACP's authenticate); nil when there is none.
	Push func(ctx context.Context) error
	// Token is the caller's bearer token for the auth status URL ("":
	// no polling).
	Token string
	// Origin is the target's HTTP origin: the token is sent to an auth
	// status URL on that origin only ("": no polling).
	Origin string
}

// followSignIn shows ask, opens its URL and waits until the sign-in
// completed, within opts.WaitTimeout.
func (cl *Client) followSignIn(ctx context.Context, method string, ask wire.SignInAsk, opts SignInOptions, w signInWait) error {
	if err := cl.presentSignIn(method, ask, w.Origin, !opts.NoWait); err != nil {
		return err
	}
	if opts.NoWait {
		return signInRequired(method, ask, "open the URL above, sign in, then run the command again")
	}
	timeout := cmp.Or(opts.WaitTimeout, DefaultSignInWait)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := cl.UI.Wait("Waiting for the sign-in to "+cmp.Or(ask.Upstream.Label, ask.Upstream.ID), cl.Now().Add(timeout))
	err := cl.waitSignIn(wctx, method, ask, w)
	stop()
	switch {
	case err == nil:
		cl.UI.Say(fmt.Sprintf("Signed in to %s; sending %s again.", cmp.Or(ask.Upstream.Label, ask.Upstream.ID), method))
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case wctx.Err() != nil:
		return signInRequired(method, ask, fmt.Sprintf("the sign-in did not complete within %s; sign in at the URL above and run the command again (or raise --wait-timeout)", timeout))
	}
	return err
}

// presentSignIn shows ask's URL (an http or https URL only) with the
// upstream's name and host, warns when it is not on origin (the target's;
// "" for none), and with open opens it in the browser.
func (cl *Client) presentSignIn(method string, ask wire.SignInAsk, origin string, open bool) error {
	if err := checkSignInURL(ask.URL); err != nil {
		return fmt.Errorf("cannot follow the sign-in %s asks for: %w", method, err)
	}
	cl.UI.Say(fmt.Sprintf("Sign in to %s to continue:", upstreamName(ask.Upstream)))
	cl.UI.Say(ask.URL)
	if origin != "" && !sameOrigin(ask.URL, origin) {
		cl.UI.Warn(fmt.Sprintf("The sign-in page is on %s, not on the server you called (%s).", hostOf(ask.URL), hostOf(origin)))
	}
	if open && cl.Browser != nil {
		if err := cl.Browser(ask.URL); err != nil {
			// The opener's own advice is about logins: only its failure
			// is of use here (--verbose).
			cl.logger().Debug("cannot open the sign-in URL", "err", err)
			cl.UI.Warn("Cannot open a browser: open the URL above yourself.")
		}
	}
	return nil
}

// serverRequest answers a request the server sends on a response stream
// (MCP 2025-11-25 "Elicitation"): a URL-mode elicitation/create is shown
// and opened like any ask and answered accept (the server then waits for
// the interaction itself, within the call's CallTimeout); with --no-wait,
// or a URL that is not http(s), it is shown or refused and answered
// cancel. Another mode is -32602 (agentauth declares elicitation.url
// only), another method -32601.
func (c *mcpCall) serverRequest(_ context.Context, m *wire.Message) (any, *wire.Error) {
	if m.Method != wire.MethodElicitationCreate {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "method %q not found", m.Method)
	}
	var el wire.URLElicitation
	if err := json.Unmarshal(m.Params, &el); err != nil || el.Mode != "url" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: agentauth answers url-mode elicitations only (it declares elicitation.url)")
	}
	cancel := map[string]string{"action": "cancel"}
	if err := c.cl.presentSignIn(c.method, el.Ask(), httpOrigin(c.req.Target), !c.req.SignIn.NoWait); err != nil {
		c.cl.UI.Warn(err.Error())
		return cancel, nil
	}
	if c.req.SignIn.NoWait {
		return cancel, nil
	}
	return map[string]string{"action": "accept"}, nil
}

// AnswerServerRequest answers a request the server at target sends on a
// response stream as call does (serverRequest): a URL-mode
// elicitation/create is shown, opened (unless opts.NoWait) and accepted;
// anything else is refused. The proxy package answers with it the URL
// elicitations of a client that did not declare elicitation.url.
func (cl *Client) AnswerServerRequest(ctx context.Context, target string, opts SignInOptions, m *wire.Message) (any, *wire.Error) {
	c := &mcpCall{cl: cl, req: MCPCall{Target: target, SignIn: opts}, method: m.Method}
	return c.serverRequest(ctx, m)
}

// FollowSignIns follows the URL elicitations a -32042 error e (MCP
// 2025-11-25 "URL Elicitation Required") answering method with params
// asks for, as call does: each shown, opened and its completion awaited
// (token, when not "", polls an auth status URL on target's origin).
// asked is false when e asks for none; then nothing was done.
func (cl *Client) FollowSignIns(ctx context.Context, target, method string, e *wire.Error, params json.RawMessage, opts SignInOptions, token string) (asked bool, err error) {
	asks, _, ok := mcpSignInAsks(e, nil, params)
	if !ok {
		return false, nil
	}
	return true, cl.followAll(ctx, method, asks, opts, signInWait{Origin: httpOrigin(target), Token: token})
}

// signInFailedError: the server says the sign-in failed at the upstream.
type signInFailedError struct{ why string }

func (e *signInFailedError) Error() string { return "the sign-in failed: " + e.why }

// waitSignIn returns once the push or the auth status URL says the sign-in
// completed; one of them failing leaves the other.
func (cl *Client) waitSignIn(ctx context.Context, method string, ask wire.SignInAsk, w signInWait) error {
	done := make(chan error, 2)
	n := 0
	if w.Push != nil {
		n++
		go func() { done <- w.Push(ctx) }()
	}
	if ask.AuthStatus != "" && w.Token != "" && w.Origin != "" && sameOrigin(ask.AuthStatus, w.Origin) {
		n++
		go func() { done <- cl.pollAuthStatus(ctx, ask.AuthStatus, w.Token) }()
	} else if ask.AuthStatus != "" {
		cl.logger().Debug("not polling the auth status URL: no bearer token, or not on the target's origin", "url", ask.AuthStatus)
	}
	if n == 0 {
		return signInRequired(method, ask, "the server offers no way to learn when it completes; sign in at the URL above and run the command again")
	}
	var first error
	for range n {
		err := <-done
		if err == nil {
			return nil
		}
		var failed *signInFailedError
		if errors.As(err, &failed) {
			return signInRequired(method, ask, "the sign-in did not complete: "+failed.why+" Run the command again to get a new link")
		}
		cl.logger().Debug("cannot learn the sign-in's completion this way", "err", err)
		first = cmp.Or(first, err)
	}
	return first
}

// pollAuthStatus asks statusURL until it answers authenticated: at once,
// then after signInPollFirst, doubling up to signInPollMax.
func (cl *Client) pollAuthStatus(ctx context.Context, statusURL, token string) error {
	interval := signInPollFirst
	for {
		st, err := cl.getAuthStatus(ctx, statusURL, token)
		if err != nil {
			return err
		}
		if st.Authenticated {
			return nil
		}
		if st.Error != "" {
			return &signInFailedError{why: st.Error}
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		interval = min(2*interval, signInPollMax)
	}
}

// getAuthStatus sends GET statusURL with the bearer token (RFC 6750 §2.1).
func (cl *Client) getAuthStatus(ctx context.Context, statusURL, token string) (*wire.AuthStatus, error) {
	hc := cl.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot ask for the sign-in state: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot ask for the sign-in state: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot ask for the sign-in state: %s answered HTTP %d", hostOf(statusURL), resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAuthStatusBody+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the sign-in state: %w", err)
	}
	if len(body) > maxAuthStatusBody {
		return nil, fmt.Errorf("cannot read the sign-in state: the answer is over %d bytes", maxAuthStatusBody)
	}
	var st wire.AuthStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("cannot read the sign-in state: %w", err)
	}
	return &st, nil
}

// checkSignInURL accepts an absolute http or https URL: nothing else is
// handed to a browser (MCP 2025-11-25 "Elicitation", Safe URL Handling).
func checkSignInURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("the sign-in URL %q is not an absolute http(s) URL", raw)
	}
	return nil
}

// httpOrigin is target's origin as an HTTP URL ("http://host:port"): ws
// and wss targets map to http and https; stdio and bad targets give "".
func httpOrigin(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return "http://" + u.Host
	case "https", "wss":
		return "https://" + u.Host
	}
	return ""
}

func sameOrigin(raw, origin string) bool {
	return origin != "" && httpOrigin(raw) == origin
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

// mcpSignInAsks reads the ask in a method's answer: a -32042 error (MCP
// 2025-11-25), or an input_required result whose every input request is a
// URL-mode elicitation (MCP 2026-07-28). retry is the params to send again:
// params themselves after -32042; with inputResponses (each
// {"action": "accept"}) and the echoed requestState after input_required.
func mcpSignInAsks(err error, raw json.RawMessage, params json.RawMessage) (asks []wire.SignInAsk, retry json.RawMessage, ok bool) {
	var rpc *wire.Error
	if errors.As(err, &rpc) {
		asks, ok = wire.URLElicitationsRequired(rpc)
		return asks, params, ok
	}
	if err != nil {
		return nil, nil, false
	}
	res, ok := wire.ParseInputRequired(raw)
	if !ok || len(res.InputRequests) == 0 {
		return nil, nil, false
	}
	responses := map[string]json.RawMessage{}
	for key, r := range res.InputRequests {
		var el wire.URLElicitation
		if r.Method != wire.MethodElicitationCreate || json.Unmarshal(r.Params, &el) != nil || el.Mode != "url" || el.URL == "" {
			return nil, nil, false // an input agentauth cannot give
		}
		asks = append(asks, el.Ask())
		responses[key] = json.RawMessage(`{"action":"accept"}`)
	}
	obj := map[string]json.RawMessage{}
	if len(params) > 0 && json.Unmarshal(params, &obj) != nil {
		return nil, nil, false
	}
	obj["inputResponses"], _ = json.Marshal(responses)
	delete(obj, "requestState")
	if res.RequestState != "" {
		obj["requestState"], _ = json.Marshal(res.RequestState)
	}
	retry, _ = json.Marshal(obj)
	return asks, retry, true
}

// followAll follows each ask in turn (at most maxSignInAsks).
func (cl *Client) followAll(ctx context.Context, method string, asks []wire.SignInAsk, opts SignInOptions, w signInWait) error {
	if len(asks) > maxSignInAsks {
		return fmt.Errorf("cannot call %s: the server asks for %d sign-ins at once (at most %d are followed)", method, len(asks), maxSignInAsks)
	}
	for _, a := range asks {
		if err := cl.followSignIn(ctx, method, a, opts, w); err != nil {
			return err
		}
	}
	return nil
}

// stillNeeded is the error for an ask answered to the retry.
func stillNeeded(method string, ask wire.SignInAsk) error {
	return signInRequired(method, ask, "the server still asks for it after the sign-in; sign in at the URL above and run the command again")
}

// FollowSignIn answers a call refused with serve's upstream ask (an agent
// host's -32007 or an ACP agent's -32000 carrying "url" and "upstream",
// wire.HostSignInAsk): it shows and opens the URL and waits for the
// completion (the dialect's auth-state push naming the upstream, or for
// ACP authenticate {methodId: "upstream:ID"}, which answers once the
// sign-in completed; and the auth status URL, polled with token or the
// held credential's). retry says to send the call once more; any other
// error leaves it false.
func (s *HostSession) FollowSignIn(ctx context.Context, method string, callErr error, opts SignInOptions, token string) (retry bool, err error) {
	var rpc *wire.Error
	if !errors.As(callErr, &rpc) {
		return false, nil
	}
	ask, methods, ok := wire.HostSignInAsk(rpc)
	if !ok {
		return false, nil
	}
	w := signInWait{Token: cmp.Or(token, s.heldToken()), Origin: httpOrigin(s.Target)}
	if rpc.Code == wire.CodeACPAuthRequired {
		id := upstreamMethodID(ask, methods)
		w.Push = func(ctx context.Context) error {
			ok, err := wire.AuthenticateMethod(ctx, s.Client, id)
			if err == nil && !ok {
				err = fmt.Errorf("authenticate %s answered {\"authenticated\": false}", id)
			}
			return err
		}
	} else {
		w.Push = func(ctx context.Context) error { return waitUpstreamPush(ctx, s.Client, ask.Upstream.ID) }
	}
	if err := s.cl.followSignIn(ctx, method, ask, opts, w); err != nil {
		return false, err
	}
	return true, nil
}

// StillNeedsSignIn is the error for a retried call that serve answered
// with an upstream ask again, or nil.
func StillNeedsSignIn(method string, callErr error) error {
	var rpc *wire.Error
	if !errors.As(callErr, &rpc) {
		return nil
	}
	if ask, _, ok := wire.HostSignInAsk(rpc); ok {
		return stillNeeded(method, ask)
	}
	return nil
}

// upstreamMethodID is the ACP auth method of ask's upstream: the
// "upstream:" method the error names, else "upstream:ID".
func upstreamMethodID(ask wire.SignInAsk, methods []string) string {
	for _, m := range methods {
		if strings.HasPrefix(m, "upstream:") {
			return m
		}
	}
	return "upstream:" + ask.Upstream.ID
}

// heldToken is the access token of a credential the host holds, "" when
// none (a token from stdin is passed by the caller).
func (s *HostSession) heldToken() string {
	for _, r := range s.Reqs {
		if c := s.held[heldKey(r)]; c != nil {
			return c.AccessToken
		}
	}
	return ""
}

// waitUpstreamPush reads the connection's notifications until one says
// the sign-in to upstream completed: notify/authRequired with state
// "authenticated" (design dialect) or auth/required with reason
// "authenticated" (published), each naming "upstream".
func waitUpstreamPush(ctx context.Context, c *wire.Client, upstream string) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-c.Notifications():
			if !ok {
				return errors.New("the connection closed before the sign-in completed")
			}
			if upstreamSignedIn(m, upstream) {
				return nil
			}
		}
	}
}

func upstreamSignedIn(m *wire.Message, upstream string) bool {
	if m.Method != wire.MethodNotifyAuthRequired && m.Method != wire.MethodAuthRequired {
		return false
	}
	var p struct {
		Upstream json.RawMessage `json:"upstream"`
		State    string          `json:"state"`
		Reason   string          `json:"reason"`
	}
	if json.Unmarshal(m.Params, &p) != nil || cmp.Or(p.State, p.Reason) != wire.StateAuthenticated {
		return false
	}
	var id string
	if json.Unmarshal(p.Upstream, &id) != nil {
		var u wire.Upstream
		_ = json.Unmarshal(p.Upstream, &u)
		id = u.ID
	}
	return id != "" && id == upstream
}

// upstreamStatus adds to doc the upstream sign-ins the server holds for
// the caller: GET {origin}/auth-status with the token of an accepted
// scheme. Only a 200 counts: any other answer (404 from a server without
// a broker, 426 from a WebSocket-only host) means nothing to show, and is
// logged at debug level.
func (cl *Client) upstreamStatus(ctx context.Context, target string, doc *TargetStatusDoc) {
	origin := httpOrigin(target)
	var token string
	for _, s := range doc.Schemes {
		if c := s.SchemeResult.Credential(); s.Accepted && c != nil {
			token = c.AccessToken
			break
		}
	}
	if origin == "" || token == "" {
		return
	}
	st, err := cl.getAuthStatus(ctx, origin+"/auth-status", token)
	if err != nil {
		cl.logger().Debug("no upstream sign-ins to show", "err", err)
		return
	}
	doc.Upstreams = st.Upstreams
}
