package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// HostSession is an initialized connection to an agent host with the
// stored credentials it may be handed, and the ones it holds by
// requirement (heldKey).
type HostSession struct {
	Target string
	*HostConn
	// Creds are the stored credentials (nil with a token from stdin).
	Creds []*store.Credential
	cs    *Credentials
	held  map[string]*store.Credential
	cl    *Client
}

// OpenHost reads the stored credentials for target (unless noStore) and
// connects and initializes (DialHost).
func (cl *Client) OpenHost(ctx context.Context, target string, noStore bool) (*HostSession, error) {
	s, err := cl.newHostSession(ctx, target, noStore)
	if err != nil {
		return nil, err
	}
	if s.HostConn, err = DialHost(ctx, target, cl.HTTPClient, cl.Stderr); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenHostWith is OpenHost with the given initialize params, in their
// dialect only, and returns the raw initialize result too. A failed
// initialize is a *CallError.
func (cl *Client) OpenHostWith(ctx context.Context, target string, noStore bool, params any) (*HostSession, json.RawMessage, error) {
	s, err := cl.newHostSession(ctx, target, noStore)
	if err != nil {
		return nil, nil, err
	}
	conn, err := wire.DialTarget(ctx, target, hostDialOptions(cl.HTTPClient, cl.Stderr))
	if err != nil {
		return nil, nil, err
	}
	c := wire.NewClient(conn)
	var raw json.RawMessage
	if err := c.Call(ctx, wire.MethodInitialize, params, &raw); err != nil {
		c.Close()
		return nil, nil, &CallError{Method: wire.MethodInitialize, Err: err}
	}
	var res wire.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("cannot read the initialize result: %w", err)
	}
	if err := wire.SubscribeRoot(ctx, c, &res); err != nil {
		c.Close()
		return nil, nil, err
	}
	s.HostConn = &HostConn{Client: c, Dialect: res.Dialect(), Init: &res, Reqs: res.Requirements()}
	return s, raw, nil
}

// heldKey names requirement r among the held credentials: its scheme id
// or, from a shipped AHP host, which declares none (VS Code's agent host:
// every requirement is a protected resource), its resource.
func heldKey(r wire.Requirement) string {
	return cmp.Or(r.SchemeID, r.Resource)
}

func (cl *Client) newHostSession(ctx context.Context, target string, noStore bool) (*HostSession, error) {
	s := &HostSession{Target: target, held: map[string]*store.Credential{}, cl: cl}
	if noStore {
		return s, nil
	}
	var err error
	if s.cs, err = cl.Credentials(); err != nil {
		return nil, err
	}
	if s.Creds, err = s.cs.ForTargetOrHost(ctx, target, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// Close ends the connection.
func (s *HostSession) Close() { s.Client.Close() }

// AuthenticateScheme authenticates r: with token when not empty, else
// with its stored credential (CredentialFor, AuthenticateStored), and
// remembers the credential the host then holds.
func (s *HostSession) AuthenticateScheme(ctx context.Context, r wire.Requirement, token string) (SchemeResult, error) {
	var res SchemeResult
	if token != "" {
		res = newSchemeResult(r, "stdin")
		if err := s.Authenticate(ctx, r, token, &res); err != nil {
			return res, err
		}
		if res.Accepted {
			res.Subject = TokenSubject(token)
		}
		return res, nil
	}
	c := CredentialFor(s.Creds, s.Target, r)
	if c == nil {
		res = newSchemeResult(r, "store")
		res.refuse(ResultNoCredential, "no stored credential for "+wire.RedactTarget(s.Target))
		return res, nil
	}
	cur, err := s.AuthenticateStored(ctx, s.cs, s.Target, r, c, false, &res)
	if err != nil {
		return res, err
	}
	if cur != nil {
		s.held[heldKey(r)] = cur
	}
	res.credential = cur
	if cur == nil {
		res.credential = c
	}
	return res, nil
}

// AuthenticateStoredAll authenticates every declared scheme that has a
// stored credential. A required scheme the host refuses is an *AuthError
// with the login command; refused reports each refusal (optional ones are
// left out).
func (s *HostSession) AuthenticateStoredAll(ctx context.Context, refused func(SchemeResult)) error {
	var failed []SchemeResult
	for _, r := range s.Reqs {
		if CredentialFor(s.Creds, s.Target, r) == nil {
			continue
		}
		res, err := s.AuthenticateScheme(ctx, r, "")
		if err != nil {
			return err
		}
		if !res.Accepted {
			refused(res)
			failed = append(failed, res)
		}
	}
	if f := AuthFailure(s.Target, s.Reqs, failed); f != nil {
		return f
	}
	return nil
}

// Renew answers a call refused with -32007 invalid_token for a scheme
// authenticated from the store: the credential is refreshed and
// authenticated again, and retry says to repeat the call once. A -32007
// that names only protected resources (VS Code's agent host) sends each
// one's held credential again. refused reports each scheme that could not
// be renewed.
func (s *HostSession) Renew(ctx context.Context, callErr error, refused func(SchemeResult)) (retry bool, err error) {
	var rpc *wire.Error
	data, ok := wire.AuthRequiredData{}, false
	if errors.As(callErr, &rpc) {
		data, ok = rpc.AuthRequired()
	}
	if !ok {
		return false, nil
	}
	// What to renew: the schemes whose token a challenge calls invalid
	// (refreshed first), or, from a host that names only resources (VS
	// Code's agents answer -32007 with their protected resources when
	// they hold no token: node/claude/claudeAgent.ts,
	// _ensureAuthenticated), the held credential of each (sent again).
	type renewal struct {
		req   wire.Requirement
		force bool
	}
	var todo []renewal
	for _, ch := range data.Challenges {
		i := slices.IndexFunc(s.Reqs, func(r wire.Requirement) bool { return r.SchemeID == ch.SchemeID })
		if i >= 0 && ch.Error == wire.ErrInvalidToken {
			todo = append(todo, renewal{s.Reqs[i], true})
		}
	}
	if len(data.Challenges) == 0 {
		for _, md := range data.Resources {
			i := slices.IndexFunc(s.Reqs, func(r wire.Requirement) bool {
				return (md.SchemeID != "" && r.SchemeID == md.SchemeID) || (md.SchemeID == "" && r.Resource == md.Resource)
			})
			if i >= 0 {
				todo = append(todo, renewal{s.Reqs[i], false})
			}
		}
	}
	for _, t := range todo {
		c := s.held[heldKey(t.req)]
		if c == nil {
			continue
		}
		var res SchemeResult
		cur, err := s.AuthenticateStored(ctx, s.cs, s.Target, t.req, c, t.force, &res)
		if err != nil {
			return false, err
		}
		if cur == nil {
			refused(res)
			if f := AuthFailure(s.Target, s.Reqs, []SchemeResult{res}); f != nil {
				return false, f
			}
			continue
		}
		s.held[heldKey(t.req)], retry = cur, true
	}
	return retry, nil
}

// WatchEvent is what Watch reports: a push from the host, then, unless
// its state is authenticated, the result of authenticating again.
type WatchEvent struct {
	Notification AuthNotification
	// Result is nil for the push itself.
	Result *SchemeResult
}

// Watch answers the host's auth-state pushes (PROTOCOL.md "Auth state
// notifications") until ctx ends: "expired" with the stored credential
// made usable again (refreshed), "revoked" and "required" with a forced
// refresh; a required scheme that cannot be re-authenticated ends the
// watch with an *AuthError. Each push and each result goes to report; an
// error from report ends the watch.
func (s *HostSession) Watch(ctx context.Context, reqs []wire.Requirement, report func(WatchEvent) error) error {
	for {
		var m *wire.Message
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case m, ok = <-s.Client.Notifications():
		}
		if !ok {
			return fmt.Errorf("%s closed the connection", wire.RedactTarget(s.Target))
		}
		var pushes []AuthNotification
		if added, ok := AgentsChanged(m, reqs); ok {
			// A requirement the host added is a "required" push of its own.
			reqs = append(reqs, added...)
			s.Reqs = reqs
			for _, r := range added {
				pushes = append(pushes, AuthNotification{Req: r, State: wire.StateRequired})
			}
		} else if n, ok := ParseAuthNotification(m, reqs); ok {
			pushes = append(pushes, n)
		}
		for _, n := range pushes {
			if err := s.answer(ctx, n, report); err != nil {
				return err
			}
		}
	}
}

// answer reports push n and, unless it says authenticated, authenticates
// its scheme again from the store.
func (s *HostSession) answer(ctx context.Context, n AuthNotification, report func(WatchEvent) error) error {
	if err := report(WatchEvent{Notification: n}); err != nil {
		return err
	}
	if n.State == wire.StateAuthenticated {
		return nil
	}
	c := s.held[heldKey(n.Req)]
	if c == nil {
		c = CredentialFor(s.Creds, s.Target, n.Req)
	}
	if c == nil {
		if !n.Req.Required {
			return nil
		}
		return &AuthError{Err: fmt.Errorf("%s is %s and no stored credential can renew it", n.Name(), n.State),
			Hint: LoginCommand(s.Target, SchemeHint(s.Reqs, n.Req.SchemeID))}
	}
	rctx, cancel := context.WithTimeout(ctx, AuthTimeout)
	var res SchemeResult
	next, err := s.AuthenticateStored(rctx, s.cs, s.Target, n.Req, c, n.State != wire.StateExpired, &res)
	cancel()
	if err != nil {
		return err
	}
	if next != nil {
		s.held[heldKey(n.Req)] = next
	}
	if err := report(WatchEvent{Notification: n, Result: &res}); err != nil {
		return err
	}
	if !res.Accepted && n.Req.Required {
		return &AuthError{Err: fmt.Errorf("cannot authenticate %s again with %s", n.Name(), wire.RedactTarget(s.Target)),
			Hint: LoginCommand(s.Target, SchemeHint(s.Reqs, n.Req.SchemeID))}
	}
	return nil
}

// AgentsChanged reads the published dialect's root/agentsChanged action
// (AHP root-channel.md, "Actions") and returns the requirements its agents
// declare that reqs lacks.
func AgentsChanged(m *wire.Message, reqs []wire.Requirement) ([]wire.Requirement, bool) {
	if m.Method != "action" {
		return nil, false
	}
	var p struct {
		Channel string `json:"channel"`
		Action  struct {
			Type   string               `json:"type"`
			Agents []wire.SnapshotAgent `json:"agents"`
		} `json:"action"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.Channel != wire.RootChannel || p.Action.Type != "root/agentsChanged" {
		return nil, false
	}
	res := wire.InitializeResult{ProtocolVersion: json.RawMessage(`"0"`),
		Snapshots: []wire.Snapshot{{Resource: wire.RootChannel, State: wire.SnapshotState{Agents: p.Action.Agents}}}}
	var added []wire.Requirement
	for _, r := range res.Requirements() {
		if !slices.ContainsFunc(reqs, func(o wire.Requirement) bool { return o.SchemeID == r.SchemeID && o.Resource == r.Resource }) {
			added = append(added, r)
		}
	}
	return added, true
}

// AuthState asks the host what it holds (getAuthState, or auth/status:
// seed 003), or returns nil when it advertises neither.
func (hc *HostConn) AuthState(ctx context.Context) (*wire.AuthStateResult, error) {
	// auth/status (ACP RFD get-auth-state: agentCapabilities.auth.status)
	// first; getAuthState is the older name of the same query.
	method := AuthStateMethod(hc.Init.AgentCapabilities)
	if method == "" {
		return nil, nil
	}
	var res wire.AuthStateResult
	if err := hc.Client.Call(ctx, method, nil, &res); err != nil {
		return nil, fmt.Errorf("cannot query the auth state (%s): %w", method, err)
	}
	return &res, nil
}

// AuthStateMethod is the auth-state query caps advertises, "" for none:
// auth/status (ACP RFD get-auth-state: agentCapabilities.auth.status),
// else getAuthState, its older name.
func AuthStateMethod(caps wire.AgentCapabilities) string {
	switch {
	case caps.Auth != nil && caps.Auth.Status:
		return wire.MethodAuthStatus
	case caps.GetAuthState:
		return wire.MethodGetAuthState
	}
	return ""
}

// authStatusWait bounds the wait for an agent's first _auth/status_update:
// claude-agent-acp bounds the probe behind it at 5 s
// (AUTH_STATUS_PROBE_TIMEOUT_MS, dist/auth-status.js, 0.101.0).
const authStatusWait = 6 * time.Second

// PushedAuthStatus is the state an agent of the authStatus extension
// pushes after initialize (_auth/status_update {authStatus: {kind, label,
// detail}}, kind "none" for logged out; wire.MethodAuthStatusUpdate) as an
// auth state whose message is the label (and detail), or nil when the
// agent does not advertise it or says nothing within authStatusWait (the
// extension says "cannot determine" by silence). Other notifications read
// meanwhile are dropped: for status, which asks once.
func (hc *HostConn) PushedAuthStatus(ctx context.Context) *wire.AuthStateResult {
	if !hc.Init.AgentCapabilities.PushesAuthStatus() {
		return nil
	}
	timer := time.NewTimer(authStatusWait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			return nil
		case m, ok := <-hc.Client.Notifications():
			if !ok {
				return nil
			}
			var p struct {
				AuthStatus struct {
					Kind, Label, Detail string
				} `json:"authStatus"`
			}
			if m.Method != wire.MethodAuthStatusUpdate || json.Unmarshal(m.Params, &p) != nil || p.AuthStatus.Kind == "" {
				continue
			}
			msg := cmp.Or(p.AuthStatus.Label, p.AuthStatus.Kind)
			if p.AuthStatus.Detail != "" {
				msg += ", " + p.AuthStatus.Detail
			}
			return &wire.AuthStateResult{Authenticated: p.AuthStatus.Kind != "none", Message: msg}
		}
	}
}

// MethodState is the host's state for scheme id, or nil.
func MethodState(st *wire.AuthStateResult, id string) *wire.AuthMethodState {
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

// PickRequirement chooses the scheme to authenticate: id (a scheme id, or
// the resource of a requirement without one, as a shipped AHP host
// declares them), else the only required scheme, else the only scheme.
func PickRequirement(reqs []wire.Requirement, id string) (wire.Requirement, error) {
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = cmp.Or(r.SchemeID, r.Resource)
	}
	if id != "" {
		if i := slices.Index(ids, id); i >= 0 {
			return reqs[i], nil
		}
		return wire.Requirement{}, Usagef("the host declares no scheme %q (declared: %s)", id, strings.Join(ids, ", "))
	}
	var required []wire.Requirement
	for _, r := range reqs {
		if r.Required {
			required = append(required, r)
		}
	}
	switch {
	case len(required) == 1:
		return required[0], nil
	case len(required) == 0 && len(reqs) == 1:
		return reqs[0], nil
	case len(reqs) == 0:
		return wire.Requirement{}, errors.New("the host declares no auth scheme to authenticate with")
	default:
		return wire.Requirement{}, Usagef("the host declares several schemes (%s): choose one with --scheme", strings.Join(ids, ", "))
	}
}
