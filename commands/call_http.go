package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// callHTTPHelp is call's help for MCP servers over HTTP.
const callHTTPHelp = `An http:// or https:// TARGET is an MCP server (MCP Streamable HTTP,
protocol 2025-11-25): call sends initialize, notifications/initialized and
METHOD, each with the stored access token (refreshed first when it expires
within 60 s) in the Authorization header. A 401 to a stored token refreshes
it once and retries. Otherwise a 401 or 403 prints the server's challenge
(status, error, description, scope, resource_metadata) and exits 4 with the
login command to run, unless --login is given: then a 401 runs discovery and
the login flow (as login does: the same scope and client choice and flags)
and retries once; a 403 insufficient_scope logs in again asking for the
scopes held plus the challenge's scope (a refresh cannot widen a grant) and
retries. A 401 right after a login, or a third authorization still refused,
stops with exit 4.`

// CallLoginOptions are call's flags for logging in by itself (--login):
// the part of login's flags that fits a call.
type CallLoginOptions struct {
	Enabled bool
	LoginChoices
}

// loginFlagNames are the flags that need --login.
var loginFlagNames = []string{"scope", "client-id", "client-secret-stdin", "client-metadata-url", "device", "no-browser", "callback-host", "callback-port"}

// callLoginFlags are call's --login flags, writing into l.
func callLoginFlags(l *CallLoginOptions) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "login", Usage: "MCP servers over HTTP: on a 401 log in (as login does) and retry; on a 403 insufficient_scope log in again with more scope", Destination: &l.Enabled},
	}, loginChoiceFlags(&l.LoginChoices, "with --login, ")...)
}

// check validates the --login flags like login does; they need --login,
// and --login needs an http(s) target.
func (l *CallLoginOptions) check(c *cli.Context, httpTarget bool) error {
	if !l.Enabled {
		for _, name := range loginFlagNames {
			if c.IsSet(name) {
				return usageErrorf("--%s needs --login", name)
			}
		}
		return nil
	}
	if !httpTarget {
		return usageErrorf("--login works with http(s) MCP servers only; for an agent host, run agentauth login TARGET first")
	}
	return l.LoginChoices.check(c.IsSet("client-id"))
}

// checkHTTP rejects the agent-host flags for an MCP server.
func (opts *CallOptions) checkHTTP() error {
	switch {
	case opts.SetAuthToken, opts.SchemeID != "", opts.Watch, opts.MaxNotifications != 0, opts.Dialect != wire.DialectDesign:
		return usageErrorf("--set-auth-token, --scheme, --watch, --max-notifications and --dialect are for agent hosts, not MCP servers over HTTP")
	case opts.Login.Enabled && opts.TokenStdin:
		return usageErrorf("--login and --token-stdin exclude each other")
	case opts.Method == wire.MethodInitialize && opts.Params != nil:
		return usageErrorf("an MCP server over HTTP is initialized with agentauth's own params: give no PARAMS_JSON to initialize")
	}
	return nil
}

// httpCall is one call to an MCP server over HTTP.
type httpCall struct {
	opts  *CallOptions
	retry *authRetry
	// secret is --client-secret-stdin's client secret.
	secret string
	// method is the method being sent, for messages.
	method string
}

// runCallHTTP calls METHOD on an MCP server over Streamable HTTP (MCP
// 2025-11-25 "Transports"), authorizing through authRetry.
func runCallHTTP(ctx context.Context, opts *CallOptions) error {
	c := &httpCall{opts: opts, retry: &authRetry{Login: opts.Login.Enabled}}
	var err error
	switch {
	case opts.TokenStdin:
		token, err := readStdinSecret(opts.IO.In, "--token-stdin", "token")
		if err != nil {
			return err
		}
		c.retry.Held = &store.Credential{AccessToken: token}
	case opts.Login.ClientSecretStdin:
		if c.secret, err = readStdinSecret(opts.IO.In, "--client-secret-stdin", "client secret"); err != nil {
			return err
		}
	}
	if !opts.TokenStdin {
		if err := c.useStored(ctx); err != nil {
			return err
		}
	}
	c.retry.Authorize = c.authorize

	// Each request is bounded by callTimeout; a login has its own bound.
	hc := *opts.HTTPClient
	hc.Timeout = 0
	sess, err := wire.NewHTTPSession(opts.Target, &hc, func(context.Context) (string, error) {
		if c.retry.Held == nil {
			return "", nil
		}
		return c.retry.Held.AccessToken, nil
	})
	if err != nil {
		return usageErrorf("%v", err)
	}

	var raw json.RawMessage
	err = c.send(ctx, wire.MethodInitialize, func(ctx context.Context) error {
		res, err := sess.Initialize(ctx, "agentauth", Version)
		if err == nil {
			raw = res.Raw
		}
		return err
	})
	if err != nil {
		return c.failure(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sess.Close(cctx); err != nil {
			opts.Factory.Logger().Debug("cannot end the MCP session", "err", err)
		}
	}()
	if opts.Method != wire.MethodInitialize {
		var params any
		if opts.Params != nil {
			params = opts.Params
		}
		err = c.send(ctx, opts.Method, func(ctx context.Context) error {
			raw = nil
			return sess.Call(ctx, opts.Method, params, &raw)
		})
		if err != nil {
			return c.failure(err)
		}
	}
	return opts.printJSON(raw)
}

// useStored sets up the stored credential for the target, refreshed when
// it expires within refreshLeeway. With --login, the store must work (the
// keyring is probed before anything is approved), and a credential that
// cannot be refreshed is replaced by a login when the server asks.
func (c *httpCall) useStored(ctx context.Context) error {
	opts := c.opts
	if opts.Login.Enabled {
		if _, err := opts.Factory.usableStore(ctx); err != nil {
			return err
		}
	}
	cs, err := opts.Credentials()
	if err != nil {
		return err
	}
	c.retry.Refresh = func(ctx context.Context, stale *store.Credential) (*store.Credential, error) {
		opts.Factory.Logger().Debug("the server rejected the stored token; refreshing it", "resource", stale.Resource)
		return cs.Refresh(ctx, stale, opts.Target)
	}
	creds, err := cs.ForTarget(ctx, opts.Target, "")
	if err != nil {
		return err
	}
	for _, cred := range creds {
		if cred.SchemeID != "" {
			continue // an agent host's scheme: log in to the MCP server itself
		}
		held, err := cs.Usable(ctx, cred.Key, opts.Target)
		var auth *AuthError
		if errors.As(err, &auth) && opts.Login.Enabled {
			fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", opts.IO.ErrPainter().Yellow("warning:"), safeText(err.Error()))
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
// each attempt within callTimeout.
func (c *httpCall) send(ctx context.Context, method string, step func(context.Context) error) error {
	c.method = method
	return c.retry.do(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return step(ctx)
	})
}

// authorize is authRetry.Authorize: discovery from the refusal's challenge
// (its resource_metadata and scope; no new probe), then the login flow of
// login with call's --login flags.
func (c *httpCall) authorize(ctx context.Context, refusal *wire.HTTPAuthError, scopes []string) (*store.Credential, error) {
	f, w := c.opts.Factory, c.opts.IO.ErrOut
	d, err := flows.DiscoverResourceFromChallenge(ctx, f.HTTPClient, c.opts.Target, refusal.StatusCode, refusal.Challenge)
	if err != nil {
		return nil, err
	}
	info := httpTargetInfo(ctx, f.HTTPClient, d)
	for _, warning := range info.Warnings {
		fmt.Fprintf(w, "%s %s\n", c.opts.IO.ErrPainter().Yellow("warning:"), safeText(warning))
	}
	r := info.Requirements[0]
	if scopes != nil {
		r.ChallengeScope = wire.JoinScope(scopes)
		fmt.Fprintf(w, "%s needs more scope (%s); logging in again for %s (authorization %d of %d).\n",
			c.method, refusalStatus(refusal), safeText(r.ChallengeScope), c.retry.authorizations, maxAuthorizations)
	} else {
		fmt.Fprintf(w, "%s needs authorization (%s); logging in to %s.\n", c.method, refusalStatus(refusal), safeText(r.Resource))
	}
	return loginFlow(ctx, f, c.opts.Login.request(c.opts.Target, r, c.secret))
}

// failure reports a failed step: a refusal prints the challenge and exits
// 4 (with the login command when --login was not given); a JSON-RPC error
// is reported like an agent host's; a failed login or refresh says itself
// what went wrong.
func (c *httpCall) failure(err error) error {
	var refused *refusedError
	var rpc *wire.Error
	var auth *AuthError
	switch {
	case errors.As(err, &refused):
		c.printRefusal(refused.Refusal)
		var hint string
		if refused.Reason == stopNoLogin {
			hint = httpLoginHint(c.opts.Target, refused)
		}
		err := fmt.Errorf("cannot call %s: %w", c.method, refused)
		if hint != "" {
			err = fmt.Errorf("%w (call --login logs in by itself)", err)
		}
		return &AuthError{Err: err, Hint: hint}
	case errors.As(err, &rpc):
		return c.opts.rpcFailure(c.method, err, nil)
	case errors.As(err, &auth):
		return err
	}
	return fmt.Errorf("cannot call %s: %w", c.method, err)
}

// printRefusal writes a 401/403 for people: the status, then each field of
// the Bearer challenge (RFC 6750 §3, RFC 9728 §5.1) the server sent.
func (c *httpCall) printRefusal(e *wire.HTTPAuthError) {
	w, p := c.opts.IO.ErrOut, c.opts.IO.ErrPainter()
	fmt.Fprintf(w, "%s: the server answered %s\n", c.method, p.Yellow(fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))))
	for _, k := range []string{"error", "error_description", "scope", "resource_metadata"} {
		if v := e.Challenge.Param(k); v != "" {
			label := k
			if k == "error_description" {
				label = "description"
			}
			fmt.Fprintf(w, "  %s: %s\n", label, safeText(v))
		}
	}
	if e.Challenge.Scheme == "" {
		fmt.Fprintln(w, "  (no Bearer challenge in WWW-Authenticate)")
	}
}

// refusalStatus is "HTTP 403 insufficient_scope" or "HTTP 401".
func refusalStatus(e *wire.HTTPAuthError) string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if code := e.Challenge.Param("error"); code != "" {
		s += " " + safeText(code)
	}
	return s
}

// httpLoginHint is the command that gets a token the refusal would accept:
// login, with the missing scopes for a 403.
func httpLoginHint(target string, e *refusedError) string {
	cmd := "agentauth login "
	if e.Refusal.StatusCode == http.StatusForbidden {
		cmd += "--scope " + shellQuote(wire.JoinScope(e.missingScopes())) + " "
	}
	return cmd + shellQuote(target)
}
