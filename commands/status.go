package commands

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// StatusOptions are status's inputs.
type StatusOptions struct {
	IO     *IOStreams
	Client *client.Client

	// Target is empty for the store-only report.
	Target    string
	JSON      bool
	ShowToken bool
	// Check asks an ACP agent that reports no auth state with
	// session/new.
	Check bool
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
("valid"|"refreshable"|"expired"|"rejected"), "refreshable", "clientId", "token"}]}.
A credential whose refresh token or client the server refused (invalid_grant,
invalid_client) is X "login rejected by the server" until you log in again.
When $AGENTAUTH_TOKEN is set, status says so first, the token masked (--json:
"environment": {"variable", "token"}), and exits 0 even with nothing stored.

With TARGET: connect and initialize; ask the host what it already holds
(getAuthState or auth/status, when advertised); authenticate with the stored
credentials (refreshed when needed); ask again. Both answers are shown per
scheme. HTTP targets: one MCP request with the stored token, and the
answer's status and challenge. A token the server refuses before it expires
(revoked, or signed with a key the server no longer knows) shows X "refused
by the server (invalid_token)"; one that expired with no refresh token shows
X "has expired". When there is no refresh token, either way, log in again.
Exits 0 when every required scheme is
authenticated, 4 otherwise. --json: {"target", "kind", "dialect",
"authenticated", "hostStateBefore", "hostStateAfter", "schemes": [a scheme of
authenticate --json, plus "authenticated", "hostBefore", "hostAfter",
"credential" (as above)]}.

ACP agents: the state the agent reports (auth/status, getAuthState, or the
_auth/status_update it pushes), with its auth methods and their
descriptions. An agent that reports none is "authenticated: unknown" and
exit 3 ("authState": "unknown"); --check then asks it with session/new in
an empty temporary directory (the agent's -32000 is "no", exit 4; a session
is "yes", exit 0; "checkedWith": "session/new").

A server that signs you in to other services itself (serve "upstreams")
adds each one's sign-in from its /auth-status, for example
"✓ Rally (rally1.rallydev.com): signed in, expires in 59m" or "X Rally: not
signed in" (--json: "upstreams": [{"upstream", "label", "host",
"authenticated", "expiresAt"}]); a server without one shows nothing more.

The report is the command's output, so it goes to stdout (like gh auth
status and git status); errors and the login hint go to stderr.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout", Destination: &opts.JSON},
			&cli.BoolFlag{Name: "show-token", Usage: "show access tokens in full instead of masked", Destination: &opts.ShowToken},
			&cli.BoolFlag{Name: "check", Usage: "ACP agents that report no auth state: ask with session/new", Destination: &opts.Check},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 1 {
				return usageErrorf("status expects at most one TARGET")
			}
			if t := c.Args().First(); t != "" {
				var err error
				if opts.Target, err = normalTarget(c, t); err != nil {
					return err
				}
			}
			if opts.Check && (opts.Target == "" || client.IsHTTPTarget(opts.Target)) {
				return usageErrorf("--check applies to an ACP agent (stdio:, ws:// or wss://)")
			}
			opts.IO, opts.Client = f.IO, f.Client()
			if opts.Target == "" {
				return run(c.Context, opts)
			}
			listenForInterrupts(c.Context) // an offline command only without TARGET
			return withTarget(opts.Target, run(c.Context, opts))
		},
	}
}

func runStatus(ctx context.Context, opts *StatusOptions) error {
	if opts.Target == "" {
		return runStoreStatus(ctx, opts)
	}
	return runTargetStatus(ctx, opts)
}

// mark is ✓, ! or X for the credential's state.
func credentialMark(cs *client.CredentialStatus, p Painter) string {
	switch cs.State {
	case client.StateValid:
		return p.Green("✓")
	case client.StateRefreshable:
		return p.Yellow("!")
	}
	return p.Red("X")
}

// loggedIn is "dev: logged in as alice", or without a scheme "Logged in as alice".
func loggedInText(cs *client.CredentialStatus) string {
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
func printCredential(cs *client.CredentialStatus, w io.Writer, p Painter) {
	text := loggedInText(cs)
	if cs.State == client.StateRejected {
		text = strings.Replace(text, "ogged in", "ogin rejected by the server", 1)
	}
	fmt.Fprintf(w, "  %s %s\n", credentialMark(cs, p), safeText(text))
	fmt.Fprintf(w, "  - Issuer: %s\n", safeText(cs.Issuer))
	if cs.Target != "" && cs.Target != cs.Resource {
		fmt.Fprintf(w, "  - Target: %s\n", safeText(cs.Target))
	}
	fmt.Fprintf(w, "  - Scopes: %s\n", safeText(orNone(wire.JoinScope(cs.Scopes))))
	fmt.Fprintf(w, "  - Expiry: %s\n", cs.Expiry)
	fmt.Fprintf(w, "  - Token: %s\n", cs.Token)
	if cs.DPoPBound {
		fmt.Fprintf(w, "  - Bound to a DPoP key (RFC 9449): usable by agentauth only\n")
	}
	if !cs.Usable() {
		fmt.Fprintf(w, "  - To log in again, run: %s\n", cs.LoginCommand())
	}
}

// runStoreStatus reports every stored credential, from the store alone.
func runStoreStatus(ctx context.Context, opts *StatusOptions) error {
	doc, err := opts.Client.StoreStatus(ctx, opts.ShowToken)
	if err != nil {
		return err
	}
	st := doc.Store
	env := newEnvTokenStatus(opts.ShowToken)
	if opts.JSON {
		if err := writeJSONIndent(opts.IO.Out, storeStatusJSON{doc, env}); err != nil {
			return err
		}
	} else if env != nil {
		fmt.Fprintln(opts.IO.Out, env.line())
	}
	if len(doc.Credentials) == 0 && env != nil {
		return nil // the environment's token is what call and token use
	}
	if len(doc.Credentials) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "No credentials in the %s store (%s). To log in, run: %s\n", st.Kind, st.Location, client.LoginCommand("TARGET", ""))
		if hint := otherStoreHint(st.Kind); hint != "" {
			fmt.Fprintln(opts.IO.ErrOut, opts.IO.ErrPainter().Yellow("warning:")+" "+hint)
		}
		return &SilentError{Code: ExitAuth}
	}
	if !opts.JSON {
		// One write for the whole report (a Fprintf per line cost a
		// system call each).
		out := bufio.NewWriter(opts.IO.Out)
		p := opts.IO.OutPainter()
		for i, cs := range doc.Credentials {
			if i == 0 || cs.Resource != doc.Credentials[i-1].Resource {
				if i > 0 {
					fmt.Fprintln(out)
				}
				fmt.Fprintln(out, p.Bold(safeText(cs.Resource)))
			}
			printCredential(&cs, out, p)
		}
		fmt.Fprintf(out, "\nStore: %s, %s\n", st.Kind, st.Location)
		out.Flush()
	}
	if !doc.Usable {
		// The fix goes to stderr too: stdout may be a pipe or a file.
		var unusable []client.CredentialStatus
		for _, cs := range doc.Credentials {
			if !cs.Usable() {
				unusable = append(unusable, cs)
			}
		}
		switch {
		case len(unusable) == 1 && unusable[0].State == client.StateRejected:
			fmt.Fprintf(opts.IO.ErrOut, "agentauth: the authorization server rejected the credential for %s\n", unusable[0].Describe())
		case len(unusable) == 1:
			fmt.Fprintf(opts.IO.ErrOut, "agentauth: the credential for %s has expired and cannot be refreshed\n",
				unusable[0].Describe())
		default:
			fmt.Fprintf(opts.IO.ErrOut, "agentauth: %d stored credentials have expired (or were rejected) and cannot be refreshed\n", len(unusable))
		}
		for _, cs := range unusable {
			fmt.Fprintf(opts.IO.ErrOut, "To log in, run: %s\n", cs.LoginCommand())
		}
		return &SilentError{Code: ExitAuth}
	}
	return nil
}

// storeStatusJSON is status --json without TARGET: the store's report
// and, when set, "environment": {"variable": "AGENTAUTH_TOKEN", "token"}.
type storeStatusJSON struct {
	*client.StoreStatusDoc
	Environment *envTokenStatus `json:"environment,omitempty"`
}

// runTargetStatus asks the target whether it accepts the stored
// credentials (client.Client.TargetStatus) and prints the report.
func runTargetStatus(ctx context.Context, opts *StatusOptions) error {
	doc, err := opts.Client.TargetStatus(ctx, opts.Target, opts.ShowToken)
	if err != nil {
		return err
	}
	if opts.Check && doc.AuthState == client.AuthStateUnknown {
		if err := opts.checkAgent(ctx, doc); err != nil {
			return err
		}
	}
	if env := newEnvTokenStatus(opts.ShowToken); env != nil {
		fmt.Fprintln(opts.IO.ErrOut, "note: "+env.line()+"; this report is of the stored ones")
	}
	if opts.JSON {
		if err := writeJSONIndent(opts.IO.Out, doc); err != nil {
			return err
		}
	} else {
		out := bufio.NewWriter(opts.IO.Out)
		printTargetStatus(doc, out, opts.IO.OutPainter())
		printUpstreams(doc, out, opts.IO.OutPainter(), opts.Client.Now())
		out.Flush()
	}
	if doc.Failure != nil {
		return doc.Failure
	}
	if doc.AuthState == client.AuthStateUnknown {
		fmt.Fprintf(opts.IO.ErrOut, "agentauth: %s does not report whether it is signed in\nTo ask it with session/new, run: agentauth status --check %s\n",
			safeText(doc.Target), safeText(client.ShellQuote(doc.Target)))
		return &SilentError{Code: ExitUnknown}
	}
	return nil
}

// checkAgent asks an ACP agent that reports no auth state with
// session/new (client.ACPAgent.State), on a connection of its own, and
// completes doc with the answer.
func (opts *StatusOptions) checkAgent(ctx context.Context, doc *client.TargetStatusDoc) error {
	ctx, cancel := context.WithTimeout(ctx, client.AuthTimeout)
	defer cancel()
	agent, err := opts.Client.OpenACP(ctx, opts.Target, client.ACPOptions{})
	if err != nil {
		return err
	}
	defer agent.Close()
	st, err := agent.State(ctx, true)
	if err != nil {
		return err
	}
	doc.Authenticated, doc.AuthState, doc.CheckedWith = st.Authenticated, "no", st.Via
	doc.HostStateBefore = &wire.AuthStateResult{Authenticated: st.Authenticated, Message: st.Message}
	if st.Authenticated {
		doc.AuthState = "yes"
		return nil
	}
	cmd := "agentauth authenticate "
	if len(doc.AuthMethods) == 1 {
		cmd += "--method " + client.ShellQuote(doc.AuthMethods[0].ID) + " "
	}
	doc.Failure = &AuthError{Err: fmt.Errorf("%s is not authenticated (%s: %s)", doc.Target, st.Via, cmp.Or(st.Message, "authentication required")),
		Hint: cmd + client.ShellQuote(doc.Target)}
	return nil
}

// print writes status TARGET's report: the target, then a block per scheme.
func printTargetStatus(doc *client.TargetStatusDoc, w io.Writer, p Painter) {
	fmt.Fprintln(w, p.Bold(safeText(doc.Target)))
	switch st := doc.HostStateBefore; {
	case len(doc.Schemes) == 0 && st != nil:
		// An ACP agent: its own getAuthState answer, per auth method.
		for _, m := range st.AuthMethods {
			mark := p.Red("X")
			if m.Authenticated {
				mark = p.Green("✓")
			}
			fmt.Fprintf(w, "  %s %s: %s\n", mark, safeText(m.AuthMethodID), safeText(orNone(m.Message)))
		}
		if len(st.AuthMethods) == 0 {
			fmt.Fprintf(w, "  authenticated: %s%s\n", yesNo(st.Authenticated), safeText(cmpSuffix(" (", st.Message, ")")+cmpSuffix(" (checked with ", doc.CheckedWith, ")")))
			printACPMethods(w, doc.AuthMethods)
		}
	case doc.AuthState == client.AuthStateUnknown:
		fmt.Fprintln(w, "  authenticated: unknown (the agent does not report its auth state: no auth/status)")
		printACPMethods(w, doc.AuthMethods)
	case len(doc.Schemes) == 0:
		fmt.Fprintln(w, "  (declares no auth requirement)")
	}
	for _, s := range doc.Schemes {
		fmt.Fprintf(w, "  %s\n", headline(&s, p))
		if doc.Kind == client.KindAgentHost {
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
			fmt.Fprintf(w, "  - Stored: %s, %s, %s\n", safeText(orUnknown(c.Subject)), safeText(orNone(wire.JoinScope(c.Scopes))), c.Expiry)
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
func headline(s *client.TargetSchemeStatus, p Painter) string {
	switch {
	case s.Accepted:
		line := schemeLine(&s.SchemeResult, p, "accepted")
		if s.HTTPStatus != 0 {
			line += fmt.Sprintf(" (HTTP %d)", s.HTTPStatus)
		}
		return line
	case s.Authenticated && s.Error == client.ResultNoCredential:
		return p.Green("✓") + " " + s.Name() + ": authenticated with a token the host already holds (none stored here)"
	case s.Authenticated:
		return p.Yellow("!") + " " + s.Name() + ": authenticated with a token the host already holds; ours was refused: " + s.Reason()
	case s.Credential != nil && s.Credential.State != client.StateExpired && s.Error == wire.ErrInvalidToken:
		// Refused, not expired: "Stored:" below says when it expires.
		r := s.SchemeResult
		r.Error = "refused by the server (" + r.Error + ")"
		return schemeLine(&r, p, "accepted")
	}
	return schemeLine(&s.SchemeResult, p, "accepted")
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

// writeJSONIndent writes v as indented JSON.
func writeJSONIndent(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot print JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// printUpstreams writes the upstream sign-ins the server holds for the
// caller: "✓ Rally (rally1.rallydev.com): signed in, expires in
// 59m" or "X Rally: not signed in".
func printUpstreams(doc *client.TargetStatusDoc, w io.Writer, p Painter, now time.Time) {
	if len(doc.Upstreams) == 0 {
		return
	}
	fmt.Fprintln(w, "  Upstream sign-ins (kept by the server):")
	for _, u := range doc.Upstreams {
		name := cmp.Or(u.Label, u.Upstream)
		if u.Host != "" {
			name += " (" + u.Host + ")"
		}
		switch {
		case !u.Authenticated:
			fmt.Fprintf(w, "    %s %s: not signed in\n", p.Red("X"), safeText(name))
		case u.ExpiresAt == nil:
			fmt.Fprintf(w, "    %s %s: signed in\n", p.Green("✓"), safeText(name))
		case !u.ExpiresAt.After(now):
			fmt.Fprintf(w, "    %s %s: signed in, token expired (the server refreshes it when needed)\n", p.Green("✓"), safeText(name))
		default:
			fmt.Fprintf(w, "    %s %s: signed in, expires in %s\n", p.Green("✓"), safeText(name), client.RoughDuration(u.ExpiresAt.Sub(now)))
		}
	}
}

// printACPMethods lists an ACP agent's auth methods: id, type, name and an
// env_var method's variables.
func printACPMethods(w io.Writer, methods []wire.AuthMethod) {
	if len(methods) == 0 {
		return
	}
	fmt.Fprintln(w, "  auth methods:")
	for _, m := range methods {
		line := "    " + methodTitle(m)
		if vars := m.VarNames(); len(vars) > 0 {
			line += " — set " + strings.Join(vars, ", ")
		}
		fmt.Fprintln(w, safeText(line))
		if m.Description != "" {
			fmt.Fprintf(w, "      %s\n", safeText(m.Description))
		}
	}
}

// otherStoreHint is the warning for an empty store when the other backend
// holds credentials (store.OtherHolds): the user probably chose the wrong
// one for this command.
func otherStoreHint(kind string) string {
	dir, err := store.ConfigDir()
	if err != nil {
		return ""
	}
	other, n := store.OtherHolds(kind, dir)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the %s store is empty, but the %s store holds %d credential(s): use --store %s (the choice is remembered only by login)", kind, other, n, other)
}
