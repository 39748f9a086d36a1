package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// authClientID is the clientId a host session sends with initialize.
const authClientID = "agentauth-authenticate"

// AuthTimeout bounds connecting, initialize, refreshing and authenticating,
// and each re-authentication of a watch.
const AuthTimeout = 60 * time.Second

// Error codes of a scheme result that are not RFC 6750 §3.1 codes.
const (
	// ResultNoCredential: nothing is stored for the scheme.
	ResultNoCredential = "no_credential"
	// ResultLoginRequired: the stored credential cannot be refreshed.
	ResultLoginRequired = "login_required"
	// ResultNotAccepted: the host answered {"authenticated": false}.
	ResultNotAccepted = "not_accepted"
	// ResultCrossOrigin: the host declares a resource on another origin,
	// and the user never allowed it to receive that resource's token.
	ResultCrossOrigin = "cross_origin_resource"
)

// SchemeResult is what happened to one requirement: the unit of
// authenticate's output, and of status TARGET's.
type SchemeResult struct {
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

	// credential is the stored credential used (the current one when it
	// was accepted), nil when none was.
	credential *store.Credential
}

// Credential is the stored credential the result is about, nil when none
// was used.
func (r *SchemeResult) Credential() *store.Credential { return r.credential }

func newSchemeResult(r wire.Requirement, source string) SchemeResult {
	return SchemeResult{SchemeID: r.SchemeID, Label: r.Label, Resource: r.Resource, Required: r.Required, Source: source}
}

// name labels the result: the scheme id, else the resource.
func (r *SchemeResult) Name() string {
	if r.SchemeID != "" {
		return r.SchemeID
	}
	return r.Resource
}

// accept records that c's access token was accepted.
func (r *SchemeResult) accept(c *store.Credential) {
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
func (r *SchemeResult) refuse(code, description string) {
	r.Accepted, r.Error, r.ErrorDescription = false, code, description
}

// reason explains a refusal in one phrase.
func (r *SchemeResult) Reason() string {
	var s string
	switch r.Error {
	case ResultNoCredential:
		s = "not logged in"
	case ResultLoginRequired, ResultNotAccepted, ResultCrossOrigin, "":
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

// AuthNotification is an auth-state push in either dialect.
type AuthNotification struct {
	Req       wire.Requirement
	State     string
	Challenge *wire.Challenge
}

// parseAuthNotification reads notify/authRequired (design) or auth/required
// (published: reason "required" also stands for revoked) for one of reqs.
func ParseAuthNotification(m *wire.Message, reqs []wire.Requirement) (AuthNotification, bool) {
	var n AuthNotification
	var schemeID, resource string
	switch m.Method {
	case wire.MethodNotifyAuthRequired:
		var p wire.NotifyAuthRequiredParams
		if json.Unmarshal(m.Params, &p) != nil {
			return n, false
		}
		schemeID, resource, n.State, n.Challenge = p.SchemeID, p.Resource, p.State, p.Challenge
	case wire.MethodAuthRequired:
		// resource is the RFC 9728 metadata, or in older AHP texts its
		// bare identifier.
		var p struct {
			Resource json.RawMessage `json:"resource"`
			Reason   string          `json:"reason"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return n, false
		}
		var md wire.ProtectedResourceMetadata
		if json.Unmarshal(p.Resource, &md) != nil && json.Unmarshal(p.Resource, &md.Resource) != nil {
			return n, false
		}
		schemeID, resource, n.State = md.SchemeID, md.Resource, cmp.Or(p.Reason, wire.StateRequired)
	default:
		return n, false
	}
	for _, r := range reqs {
		if (schemeID != "" && r.SchemeID == schemeID) || (schemeID == "" && r.Resource == resource) {
			n.Req = r
			return n, true
		}
	}
	return n, false
}

func (n AuthNotification) Name() string {
	if n.Req.SchemeID != "" {
		return n.Req.SchemeID
	}
	return n.Req.Resource
}

// HostConn is an initialized connection to an agent host.
type HostConn struct {
	Client  *wire.Client
	Dialect wire.Dialect
	Init    *wire.InitializeResult
	// Reqs are the requirements the host declares.
	Reqs []wire.Requirement
	// accounts are the host accounts (AHP accounts-channel.md) the
	// client-brokered deliveries were admitted to, by resource.
	accounts map[string]string
	// noAuthBegin is set once the host answered authBegin -32601: it
	// advertises clientBrokered without the method, so deliveries go
	// unbound, as to a host without the flow.
	noAuthBegin bool
}

// authenticateAccount delivers token to an AHP 1.x host that admits
// client-brokered credentials or takes auth/revoked
// (docs/specification/accounts-channel.md, types/authentication.test.ts):
// the account the stored credential belongs to ({authority: its issuer,
// id: its subject}) when the host takes revocation; for a
// client-brokered host, the first delivery of a resource is bound to an
// admission attempt (authBegin) and later ones to the account it was
// admitted to. A bound delivery answered without that account is an
// error: the outcome is unconfirmed. A host that advertises the flow but
// answers authBegin -32601 (method not found) gets a plain authenticate,
// the delivery of a host without it.
func (hc *HostConn) authenticateAccount(ctx context.Context, r wire.Requirement, token string, c *store.Credential) error {
	p := wire.AuthenticateParams{Channel: wire.RootChannel, Resource: r.Resource, Token: token}
	if hc.Init.TakesRevocation() && c != nil && c.Issuer != "" && c.Subject != "" {
		p.Account = &wire.AuthenticationAccount{Authority: c.Issuer, ID: c.Subject}
	}
	if hc.Init.ClientBrokered() && token != "" && !hc.noAuthBegin {
		if id := hc.accounts[r.Resource]; id != "" {
			p.Binding = &wire.AuthenticationBinding{Kind: "account", AccountID: id}
		} else {
			var b wire.AuthBeginResult
			err := hc.Client.Call(ctx, wire.MethodAuthBegin, wire.AuthBeginParams{Channel: wire.AccountsChannel,
				Target: wire.AuthBeginTarget{Consumer: wire.AccountConsumer{Kind: "agent", Provider: hc.Init.ProviderOf(r.Resource), Resource: r.Resource}},
				Flows:  []wire.AuthFlow{{Kind: wire.AuthFlowClientBrokered}}}, &b)
			var rpc *wire.Error
			switch {
			case errors.As(err, &rpc) && rpc.Code == wire.CodeMethodNotFound:
				hc.noAuthBegin = true
			case err != nil:
				return err
			case b.Flow != wire.AuthFlowClientBrokered || b.AttemptID == "":
				return fmt.Errorf("authBegin answered flow %q without a client-brokered attempt", b.Flow)
			default:
				p.Binding = &wire.AuthenticationBinding{Kind: "attempt", AttemptID: b.AttemptID}
			}
		}
	}
	var res wire.AuthenticateResult
	if err := hc.Client.Call(ctx, wire.MethodAuthenticate, p, &res); err != nil {
		return err
	}
	if res.Authenticated != nil && !*res.Authenticated {
		return fmt.Errorf("%w for %s", wire.ErrTokenNotAccepted, r.Resource)
	}
	if p.Binding == nil {
		return nil
	}
	switch {
	case res.AccountID == "":
		return fmt.Errorf("the host answered a bound authenticate without accountId: the admission is unconfirmed")
	case p.Binding.Kind == "account" && res.AccountID != p.Binding.AccountID:
		return fmt.Errorf("the host answered account %q for a renewal of account %q", res.AccountID, p.Binding.AccountID)
	}
	if hc.accounts == nil {
		hc.accounts = map[string]string{}
	}
	hc.accounts[r.Resource] = res.AccountID
	return nil
}

// hostDialOptions dial an agent host: a stdio child's stderr, and the
// lines of its stdout that are not JSON (an ACP agent's sign-in URL), go
// to stderr.
func hostDialOptions(hc *http.Client, stderr io.Writer) wire.DialOptions {
	opts := wire.DialOptions{HTTPClient: hc, Stderr: stderr}
	if stderr != nil {
		opts.NonJSON = func(line []byte) { stderr.Write(append(line, '\n')) }
	}
	return opts
}

// dialHost connects to an agent host and runs initialize in the design
// dialect, or in the published one when the host supports no design version
// (-32005).
func DialHost(ctx context.Context, target string, hc *http.Client, stderr io.Writer) (*HostConn, error) {
	conn, err := wire.DialTarget(ctx, target, hostDialOptions(hc, stderr))
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
	d := res.Dialect()
	if res.IsACPAgent() {
		d = wire.DialectACP
	}
	return &HostConn{Client: client, Dialect: d, Init: res, Reqs: res.Requirements()}, nil
}

// authenticate sends token for r and records the host's answer in res; a
// failure to talk to the host is the error.
func (hc *HostConn) Authenticate(ctx context.Context, r wire.Requirement, token string, res *SchemeResult) error {
	return hc.authenticate(ctx, r, token, nil, res)
}

// authenticate is Authenticate with the stored credential c the token
// comes from (nil for a token from stdin), which names its account to an
// AHP 1.x host that takes auth/revoked.
func (hc *HostConn) authenticate(ctx context.Context, r wire.Requirement, token string, c *store.Credential, res *SchemeResult) error {
	var err error
	if hc.Dialect == wire.DialectPublished && (hc.Init.ClientBrokered() || hc.Init.TakesRevocation()) {
		err = hc.authenticateAccount(ctx, r, token, c)
	} else {
		err = wire.Authenticate(ctx, hc.Client, hc.Dialect, r, token)
	}
	var rpc *wire.Error
	switch {
	case err == nil:
		res.accept(nil)
	case errors.Is(err, wire.ErrTokenNotAccepted):
		res.refuse(ResultNotAccepted, "the host did not accept the token")
	case errors.As(err, &rpc) && rpc.Code == wire.CodeAuthRequired:
		ch := challengeFor(rpc, r)
		res.refuse(ch.Error, ch.ErrorDescription)
	default:
		return fmt.Errorf("cannot authenticate %s: %w", res.Name(), err)
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
func (hc *HostConn) AuthenticateStored(ctx context.Context, cs *Credentials, target string, r wire.Requirement, c *store.Credential, force bool, res *SchemeResult) (*store.Credential, error) {
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
	if err := hc.authenticate(ctx, r, cur.AccessToken, cur, res); err != nil {
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
		if err := hc.authenticate(ctx, r, cur.AccessToken, cur, res); err != nil {
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
func refusal(err error, res *SchemeResult) error {
	var ae *AuthError
	if !errors.As(err, &ae) {
		return err
	}
	code := ResultLoginRequired
	if errors.As(err, new(*crossOriginError)) {
		code = ResultCrossOrigin
	}
	res.refuse(code, ae.Err.Error())
	return nil
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
// its scheme id or, when the host names no scheme id (a shipped AHP host,
// whose requirements only their resources tell apart), its resource.
func CredentialFor(creds []*store.Credential, target string, r wire.Requirement) *store.Credential {
	// In order of preference: logged in through this target for this
	// scheme (without a scheme id: this resource); logged in elsewhere for the same (resource, issuer, scheme);
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
			func(c *store.Credential) bool {
				return c.Target == target && c.SchemeID == r.SchemeID && (r.SchemeID != "" || c.Resource == r.Resource)
			},
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
func LoggedInThrough(creds []*store.Credential, target string) []*store.Credential {
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
func SelectRequirements(reqs []wire.Requirement, schemeID string, single bool) ([]wire.Requirement, error) {
	if single || schemeID != "" {
		r, err := PickRequirement(reqs, schemeID)
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
func AuthFailure(target string, declared []wire.Requirement, results []SchemeResult) *AuthError {
	var failed []string
	var crossOrigin *SchemeResult
	for i, r := range results {
		if r.Required && !r.Accepted {
			failed = append(failed, r.Name())
			if r.Error == ResultCrossOrigin {
				crossOrigin = &results[i]
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	id := ""
	if len(failed) == 1 {
		id = SchemeHint(declared, failed[0])
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
	return &AuthError{Err: err, Hint: LoginCommand(target, id)}
}

// schemeHint is the --scheme value a login hint needs: id when the host
// declares several schemes, else none.
func SchemeHint(declared []wire.Requirement, id string) string {
	if len(declared) > 1 {
		return id
	}
	return ""
}
