package client

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Credential states of status.
const (
	// StateValid: the access token is good for at least a minute, or its
	// expiry is unknown.
	StateValid = "valid"
	// StateRefreshable: expired or about to, with a refresh token.
	StateRefreshable = "refreshable"
	// StateExpired: expired with no refresh token: log in again.
	StateExpired = "expired"
	// StateRejected: the authorization server refused the refresh token
	// or the client (store.Credential.Rejected): log in again.
	StateRejected = "rejected"
)

// CredentialStatus is one stored credential as status shows it.
type CredentialStatus struct {
	Resource string `json:"resource"`
	Issuer   string `json:"issuer"`
	SchemeID string `json:"schemeId,omitempty"`
	Target   string `json:"target,omitempty"`
	Subject  string `json:"subject,omitempty"`
	// Provider is "github" for a GitHub login; SubjectChecked says GitHub's
	// /user gave Subject just now (else it is the login stored at login).
	Provider       string     `json:"provider,omitempty"`
	SubjectChecked bool       `json:"subjectChecked,omitempty"`
	Scopes         []string   `json:"scopes"`
	ExpiresAt      *time.Time `json:"expiresAt,omitempty"`
	State          string     `json:"state"`
	Refreshable    bool       `json:"refreshable"`
	ClientID       string     `json:"clientId,omitempty"`
	Token          string     `json:"token"`
	// DPoPBound says the token is bound to the credential's DPoP key
	// (RFC 9449): it is useless without it.
	DPoPBound bool `json:"dpopBound,omitempty"`

	// Expiry says for people when the access token expires.
	Expiry string `json:"-"`
}

// describeCredential classifies c at now.
func DescribeCredential(c *store.Credential, now time.Time, showToken bool) CredentialStatus {
	cs := CredentialStatus{Resource: c.Resource, Issuer: c.Issuer, SchemeID: c.SchemeID, Target: wire.RedactTarget(c.Target),
		Subject: c.Subject, Scopes: nonNil(c.Scopes), Refreshable: refreshable(c, now), ClientID: c.Client.ClientID,
		Token: maskToken(c.AccessToken, showToken), State: StateValid, DPoPBound: c.DPoPKey != ""}
	left := c.Expiry.Sub(now)
	known := !c.Expiry.IsZero()
	if known {
		t := c.Expiry.UTC().Truncate(time.Second)
		cs.ExpiresAt = &t
	}
	switch {
	case c.AccessToken == "" || (known && left <= 0):
		cs.State = StateExpired
		if cs.Refreshable {
			cs.State = StateRefreshable
		}
	case known && left < leeway(c) && cs.Refreshable:
		cs.State = StateRefreshable
	}
	if rej := rejection(c); rej != "" {
		cs.State, cs.Expiry = StateRejected, "rejected by the authorization server ("+rej+"), log in again"
		return cs
	}
	switch {
	case !known:
		cs.Expiry = "no expiry known"
	case left > 0:
		cs.Expiry = "expires in " + RoughDuration(left)
	case cs.Refreshable:
		cs.Expiry = "expired " + RoughDuration(-left) + " ago, refreshable"
	case c.RefreshToken != "":
		cs.Expiry = "expired " + RoughDuration(-left) + " ago, and so did its refresh token (" + RoughDuration(now.Sub(c.RefreshExpiry)) + " ago): log in again"
	default:
		cs.Expiry = "expired " + RoughDuration(-left) + " ago, not refreshable"
	}
	return cs
}

// refreshable says whether c has a refresh token that has not expired
// (as far as the token response said: refresh_expires_in).
func refreshable(c *store.Credential, now time.Time) bool {
	return c.RefreshToken != "" && (c.RefreshExpiry.IsZero() || now.Before(c.RefreshExpiry))
}

func (cs *CredentialStatus) Usable() bool {
	return cs.State != StateExpired && cs.State != StateRejected
}

// rejection is the OAuth error with which the server refused c, "" when
// none: its refresh token (Credential.Rejected) or its client.
func rejection(c *store.Credential) string {
	switch {
	case c.Rejected != "":
		return c.Rejected
	case c.Client.Rejected:
		return "invalid_client"
	}
	return ""
}

// LoginCommand logs in again to what the credential was obtained for.
func (cs *CredentialStatus) LoginCommand() string {
	target := cs.Target
	if target == "" {
		target = cs.Resource
	}
	return LoginCommand(target, cs.SchemeID)
}

// TargetSchemeStatus is one requirement in status TARGET: what the host
// held before, what happened to the stored credential, what it holds after.
type TargetSchemeStatus struct {
	SchemeResult
	// Authenticated is the final answer: the host's when it can be asked,
	// else whether the stored token was accepted.
	Authenticated bool                  `json:"authenticated"`
	HostBefore    *wire.AuthMethodState `json:"hostBefore,omitempty"`
	HostAfter     *wire.AuthMethodState `json:"hostAfter,omitempty"`
	Credential    *CredentialStatus     `json:"credential"`
}

// TargetStatusDoc is status --json's document with TARGET.
type TargetStatusDoc struct {
	Target          string                `json:"target"`
	Kind            string                `json:"kind"`
	Dialect         string                `json:"dialect,omitempty"`
	Authenticated   bool                  `json:"authenticated"`
	HostStateBefore *wire.AuthStateResult `json:"hostStateBefore,omitempty"`
	HostStateAfter  *wire.AuthStateResult `json:"hostStateAfter,omitempty"`
	Schemes         []TargetSchemeStatus  `json:"schemes"`
	// AuthMethods are an ACP agent's advertised auth methods; AuthState
	// is "unknown" when it offers some but reports no state (no
	// auth/status), so that status cannot say whether it is signed in.
	AuthMethods []wire.AuthMethod `json:"authMethods,omitempty"`
	AuthState   string            `json:"authState,omitempty"`
	// CheckedWith is "session/new" when status --check asked the agent.
	CheckedWith string `json:"checkedWith,omitempty"`
	// Upstreams are the services the server signs the user in to
	// (issue 15), from its /auth-status; absent when it brokers none.
	Upstreams []wire.UpstreamStatus `json:"upstreams,omitempty"`
	// Failure is the *AuthError when a required scheme is not
	// authenticated.
	Failure *AuthError `json:"-"`
}

// AuthStateUnknown is TargetStatusDoc.AuthState for an ACP agent that
// reports no auth state.
const AuthStateUnknown = "unknown"

// TargetStatus asks target whether it accepts the stored credentials: for
// an agent host, what it holds before (AuthState), the stored credentials
// authenticated, what it holds after; for an HTTP target, one MCP request
// with the stored token (none when nothing is stored). It returns the
// report, the requirements the host declares and, when a required scheme
// is not authenticated, the *AuthError to report.
func (cl *Client) TargetStatus(ctx context.Context, target string, showToken bool) (*TargetStatusDoc, error) {
	ctx, cancel := context.WithTimeout(ctx, AuthTimeout)
	defer cancel()
	var doc *TargetStatusDoc
	var declared []wire.Requirement
	var err error
	if IsHTTPTarget(target) {
		doc, err = cl.httpStatus(ctx, target, showToken)
	} else {
		doc, declared, err = cl.hostStatus(ctx, target, showToken)
	}
	if err != nil {
		return nil, err
	}
	cl.upstreamStatus(ctx, target, doc)
	var failed []SchemeResult
	for _, s := range doc.Schemes {
		if s.Required && !s.Authenticated {
			failed = append(failed, s.SchemeResult)
		}
	}
	doc.Authenticated = len(failed) == 0
	if len(failed) > 0 {
		doc.Failure = AuthFailure(target, declared, failed)
	}
	// An ACP agent that declares no requirement of its own answers for
	// itself through auth/status (ACP RFD get-auth-state) or getAuthState
	// (seed 003); one that lists methods but answers neither cannot be
	// said to be signed in or not.
	if st := doc.HostStateBefore; len(doc.Schemes) == 0 && st == nil && (len(doc.AuthMethods) > 0 || doc.Dialect == wire.DialectACP.String()) {
		doc.Authenticated, doc.AuthState = false, AuthStateUnknown
	}
	if st := doc.HostStateBefore; len(doc.Schemes) == 0 && st != nil && !st.Authenticated {
		doc.Authenticated = false
		method := "ID"
		if i := slices.IndexFunc(st.AuthMethods, func(m wire.AuthMethodState) bool { return !m.Authenticated }); i >= 0 {
			method = st.AuthMethods[i].AuthMethodID
		} else if len(doc.AuthMethods) > 0 {
			method = doc.AuthMethods[0].ID
		}
		doc.Failure = &AuthError{Err: fmt.Errorf("%s is not authenticated: %s", wire.RedactTarget(target), cmp.Or(st.Message, "no auth method is authenticated")),
			Hint: CommandLine("agentauth", "authenticate", "--method", method, wire.RedactTarget(target))}
	}
	return doc, nil
}

// hostStatus queries an agent host's auth state, authenticates the stored
// credentials and queries again.
func (cl *Client) hostStatus(ctx context.Context, target string, showToken bool) (*TargetStatusDoc, []wire.Requirement, error) {
	s, err := cl.OpenHost(ctx, target, false)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	doc := &TargetStatusDoc{Target: wire.RedactTarget(target), Kind: KindAgentHost, Schemes: []TargetSchemeStatus{}, Dialect: s.Dialect.String()}
	if doc.HostStateBefore, err = s.AuthState(ctx); err != nil {
		return nil, nil, err
	}
	if len(s.Reqs) == 0 {
		doc.AuthMethods = s.Init.AuthMethods
		if doc.HostStateBefore == nil {
			// An ACP agent that only pushes its state (authStatus).
			doc.HostStateBefore = s.PushedAuthStatus(ctx)
		}
	}
	for _, r := range s.Reqs {
		res, err := s.AuthenticateScheme(ctx, r, "")
		if err != nil {
			return nil, nil, err
		}
		st := TargetSchemeStatus{SchemeResult: res, Authenticated: res.Accepted}
		if c := res.Credential(); c != nil {
			d := DescribeCredential(c, cl.Now(), showToken)
			cl.gitHubStatus(ctx, c, &d)
			st.Credential = &d
		}
		doc.Schemes = append(doc.Schemes, st)
	}
	if doc.HostStateBefore != nil {
		if doc.HostStateAfter, err = s.AuthState(ctx); err != nil {
			return nil, nil, err
		}
		for i := range doc.Schemes {
			st := &doc.Schemes[i]
			st.HostBefore = MethodState(doc.HostStateBefore, st.SchemeID)
			st.HostAfter = MethodState(doc.HostStateAfter, st.SchemeID)
			if st.HostAfter != nil {
				st.Authenticated = st.HostAfter.Authenticated
			}
		}
	}
	return doc, s.Reqs, nil
}

// httpStatus sends one MCP request to an HTTP target with the stored token
// (none when nothing is stored) and reports the answer.
func (cl *Client) httpStatus(ctx context.Context, target string, showToken bool) (*TargetStatusDoc, error) {
	cs, err := cl.Credentials()
	if err != nil {
		return nil, err
	}
	creds, err := cs.ForTarget(ctx, target, "")
	if err != nil {
		return nil, err
	}
	creds = LoggedInThrough(creds, target)
	doc := &TargetStatusDoc{Target: target, Kind: KindHTTP}
	s := TargetSchemeStatus{}
	if len(creds) == 0 {
		s.SchemeResult = SchemeResult{Resource: target, Required: true, Source: "store"}
		if err := cl.ProveHTTP(ctx, target, "", &s.SchemeResult); err != nil {
			return nil, err
		}
		if !s.Accepted {
			s.ErrorDescription = "not logged in; the server answered " + s.ErrorDescription
		}
	} else {
		if s.SchemeResult, err = cl.AuthenticateHTTP(ctx, cs, target, creds[0]); err != nil {
			return nil, err
		}
		cur := creds[0]
		if c, err := cs.Store.Get(ctx, cur.Key); err == nil {
			cur = c
		}
		d := DescribeCredential(cur, cl.Now(), showToken)
		s.Credential = &d
	}
	s.Authenticated = s.Accepted
	doc.Schemes = []TargetSchemeStatus{s}
	return doc, nil
}

// MaskToken is t as status shows it: the first 4 characters and ***,
// or all of it with show.
func MaskToken(t string, show bool) string { return maskToken(t, show) }

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

// nonNil makes an absent list print as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Describe names the credential for messages (DescribeKey).
func (cs *CredentialStatus) Describe() string {
	return DescribeKey(store.Key{Resource: cs.Resource, SchemeID: cs.SchemeID})
}

// StoreStatusDoc is every stored credential as status shows it (status
// --json without TARGET).
type StoreStatusDoc struct {
	Store StoreDoc `json:"store"`
	// Usable: something is stored, and every credential is valid or
	// refreshable.
	Usable      bool               `json:"usable"`
	Credentials []CredentialStatus `json:"credentials"`
}

// StoreDoc names the store.
type StoreDoc struct {
	Kind     string `json:"kind"`
	Location string `json:"location"`
}

// StoreStatus classifies every stored credential, from the store alone
// (no network) except for GitHub credentials, whose login GitHub's /user
// gives when reachable (gitHubStatus).
func (cl *Client) StoreStatus(ctx context.Context, showToken bool) (*StoreStatusDoc, error) {
	st, err := cl.Store()
	if err != nil {
		return nil, err
	}
	creds, err := st.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the credential store: %w", err)
	}
	now := cl.Now()
	doc := &StoreStatusDoc{Store: StoreDoc{Kind: st.Kind(), Location: st.Location()}, Usable: len(creds) > 0, Credentials: []CredentialStatus{}}
	for _, c := range creds {
		cs := DescribeCredential(c, now, showToken)
		cl.gitHubStatus(ctx, c, &cs)
		doc.Usable = doc.Usable && cs.Usable()
		doc.Credentials = append(doc.Credentials, cs)
	}
	return doc, nil
}
