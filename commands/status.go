package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Credential states of status.
const (
	// stateValid: the access token is good for at least a minute, or its
	// expiry is unknown.
	stateValid = "valid"
	// stateRefreshable: expired or about to, with a refresh token.
	stateRefreshable = "refreshable"
	// stateExpired: expired with no refresh token: log in again.
	stateExpired = "expired"
)

// StatusOptions are status's inputs.
type StatusOptions struct {
	IO          *IOStreams
	HTTPClient  *http.Client
	Now         func() time.Time
	Store       func() (store.Store, error)
	Credentials func() (*credentialSource, error)

	// Target is empty for the store-only report.
	Target    string
	JSON      bool
	ShowToken bool
}

func newStatusCommand(f *Factory) *cli.Command {
	return statusCommand(f, runStatus)
}

// statusCommand builds the command around run, so tests can check what
// the flags become.
func statusCommand(f *Factory, run func(context.Context, *StatusOptions) error) *cli.Command {
	opts := &StatusOptions{}
	return &cli.Command{
		Name:      "status",
		Usage:     "show the stored credentials, or whether a target accepts them",
		ArgsUsage: "[TARGET]",
		Description: `Without TARGET: every stored credential, grouped by resource, read from the
store alone (no network). ✓ valid, ! expired or expiring but refreshable,
X expired and not refreshable. Tokens are masked (first 4 characters and ***)
unless --show-token. Exits 0 when every credential is usable (valid or
refreshable), 4 when one is not or when nothing is stored, 1 on errors.
--json: {"store": {"kind", "location"}, "usable", "credentials": [{"resource",
"issuer", "schemeId", "target", "subject", "scopes", "expiresAt", "state"
("valid"|"refreshable"|"expired"), "refreshable", "clientId", "token"}]}.

With TARGET: connect and initialize; ask the host what it already holds
(getAuthState or auth/status, when advertised); authenticate with the stored
credentials (refreshed when needed); ask again. Both answers are shown per
scheme. HTTP targets: one MCP request with the stored token, and the
answer's status and challenge. Exits 0 when every required scheme is
authenticated, 4 otherwise. --json: {"target", "kind", "dialect",
"authenticated", "hostStateBefore", "hostStateAfter", "schemes": [a scheme of
authenticate --json, plus "authenticated", "hostBefore", "hostAfter",
"credential" (as above)]}.

The report is the command's output, so it goes to stdout (like gh auth
status and git status); errors and the login hint go to stderr.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout", Destination: &opts.JSON},
			&cli.BoolFlag{Name: "show-token", Usage: "show access tokens in full instead of masked", Destination: &opts.ShowToken},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 1 {
				return usageErrorf("status expects at most one TARGET")
			}
			opts.Target = c.Args().First()
			if opts.Target != "" {
				if err := checkTarget(opts.Target); err != nil {
					return err
				}
			}
			opts.IO, opts.HTTPClient, opts.Now = f.IO, f.HTTPClient, f.Now
			opts.Store, opts.Credentials = f.Store, f.credentials
			if opts.Target == "" {
				return run(c.Context, opts)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, opts)
		},
	}
}

func runStatus(ctx context.Context, opts *StatusOptions) error {
	if opts.Target == "" {
		return runStoreStatus(ctx, opts)
	}
	return runTargetStatus(ctx, opts)
}

// credentialStatus is one stored credential as status shows it.
type credentialStatus struct {
	Resource    string     `json:"resource"`
	Issuer      string     `json:"issuer"`
	SchemeID    string     `json:"schemeId,omitempty"`
	Target      string     `json:"target,omitempty"`
	Subject     string     `json:"subject,omitempty"`
	Scopes      []string   `json:"scopes"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	State       string     `json:"state"`
	Refreshable bool       `json:"refreshable"`
	ClientID    string     `json:"clientId,omitempty"`
	Token       string     `json:"token"`

	expiry string
}

// describeCredential classifies c at now.
func describeCredential(c *store.Credential, now time.Time, showToken bool) credentialStatus {
	cs := credentialStatus{Resource: c.Resource, Issuer: c.Issuer, SchemeID: c.SchemeID, Target: wire.RedactTarget(c.Target),
		Subject: c.Subject, Scopes: nonNil(c.Scopes), Refreshable: c.RefreshToken != "", ClientID: c.Client.ClientID,
		Token: maskToken(c.AccessToken, showToken), State: stateValid}
	left := c.Expiry.Sub(now)
	known := !c.Expiry.IsZero()
	if known {
		t := c.Expiry.UTC().Truncate(time.Second)
		cs.ExpiresAt = &t
	}
	switch {
	case c.AccessToken == "" || (known && left <= 0):
		cs.State = stateExpired
		if cs.Refreshable {
			cs.State = stateRefreshable
		}
	case known && left < refreshLeeway && cs.Refreshable:
		cs.State = stateRefreshable
	}
	switch {
	case !known:
		cs.expiry = "no expiry known"
	case left > 0:
		cs.expiry = "expires in " + roughDuration(left)
	case cs.Refreshable:
		cs.expiry = "expired " + roughDuration(-left) + " ago, refreshable"
	default:
		cs.expiry = "expired " + roughDuration(-left) + " ago, not refreshable"
	}
	return cs
}

func (cs *credentialStatus) usable() bool { return cs.State != stateExpired }

// mark is ✓, ! or X for the credential's state.
func (cs *credentialStatus) mark(p Painter) string {
	switch cs.State {
	case stateValid:
		return p.Green("✓")
	case stateRefreshable:
		return p.Yellow("!")
	}
	return p.Red("X")
}

// loggedIn is "dev: logged in as alice", or without a scheme "Logged in as alice".
func (cs *credentialStatus) loggedIn() string {
	who := " as " + cs.Subject
	if cs.Subject == "" {
		who = " (subject unknown)"
	}
	if cs.SchemeID == "" {
		return "Logged in" + who
	}
	return cs.SchemeID + ": logged in" + who
}

// print writes the credential's lines of a status block, indented.
func (cs *credentialStatus) print(w io.Writer, p Painter) {
	fmt.Fprintf(w, "  %s %s\n", cs.mark(p), safeText(cs.loggedIn()))
	fmt.Fprintf(w, "  - Issuer: %s\n", safeText(cs.Issuer))
	if cs.Target != "" && cs.Target != cs.Resource {
		fmt.Fprintf(w, "  - Target: %s\n", safeText(cs.Target))
	}
	fmt.Fprintf(w, "  - Scopes: %s\n", safeText(orNone(wire.JoinScope(cs.Scopes))))
	fmt.Fprintf(w, "  - Expiry: %s\n", cs.expiry)
	fmt.Fprintf(w, "  - Token: %s\n", cs.Token)
	if !cs.usable() {
		fmt.Fprintf(w, "  - To log in again, run: %s\n", cs.loginCommand())
	}
}

// loginCommand logs in again to what the credential was obtained for.
func (cs *credentialStatus) loginCommand() string {
	target := cs.Target
	if target == "" {
		target = cs.Resource
	}
	return loginCommand(target, cs.SchemeID)
}

// storeStatusDoc is status --json's document without TARGET.
type storeStatusDoc struct {
	Store       storeDoc           `json:"store"`
	Usable      bool               `json:"usable"`
	Credentials []credentialStatus `json:"credentials"`
}

type storeDoc struct {
	Kind     string `json:"kind"`
	Location string `json:"location"`
}

// runStoreStatus reports every stored credential, from the store alone.
func runStoreStatus(ctx context.Context, opts *StatusOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	creds, err := st.List(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the credential store: %w", err)
	}
	now := opts.Now()
	doc := storeStatusDoc{Store: storeDoc{Kind: st.Kind(), Location: st.Location()}, Usable: len(creds) > 0, Credentials: []credentialStatus{}}
	for _, c := range creds {
		cs := describeCredential(c, now, opts.ShowToken)
		doc.Usable = doc.Usable && cs.usable()
		doc.Credentials = append(doc.Credentials, cs)
	}
	if opts.JSON {
		if err := writeJSONIndent(opts.IO.Out, doc); err != nil {
			return err
		}
	}
	if len(creds) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "No credentials in the %s store (%s). To log in, run: %s\n", st.Kind(), st.Location(), loginCommand("TARGET", ""))
		return &SilentError{Code: ExitAuth}
	}
	if !opts.JSON {
		p := opts.IO.OutPainter()
		for i, cs := range doc.Credentials {
			if i == 0 || cs.Resource != doc.Credentials[i-1].Resource {
				if i > 0 {
					fmt.Fprintln(opts.IO.Out)
				}
				fmt.Fprintln(opts.IO.Out, p.Bold(safeText(cs.Resource)))
			}
			cs.print(opts.IO.Out, p)
		}
		fmt.Fprintf(opts.IO.Out, "\nStore: %s, %s\n", st.Kind(), st.Location())
	}
	if !doc.Usable {
		// The fix goes to stderr too: stdout may be a pipe or a file.
		var unusable []credentialStatus
		for _, cs := range doc.Credentials {
			if !cs.usable() {
				unusable = append(unusable, cs)
			}
		}
		if len(unusable) == 1 {
			fmt.Fprintf(opts.IO.ErrOut, "agentauth: the credential for %s has expired and cannot be refreshed\n",
				describeKey(store.Key{Resource: unusable[0].Resource, SchemeID: unusable[0].SchemeID}))
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "agentauth: %d stored credentials have expired and cannot be refreshed\n", len(unusable))
		}
		for _, cs := range unusable {
			fmt.Fprintf(opts.IO.ErrOut, "To log in, run: %s\n", cs.loginCommand())
		}
		return &SilentError{Code: ExitAuth}
	}
	return nil
}

// targetSchemeStatus is one requirement in status TARGET: what the host
// held before, what happened to the stored credential, what it holds after.
type targetSchemeStatus struct {
	schemeResult
	// Authenticated is the final answer: the host's when it can be asked,
	// else whether the stored token was accepted.
	Authenticated bool                  `json:"authenticated"`
	HostBefore    *wire.AuthMethodState `json:"hostBefore,omitempty"`
	HostAfter     *wire.AuthMethodState `json:"hostAfter,omitempty"`
	Credential    *credentialStatus     `json:"credential"`
}

// targetStatusDoc is status --json's document with TARGET.
type targetStatusDoc struct {
	Target          string                `json:"target"`
	Kind            string                `json:"kind"`
	Dialect         string                `json:"dialect,omitempty"`
	Authenticated   bool                  `json:"authenticated"`
	HostStateBefore *wire.AuthStateResult `json:"hostStateBefore,omitempty"`
	HostStateAfter  *wire.AuthStateResult `json:"hostStateAfter,omitempty"`
	Schemes         []targetSchemeStatus  `json:"schemes"`
}

// runTargetStatus asks the target whether it accepts the stored credentials.
func runTargetStatus(ctx context.Context, opts *StatusOptions) error {
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	cs, err := opts.Credentials()
	if err != nil {
		return err
	}
	creds, err := cs.ForTargetOrHost(ctx, opts.Target, "")
	if err != nil {
		return err
	}
	var doc targetStatusDoc
	var declared []wire.Requirement
	if isHTTPTarget(opts.Target) {
		doc, err = opts.httpStatus(ctx, cs, loggedInThrough(creds, opts.Target))
	} else {
		doc, declared, err = opts.hostStatus(ctx, cs, creds)
	}
	if err != nil {
		return err
	}
	var failed []schemeResult
	for _, s := range doc.Schemes {
		if s.Required && !s.Authenticated {
			failed = append(failed, s.schemeResult)
		}
	}
	doc.Authenticated = len(failed) == 0
	if opts.JSON {
		if err := writeJSONIndent(opts.IO.Out, doc); err != nil {
			return err
		}
	} else {
		doc.print(opts.IO.Out, opts.IO.OutPainter())
	}
	if len(failed) > 0 {
		return authFailure(opts.Target, declared, failed)
	}
	return nil
}

// hostStatus queries an agent host's auth state, authenticates the stored
// credentials and queries again.
func (opts *StatusOptions) hostStatus(ctx context.Context, cs *credentialSource, creds []*store.Credential) (targetStatusDoc, []wire.Requirement, error) {
	doc := targetStatusDoc{Target: wire.RedactTarget(opts.Target), Kind: kindAgentHost, Schemes: []targetSchemeStatus{}}
	hc, err := dialHost(ctx, opts.Target, opts.HTTPClient, opts.IO.ErrOut)
	if err != nil {
		return doc, nil, err
	}
	defer hc.client.Close()
	doc.Dialect = hc.dialect.String()
	if doc.HostStateBefore, err = hc.authState(ctx); err != nil {
		return doc, nil, err
	}
	for _, r := range hc.reqs {
		s := targetSchemeStatus{}
		if c := credentialFor(creds, opts.Target, r); c == nil {
			s.schemeResult = newSchemeResult(r, "store")
			s.refuse(resultNoCredential, "no stored credential for "+wire.RedactTarget(opts.Target))
		} else {
			cur, err := hc.authenticateStored(ctx, cs, opts.Target, r, c, false, &s.schemeResult)
			if err != nil {
				return doc, nil, err
			}
			if cur == nil {
				cur = c
			}
			d := describeCredential(cur, opts.Now(), opts.ShowToken)
			s.Credential = &d
		}
		s.Authenticated = s.Accepted
		doc.Schemes = append(doc.Schemes, s)
	}
	if doc.HostStateBefore != nil {
		if doc.HostStateAfter, err = hc.authState(ctx); err != nil {
			return doc, nil, err
		}
		for i := range doc.Schemes {
			s := &doc.Schemes[i]
			s.HostBefore = methodState(doc.HostStateBefore, s.SchemeID)
			s.HostAfter = methodState(doc.HostStateAfter, s.SchemeID)
			if s.HostAfter != nil {
				s.Authenticated = s.HostAfter.Authenticated
			}
		}
	}
	return doc, hc.reqs, nil
}

// authState asks the host what it holds (getAuthState, or auth/status:
// seed 003), or returns nil when it advertises neither.
func (hc *hostConn) authState(ctx context.Context) (*wire.AuthStateResult, error) {
	caps := hc.init.AgentCapabilities
	method := wire.MethodGetAuthState
	switch {
	case caps.GetAuthState:
	case caps.CanQueryAuthState():
		method = wire.MethodAuthStatus
	default:
		return nil, nil
	}
	var res wire.AuthStateResult
	if err := hc.client.Call(ctx, method, nil, &res); err != nil {
		return nil, fmt.Errorf("cannot query the auth state (%s): %w", method, err)
	}
	return &res, nil
}

func methodState(st *wire.AuthStateResult, id string) *wire.AuthMethodState {
	if st == nil {
		return nil
	}
	for i := range st.AuthMethods {
		if st.AuthMethods[i].AuthMethodID == id {
			return &st.AuthMethods[i]
		}
	}
	return nil
}

// httpStatus sends one MCP request to an HTTP target with the stored token
// (none when nothing is stored) and reports the answer.
func (opts *StatusOptions) httpStatus(ctx context.Context, cs *credentialSource, creds []*store.Credential) (targetStatusDoc, error) {
	doc := targetStatusDoc{Target: opts.Target, Kind: kindHTTP}
	s := targetSchemeStatus{}
	if len(creds) == 0 {
		s.schemeResult = schemeResult{Resource: opts.Target, Required: true, Source: "store"}
		if err := proveHTTP(ctx, opts.HTTPClient, opts.Target, "", &s.schemeResult); err != nil {
			return doc, err
		}
		if !s.Accepted {
			s.ErrorDescription = "not logged in; the server answered " + s.ErrorDescription
		}
	} else {
		var err error
		if s.schemeResult, err = authenticateHTTP(ctx, cs, opts.HTTPClient, opts.Target, creds[0]); err != nil {
			return doc, err
		}
		cur := creds[0]
		if c, err := cs.Store.Get(ctx, cur.Key); err == nil {
			cur = c
		}
		d := describeCredential(cur, opts.Now(), opts.ShowToken)
		s.Credential = &d
	}
	s.Authenticated = s.Accepted
	doc.Schemes = []targetSchemeStatus{s}
	return doc, nil
}

// print writes status TARGET's report: the target, then a block per scheme.
func (doc *targetStatusDoc) print(w io.Writer, p Painter) {
	fmt.Fprintln(w, p.Bold(safeText(doc.Target)))
	if len(doc.Schemes) == 0 {
		fmt.Fprintln(w, "  (declares no auth requirement)")
	}
	for _, s := range doc.Schemes {
		fmt.Fprintf(w, "  %s\n", s.headline(p))
		if doc.Kind == kindAgentHost {
			if doc.HostStateBefore == nil {
				fmt.Fprintln(w, "  - Host state: not queryable (no getAuthState or auth/status)")
			} else {
				fmt.Fprintf(w, "  - Host before: %s\n", safeText(hostStateText(s.HostBefore)))
				fmt.Fprintf(w, "  - Host after: %s\n", safeText(hostStateText(s.HostAfter)))
			}
		}
		if s.Challenge != "" {
			fmt.Fprintf(w, "  - Challenge: %s\n", safeText(s.Challenge))
		}
		if c := s.Credential; c != nil {
			fmt.Fprintf(w, "  - Stored: %s, %s, %s\n", safeText(orUnknown(c.Subject)), safeText(orNone(wire.JoinScope(c.Scopes))), c.expiry)
			fmt.Fprintf(w, "  - Token: %s\n", c.Token)
		} else {
			fmt.Fprintln(w, "  - Stored: none")
		}
		if s.RefreshError != "" {
			fmt.Fprintf(w, "  - Refresh: %s\n", safeText(s.RefreshError))
		}
	}
}

// headline is a scheme's first line: ✓ when authenticated, X when a
// required scheme is not, ! when an optional one is not.
func (s *targetSchemeStatus) headline(p Painter) string {
	switch {
	case s.Accepted:
		line := s.line(p, "accepted")
		if s.HTTPStatus != 0 {
			line += fmt.Sprintf(" (HTTP %d)", s.HTTPStatus)
		}
		return line
	case s.Authenticated && s.Error == resultNoCredential:
		return p.Green("✓") + " " + s.name() + ": authenticated with a token the host already holds (none stored here)"
	case s.Authenticated:
		return p.Yellow("!") + " " + s.name() + ": authenticated with a token the host already holds; ours was refused: " + s.reason()
	}
	return s.line(p, "accepted")
}

func hostStateText(m *wire.AuthMethodState) string {
	switch {
	case m == nil:
		return "not reported"
	case m.Message != "":
		return m.Message
	case m.Authenticated:
		return "authenticated"
	}
	return "not authenticated"
}

func orUnknown(s string) string {
	if s == "" {
		return "subject unknown"
	}
	return s
}

// maskToken shows the first 4 characters of a token and ***, or all of it.
func maskToken(t string, show bool) string {
	switch {
	case show:
		return t
	case t == "":
		return "(none)"
	case len(t) <= 8:
		return "***"
	}
	return t[:4] + "***"
}

// roughDuration renders d for people, rounded down: 45s, 12m, 3h, 2d (0s
// for a negative d).
func roughDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// writeJSONIndent writes v as indented JSON.
func writeJSONIndent(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot print JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
