package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// authClientID is the clientId authenticate and status send with initialize.
const authClientID = "agentauth-authenticate"

// authTimeout bounds connecting, initialize, refreshing and authenticating,
// and each re-authentication of --watch.
const authTimeout = 60 * time.Second

// Error codes of a scheme result that are not RFC 6750 §3.1 codes.
const (
	// resultNoCredential: nothing is stored for the scheme.
	resultNoCredential = "no_credential"
	// resultLoginRequired: the stored credential cannot be refreshed.
	resultLoginRequired = "login_required"
	// resultNotAccepted: the host answered {"authenticated": false}.
	resultNotAccepted = "not_accepted"
	// resultCrossOrigin: the host declares a resource on another origin,
	// and the user never allowed it to receive that resource's token.
	resultCrossOrigin = "cross_origin_resource"
)

// AuthenticateOptions are authenticate's inputs.
type AuthenticateOptions struct {
	IO          *IOStreams
	HTTPClient  *http.Client
	Now         func() time.Time
	Credentials func() (*credentialSource, error)

	Target     string
	SchemeID   string
	TokenStdin bool
	Watch      bool
	JSON       bool
}

func newAuthenticateCommand(f *Factory) *cli.Command {
	return authenticateCommand(f, runAuthenticate)
}

// authenticateCommand builds the command around run, so tests can check
// what the flags become.
func authenticateCommand(f *Factory, run func(context.Context, *AuthenticateOptions) error) *cli.Command {
	opts := &AuthenticateOptions{}
	return &cli.Command{
		Name:      "authenticate",
		Usage:     "hand the stored tokens to a target and report, per scheme, whether it accepts them",
		ArgsUsage: "TARGET",
		Description: `TARGET is an agent host (ws://HOST:PORT, wss://…, stdio:COMMAND LINE) or an
MCP server (https://…, or http:// on a loopback address).

Agent hosts: initialize, then for every scheme the host declares (or --scheme)
take the stored credential, refresh it when it expires within 60 s, and send
authenticate in the dialect the host speaks. A token the host refuses with
invalid_token is refreshed once and sent again. HTTP targets: one MCP
initialize request with the bearer token proves that it is accepted.

One line per scheme on stderr:
  ✓ dev: accepted as alice (agent:use)
  X github: invalid_token — The access token expired
--json prints one JSON line on stdout:
  {"target", "kind" ("agent-host"|"http"), "dialect", "authenticated",
   "loginCommand", "schemes": [{"schemeId", "label", "resource", "required",
   "source" ("store"|"stdin"), "accepted", "subject", "scopes", "expiresAt",
   "refreshed", "error", "errorDescription", "refreshError", "httpStatus",
   "challenge"}]}
"error" is an RFC 6750 code from the host, or no_credential, login_required,
not_accepted.

--watch stays connected and prints each auth-state notification. "expired"
is answered by refreshing and authenticating again, without user action;
"revoked" and "required" by a forced refresh, and when that is impossible
authenticate exits 4 with the login command. With --json, each event is one
more JSON line: {"event" ("notification"|"reauthenticated"|"failed"),
"time", "schemeId", "state", "challenge", "result" (a scheme as above)}.

Exits 0 only when every required scheme is accepted, 4 otherwise (the login
command to run is printed on stderr).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "authenticate only the scheme `ID`", Destination: &opts.SchemeID},
			&cli.BoolFlag{Name: "token-stdin", Usage: "authenticate one scheme with a token read from stdin instead of the store", Destination: &opts.TokenStdin},
			&cli.BoolFlag{Name: "watch", Usage: "stay connected: print auth-state notifications and re-authenticate after expiry", Destination: &opts.Watch},
			&cli.BoolFlag{Name: "json", Usage: "print the result (and, with --watch, each event) as JSON lines on stdout", Destination: &opts.JSON},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			if isHTTPTarget(opts.Target) {
				if opts.Watch {
					return usageErrorf("--watch needs a connection (ws://, wss:// or stdio:); an HTTP target sends no notifications")
				}
				if opts.SchemeID != "" {
					return usageErrorf("--scheme applies to agent hosts; an HTTP target has one requirement")
				}
			}
			opts.IO, opts.HTTPClient, opts.Now, opts.Credentials = f.IO, f.HTTPClient, f.Now, f.credentials
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, opts)
		},
	}
}

// schemeResult is what happened to one requirement: the unit of
// authenticate's output, and of status TARGET's.
type schemeResult struct {
	SchemeID  string     `json:"schemeId,omitempty"`
	Label     string     `json:"label,omitempty"`
	Resource  string     `json:"resource"`
	Required  bool       `json:"required"`
	Source    string     `json:"source,omitempty"`
	Accepted  bool       `json:"accepted"`
	Subject   string     `json:"subject,omitempty"`
	Scopes    []string   `json:"scopes,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Refreshed bool       `json:"refreshed"`
	// Error is an RFC 6750 §3.1 code from the host, or one of the result
	// codes above.
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"errorDescription,omitempty"`
	// RefreshError says why a refresh after invalid_token failed.
	RefreshError string `json:"refreshError,omitempty"`
	// HTTPStatus and Challenge describe an HTTP target's answer.
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Challenge  string `json:"challenge,omitempty"`
}

func newSchemeResult(r wire.Requirement, source string) schemeResult {
	return schemeResult{SchemeID: r.SchemeID, Label: r.Label, Resource: r.Resource, Required: r.Required, Source: source}
}

// name labels the result: the scheme id, else the resource.
func (r *schemeResult) name() string {
	if r.SchemeID != "" {
		return r.SchemeID
	}
	return r.Resource
}

// accept records that c's access token was accepted.
func (r *schemeResult) accept(c *store.Credential) {
	r.Accepted, r.Error, r.ErrorDescription = true, "", ""
	if c == nil {
		return
	}
	r.Subject, r.Scopes = c.Subject, c.Scopes
	if !c.Expiry.IsZero() {
		t := c.Expiry.UTC().Truncate(time.Second)
		r.ExpiresAt = &t
	}
}

// refuse records why the scheme is not authenticated.
func (r *schemeResult) refuse(code, description string) {
	r.Accepted, r.Error, r.ErrorDescription = false, code, description
}

// line renders the result for people: "✓ dev: accepted as alice (agent:use)",
// "X dev: invalid_token — The access token expired"; verb says what
// happened on success ("accepted", "re-authenticated").
func (r *schemeResult) line(p Painter, verb string) string {
	if r.Accepted {
		s := verb
		if r.Subject != "" {
			s += " as " + r.Subject
		}
		if len(r.Scopes) > 0 {
			s += " (" + wire.JoinScope(r.Scopes) + ")"
		}
		return p.Green("✓") + " " + safeText(r.name()+": "+s)
	}
	mark := p.Red("X")
	if !r.Required {
		mark = p.Yellow("!")
	}
	return mark + " " + safeText(r.name()+": "+r.reason())
}

// reason explains a refusal in one phrase.
func (r *schemeResult) reason() string {
	var s string
	switch r.Error {
	case resultNoCredential:
		s = "not logged in"
	case resultLoginRequired, resultNotAccepted, resultCrossOrigin, "":
		s = r.ErrorDescription
	default:
		s = r.Error
		if r.ErrorDescription != "" {
			s += " — " + r.ErrorDescription
		}
	}
	if s == "" {
		s = "not accepted"
	}
	if r.HTTPStatus != 0 && r.Error != "" {
		s += fmt.Sprintf(" (HTTP %d)", r.HTTPStatus)
	}
	if !r.Required {
		s += " (optional)"
	}
	return s
}

// authenticateDoc is authenticate --json's document.
type authenticateDoc struct {
	Target        string         `json:"target"`
	Kind          string         `json:"kind"`
	Dialect       string         `json:"dialect,omitempty"`
	Authenticated bool           `json:"authenticated"`
	LoginCommand  string         `json:"loginCommand,omitempty"`
	Schemes       []schemeResult `json:"schemes"`
}

// watchEvent is one JSON line of authenticate --watch --json.
type watchEvent struct {
	Event     string          `json:"event"`
	Time      time.Time       `json:"time"`
	SchemeID  string          `json:"schemeId,omitempty"`
	State     string          `json:"state,omitempty"`
	Challenge *wire.Challenge `json:"challenge,omitempty"`
	Result    *schemeResult   `json:"result,omitempty"`
}

func runAuthenticate(ctx context.Context, opts *AuthenticateOptions) error {
	var token string
	if opts.TokenStdin {
		var err error
		if token, err = readStdinSecret(opts.IO.In, "--token-stdin", "token"); err != nil {
			return err
		}
	}
	setupCtx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	var cs *credentialSource
	var creds []*store.Credential
	if token == "" {
		var err error
		if cs, err = opts.Credentials(); err != nil {
			return err
		}
		if creds, err = cs.ForTargetOrHost(setupCtx, opts.Target, opts.SchemeID); err != nil {
			return err
		}
	}
	if isHTTPTarget(opts.Target) {
		return opts.runHTTP(setupCtx, cs, loggedInThrough(creds, opts.Target), token)
	}

	hc, err := dialHost(setupCtx, opts.Target, opts.HTTPClient, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer hc.client.Close()
	reqs, err := selectRequirements(hc.reqs, opts.SchemeID, token != "")
	if err != nil {
		return err
	}
	if len(reqs) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "%s declares no auth requirement: nothing to authenticate.\n", wire.RedactTarget(opts.Target))
	}
	doc := authenticateDoc{Target: wire.RedactTarget(opts.Target), Kind: kindAgentHost, Dialect: hc.dialect.String(), Schemes: []schemeResult{}}
	held := map[string]*store.Credential{}
	p := opts.IO.ErrPainter()
	for _, r := range reqs {
		var res schemeResult
		if token != "" {
			res = newSchemeResult(r, "stdin")
			if err := hc.authenticate(setupCtx, r, token, &res); err != nil {
				return err
			}
			if res.Accepted {
				res.Subject = tokenSubject(token)
			}
		} else if c := credentialFor(creds, opts.Target, r); c == nil {
			res = newSchemeResult(r, "store")
			res.refuse(resultNoCredential, "no stored credential for "+wire.RedactTarget(opts.Target))
		} else {
			cur, err := hc.authenticateStored(setupCtx, cs, opts.Target, r, c, false, &res)
			if err != nil {
				return err
			}
			if cur != nil {
				held[r.SchemeID] = cur
			}
		}
		doc.Schemes = append(doc.Schemes, res)
		fmt.Fprintln(opts.IO.ErrOut, res.line(p, "accepted"))
	}
	if err := opts.report(&doc, authFailure(opts.Target, hc.reqs, doc.Schemes)); err != nil {
		return err
	}
	if opts.Watch {
		return opts.watch(ctx, hc, cs, reqs, held)
	}
	return nil
}

// report completes doc with failure (the *AuthError of the required
// schemes that were not accepted, nil when there are none), prints it with
// --json, and returns failure.
func (opts *AuthenticateOptions) report(doc *authenticateDoc, failure *AuthError) error {
	doc.Authenticated = failure == nil
	if failure != nil {
		doc.LoginCommand = failure.Hint
	}
	if opts.JSON {
		if err := writeJSONLine(opts.IO.Out, doc); err != nil {
			return err
		}
	}
	if failure != nil {
		return failure
	}
	return nil
}

// runHTTP proves a token to an MCP server with one authenticated request.
func (opts *AuthenticateOptions) runHTTP(ctx context.Context, cs *credentialSource, creds []*store.Credential, token string) error {
	var res schemeResult
	var err error
	switch {
	case token != "":
		res = schemeResult{Resource: opts.Target, Required: true, Source: "stdin"}
		if err = proveHTTP(ctx, opts.HTTPClient, opts.Target, token, &res); err == nil && res.Accepted {
			res.Subject = tokenSubject(token)
		}
	case len(creds) == 0:
		res = schemeResult{Resource: opts.Target, Required: true, Source: "store"}
		res.refuse(resultNoCredential, "no stored credential for "+opts.Target)
	default:
		res, err = authenticateHTTP(ctx, cs, opts.HTTPClient, opts.Target, creds[0])
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.ErrOut, res.line(opts.IO.ErrPainter(), "accepted"))
	doc := authenticateDoc{Target: opts.Target, Kind: kindHTTP, Schemes: []schemeResult{res}}
	return opts.report(&doc, authFailure(opts.Target, nil, doc.Schemes))
}

// watch keeps the connection and answers the host's auth-state pushes
// (PROTOCOL.md "Auth state notifications"): "expired" with the stored
// credential made usable again (refreshed), "revoked" and "required" with a
// forced refresh; a required scheme that cannot be re-authenticated ends
// the watch with an *AuthError. held maps scheme ids to the credential the
// host holds for it.
func (opts *AuthenticateOptions) watch(ctx context.Context, hc *hostConn, cs *credentialSource, reqs []wire.Requirement, held map[string]*store.Credential) error {
	p := opts.IO.ErrPainter()
	if opts.IO.StderrTTY {
		fmt.Fprintln(opts.IO.ErrOut, "Watching the auth state; press Ctrl-C to stop.")
	}
	for {
		var m *wire.Message
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case m, ok = <-hc.client.Notifications():
		}
		if !ok {
			return fmt.Errorf("%s closed the connection", wire.RedactTarget(opts.Target))
		}
		n, ok := parseAuthNotification(m, reqs)
		if !ok {
			continue
		}
		fmt.Fprintln(opts.IO.ErrOut, n.line(p))
		if err := opts.event(watchEvent{Event: "notification", SchemeID: n.req.SchemeID, State: n.state, Challenge: n.challenge}); err != nil {
			return err
		}
		if n.state == wire.StateAuthenticated {
			continue
		}
		c := held[n.req.SchemeID]
		if c == nil {
			if !n.req.Required {
				continue
			}
			return &AuthError{Err: fmt.Errorf("%s is %s and no stored credential can renew it", n.name(), n.state),
				Hint: loginCommand(opts.Target, schemeHint(hc.reqs, n.req.SchemeID))}
		}
		rctx, cancel := context.WithTimeout(ctx, authTimeout)
		var res schemeResult
		next, err := hc.authenticateStored(rctx, cs, opts.Target, n.req, c, n.state != wire.StateExpired, &res)
		cancel()
		if err != nil {
			return err
		}
		if next != nil {
			held[n.req.SchemeID] = next
		}
		event := "reauthenticated"
		if !res.Accepted {
			event = "failed"
		}
		fmt.Fprintln(opts.IO.ErrOut, res.line(p, "re-authenticated"))
		if err := opts.event(watchEvent{Event: event, SchemeID: n.req.SchemeID, Result: &res}); err != nil {
			return err
		}
		if !res.Accepted && n.req.Required {
			return &AuthError{Err: fmt.Errorf("cannot authenticate %s again with %s", n.name(), wire.RedactTarget(opts.Target)),
				Hint: loginCommand(opts.Target, schemeHint(hc.reqs, n.req.SchemeID))}
		}
	}
}

func (opts *AuthenticateOptions) event(e watchEvent) error {
	if !opts.JSON {
		return nil
	}
	e.Time = opts.Now().UTC()
	return writeJSONLine(opts.IO.Out, e)
}

// authNotification is an auth-state push in either dialect.
type authNotification struct {
	req       wire.Requirement
	state     string
	challenge *wire.Challenge
}

// parseAuthNotification reads notify/authRequired (design) or auth/required
// (published: reason "required" also stands for revoked) for one of reqs.
func parseAuthNotification(m *wire.Message, reqs []wire.Requirement) (authNotification, bool) {
	var n authNotification
	var schemeID, resource string
	switch m.Method {
	case wire.MethodNotifyAuthRequired:
		var p wire.NotifyAuthRequiredParams
		if json.Unmarshal(m.Params, &p) != nil {
			return n, false
		}
		schemeID, resource, n.state, n.challenge = p.SchemeID, p.Resource, p.State, p.Challenge
	case wire.MethodAuthRequired:
		var p wire.AuthRequiredParams
		if json.Unmarshal(m.Params, &p) != nil {
			return n, false
		}
		schemeID, resource, n.state = p.Resource.SchemeID, p.Resource.Resource, p.Reason
	default:
		return n, false
	}
	for _, r := range reqs {
		if (schemeID != "" && r.SchemeID == schemeID) || (schemeID == "" && r.Resource == resource) {
			n.req = r
			return n, true
		}
	}
	return n, false
}

func (n authNotification) name() string {
	if n.req.SchemeID != "" {
		return n.req.SchemeID
	}
	return n.req.Resource
}

// line renders a push: "! dev: expired — The access token expired".
func (n authNotification) line(p Painter) string {
	mark := p.Red("X")
	switch n.state {
	case wire.StateAuthenticated:
		mark = p.Green("✓")
	case wire.StateExpired:
		mark = p.Yellow("!")
	}
	s := n.name() + ": " + n.state
	if n.challenge != nil && n.challenge.ErrorDescription != "" {
		s += " — " + n.challenge.ErrorDescription
	}
	return mark + " " + safeText(s)
}

// hostConn is an initialized connection to an agent host.
type hostConn struct {
	client  *wire.Client
	dialect wire.Dialect
	init    *wire.InitializeResult
	reqs    []wire.Requirement
}

// dialHost connects to an agent host and runs initialize in the design
// dialect, or in the published one when the host supports no design version
// (-32005).
func dialHost(ctx context.Context, target string, hc *http.Client, stderr io.Writer) (*hostConn, error) {
	conn, err := wire.DialTarget(ctx, target, wire.DialOptions{HTTPClient: hc, Stderr: stderr})
	if err != nil {
		return nil, err
	}
	client := wire.NewClient(conn)
	res, err := wire.Initialize(ctx, client, wire.DialectDesign, authClientID)
	var rpc *wire.Error
	if errors.As(err, &rpc) && rpc.Code == wire.CodeUnsupportedVersion {
		res, err = wire.Initialize(ctx, client, wire.DialectPublished, authClientID)
	}
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("cannot initialize %s: %w", wire.RedactTarget(target), err)
	}
	return &hostConn{client: client, dialect: res.Dialect(), init: res, reqs: res.Requirements()}, nil
}

// authenticate sends token for r and records the host's answer in res; a
// failure to talk to the host is the error.
func (hc *hostConn) authenticate(ctx context.Context, r wire.Requirement, token string, res *schemeResult) error {
	err := wire.Authenticate(ctx, hc.client, hc.dialect, r, token)
	var rpc *wire.Error
	switch {
	case err == nil:
		res.accept(nil)
	case errors.Is(err, wire.ErrTokenNotAccepted):
		res.refuse(resultNotAccepted, "the host did not accept the token")
	case errors.As(err, &rpc) && rpc.Code == wire.CodeAuthRequired:
		ch := challengeFor(rpc, r)
		res.refuse(ch.Error, ch.ErrorDescription)
	default:
		return fmt.Errorf("cannot authenticate %s: %w", res.name(), err)
	}
	return nil
}

// authenticateStored authenticates r with the stored credential c and
// records the outcome in res. The credential is first made usable
// (credentialSource.Usable refreshes one that expires within a minute), or
// with force refreshed whatever its expiry (the host revoked it); a token
// the host refuses with invalid_token is refreshed once and sent again,
// unless it was just refreshed. It returns the credential the host now
// holds (nil when none), and an error only when the host, the store or the
// authorization server could not be reached.
func (hc *hostConn) authenticateStored(ctx context.Context, cs *credentialSource, target string, r wire.Requirement, c *store.Credential, force bool, res *schemeResult) (*store.Credential, error) {
	*res = newSchemeResult(r, "store")
	var cur *store.Credential
	var err error
	if force {
		cur, err = cs.Refresh(ctx, c, target)
	} else {
		cur, err = cs.Usable(ctx, c.Key, target)
	}
	if err != nil {
		return nil, refusal(err, res)
	}
	refreshed := cur.AccessToken != c.AccessToken
	if err := hc.authenticate(ctx, r, cur.AccessToken, res); err != nil {
		return nil, err
	}
	if !res.Accepted && res.Error == wire.ErrInvalidToken && !refreshed {
		next, err := cs.Refresh(ctx, cur, target)
		if err != nil {
			var ae *AuthError
			if !errors.As(err, &ae) {
				return nil, err
			}
			res.RefreshError = ae.Err.Error()
			return nil, nil
		}
		cur, refreshed = next, true
		if err := hc.authenticate(ctx, r, cur.AccessToken, res); err != nil {
			return nil, err
		}
	}
	res.Refreshed = refreshed
	if !res.Accepted {
		return nil, nil
	}
	res.accept(cur)
	return cur, nil
}

// refusal records an *AuthError from the credential source (the credential
// cannot be made usable) as login_required; any other error is returned.
func refusal(err error, res *schemeResult) error {
	var ae *AuthError
	if !errors.As(err, &ae) {
		return err
	}
	code := resultLoginRequired
	if errors.As(err, new(*crossOriginError)) {
		code = resultCrossOrigin
	}
	res.refuse(code, ae.Err.Error())
	return nil
}

// authenticateHTTP proves the stored credential c to an MCP server:
// made usable first, refreshed once more and retried after invalid_token.
func authenticateHTTP(ctx context.Context, cs *credentialSource, hc *http.Client, target string, c *store.Credential) (schemeResult, error) {
	res := schemeResult{Resource: c.Resource, Required: true, Source: "store"}
	cur, err := cs.Usable(ctx, c.Key, target)
	if err != nil {
		return res, refusal(err, &res)
	}
	refreshed := cur.AccessToken != c.AccessToken
	if err := proveHTTP(ctx, hc, target, cur.AccessToken, &res); err != nil {
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
		if err := proveHTTP(ctx, hc, target, cur.AccessToken, &res); err != nil {
			return res, err
		}
	}
	res.Refreshed = refreshed
	if res.Accepted {
		res.accept(cur)
	}
	return res, nil
}

// proveHTTP sends one MCP initialize to target with token as the bearer
// token (RFC 6750 §2.1; an empty token sends none) and records the answer:
// its HTTP status, and for a 401 or 403 its Bearer challenge (RFC 6750 §3).
func proveHTTP(ctx context.Context, hc *http.Client, target, token string, res *schemeResult) error {
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
	_, err = sess.Initialize(ctx, "agentauth", Version)
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

// challengeFor picks r's challenge from a -32007 error: the one naming its
// scheme id (or, without one, its resource), else the first.
func challengeFor(rpc *wire.Error, r wire.Requirement) wire.Challenge {
	data, _ := rpc.AuthRequired()
	for _, ch := range data.Challenges {
		if (r.SchemeID != "" && ch.SchemeID == r.SchemeID) || (r.SchemeID == "" && ch.Resource == r.Resource) {
			return ch
		}
	}
	if len(data.Challenges) > 0 {
		return data.Challenges[0]
	}
	return wire.Challenge{SchemeID: r.SchemeID, Resource: r.Resource, Error: wire.ErrInvalidToken, ErrorDescription: rpc.Message}
}

// credentialFor picks the stored credential for requirement r: the one with
// its scheme id or, when the host names no scheme id, its resource.
func credentialFor(creds []*store.Credential, target string, r wire.Requirement) *store.Credential {
	// In order of preference: logged in through this target for this
	// scheme; logged in elsewhere for the same (resource, issuer, scheme);
	// logged in through the resource's HTTP face (no scheme id) for the
	// same resource and issuer. The resource is the token's audience, so
	// any of them is a token the host should accept.
	sameAudience := func(c *store.Credential) bool {
		return c.Resource == r.Resource && slices.Contains(r.AuthorizationServers, c.Issuer)
	}
	// Credentials target may receive (mayReceive) come first; one it may
	// not is returned only when nothing else fits, so that using it
	// reports the refusal (crossOriginError) instead of "not logged in".
	for _, receivable := range []bool{true, false} {
		for _, match := range []func(c *store.Credential) bool{
			func(c *store.Credential) bool { return c.Target == target && c.SchemeID == r.SchemeID },
			func(c *store.Credential) bool { return c.SchemeID == r.SchemeID && sameAudience(c) },
			func(c *store.Credential) bool { return c.SchemeID == "" && sameAudience(c) },
		} {
			for _, c := range creds {
				if match(c) && mayReceive(c, target) == receivable {
					return c
				}
			}
		}
	}
	return nil
}

// loggedInThrough narrows creds to those logged in through target itself
// (rather than found by their resource), when there are any.
func loggedInThrough(creds []*store.Credential, target string) []*store.Credential {
	var out []*store.Credential
	for _, c := range creds {
		if c.Target == target || (c.Target == "" && c.Resource == target) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return creds
	}
	return out
}

// selectRequirements chooses what to authenticate: with a token from stdin
// one scheme (pickRequirement), else --scheme's, else every declared one.
func selectRequirements(reqs []wire.Requirement, schemeID string, single bool) ([]wire.Requirement, error) {
	if single || schemeID != "" {
		r, err := pickRequirement(reqs, schemeID)
		if err != nil {
			return nil, err
		}
		return []wire.Requirement{r}, nil
	}
	return reqs, nil
}

// authFailure is the *AuthError for the required schemes among results that
// were not accepted, or nil when every required scheme was. Its hint names
// the scheme when exactly one of several declared schemes failed.
func authFailure(target string, declared []wire.Requirement, results []schemeResult) *AuthError {
	var failed []string
	var crossOrigin *schemeResult
	for i, r := range results {
		if r.Required && !r.Accepted {
			failed = append(failed, r.name())
			if r.Error == resultCrossOrigin {
				crossOrigin = &results[i]
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	id := ""
	if len(failed) == 1 {
		id = schemeHint(declared, failed[0])
	}
	err := fmt.Errorf("not authenticated to %s (%s)", wire.RedactTarget(target), strings.Join(failed, ", "))
	if len(failed) == 1 && failed[0] == target {
		err = fmt.Errorf("not authenticated to %s", target)
	}
	if len(failed) == 1 && crossOrigin != nil {
		// Logging in again as usual would not help: say how to allow the
		// other origin explicitly.
		return &AuthError{Err: err, Hint: allowResourceLogin(target, id, crossOrigin.Resource)}
	}
	return &AuthError{Err: err, Hint: loginCommand(target, id)}
}

// schemeHint is the --scheme value a login hint needs: id when the host
// declares several schemes, else none.
func schemeHint(declared []wire.Requirement, id string) string {
	if len(declared) > 1 {
		return id
	}
	return ""
}

// writeJSONLine writes v as one line of compact JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot print JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
