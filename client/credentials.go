package client

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// RefreshLeeway is how long an access token must stay valid to be used as
// is: one expiring sooner is refreshed first. A short-lived token gets
// less (leeway).
const RefreshLeeway = 60 * time.Second

// leewayShare is the part of a token's lifetime leeway allows at most.
const leewayShare = 3

// leeway is how long c's access token must stay valid to be used as is:
// the lesser of RefreshLeeway and a third of its lifetime (from when it was
// obtained, or for older stores stored, to its expiry), so that a token
// living 5 s is not "expiring soon" from the start and refreshed by every
// process that reads it.
func leeway(c *store.Credential) time.Duration {
	from := c.Obtained
	if from.IsZero() {
		from = c.UpdatedAt
	}
	if from.IsZero() || !c.Expiry.After(from) {
		return RefreshLeeway
	}
	return min(RefreshLeeway, c.Expiry.Sub(from)/leewayShare)
}

// Credentials is the one place the client gets tokens from (call,
// authenticate, token, status TARGET): it reads the store, refreshes a token
// about to expire (serialised by the store lock, rotation-safe, resource
// sent) and never logs in by itself: a credential it cannot make usable is
// an *AuthError whose hint is the login command to run.
type Credentials struct {
	Store      store.Store
	HTTPClient *http.Client
	Now        func() time.Time
	Logger     *slog.Logger
	// UI is told when a credential has to go to the file store (nil: not
	// told).
	UI UI
	// Fallback opens the file store for that case (nil: no fallback).
	Fallback func() (store.Store, error)
}

// ForTargetOrHost is ForTarget for HTTP targets. For an agent host
// (ws, wss, stdio) it lists every stored credential: which one fits a
// declared requirement is known only after initialize, by resource,
// issuer and scheme (credentialFor), so a token obtained through the
// host's HTTP face serves its WebSocket face too.
func (cs *Credentials) ForTargetOrHost(ctx context.Context, target, schemeID string) ([]*store.Credential, error) {
	if IsHTTPTarget(target) {
		return cs.ForTarget(ctx, target, schemeID)
	}
	all, err := cs.Store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the credential store: %w", err)
	}
	return all, nil
}

// ForTarget lists the stored credentials for target: those logged in
// through it (Credential.Target) or whose resource it is, both compared
// after NormalizeTarget, filtered by schemeID when not empty. For an agent
// host (ws://, wss://) with none of its own, the credentials of its HTTP
// face, the resource on its own origin (login http://H/mcp serves
// ws://H), are found too. It makes no network request.
func (cs *Credentials) ForTarget(ctx context.Context, target, schemeID string) ([]*store.Credential, error) {
	all, err := cs.Store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the credential store: %w", err)
	}
	norm := NormalizeTarget(target)
	var out, sameOrigin []*store.Credential
	for _, c := range all {
		if schemeID != "" && c.SchemeID != schemeID {
			continue
		}
		switch {
		case NormalizeTarget(c.Target) == norm || NormalizeTarget(c.Resource) == norm:
			out = append(out, c)
		case !IsHTTPTarget(target) && wire.Origin(target) != "" && wire.SameOrigin(target, c.Resource):
			sameOrigin = append(sameOrigin, c)
		}
	}
	if len(out) == 0 {
		out = sameOrigin
	}
	return out, nil
}

// otherLoopbackName is target with localhost written 127.0.0.1 or the
// other way round ("" when its host is neither): the same server, but
// another origin, so a credential of one is not used for the other
// unasked; a lookup that found nothing names it.
func otherLoopbackName(target string) string {
	for _, pair := range [][2]string{{"//localhost", "//127.0.0.1"}, {"//127.0.0.1", "//localhost"}} {
		if i := strings.Index(target, pair[0]); i >= 0 {
			rest := target[i+len(pair[0]):]
			if rest == "" || rest[0] == ':' || rest[0] == '/' {
				return target[:i] + pair[1] + rest
			}
		}
	}
	return ""
}

// Usable returns the credential for key with an access token valid for at
// least RefreshLeeway, refreshing it first when needed (RFC 6749 §6). The
// refresh runs under store.Lock(key) and re-reads the credential once the
// lock is held, so when several processes race only the first refreshes and
// the others use its result: a rotated refresh token is never sent twice.
// No credential, no refresh token or a refused refresh is an *AuthError
// whose hint logs in to target.
func (cs *Credentials) Usable(ctx context.Context, key store.Key, target string) (*store.Credential, error) {
	c, err := cs.usable(ctx, key, target)
	if err == nil {
		bindDPoP(cs.HTTPClient, c)
	}
	return c, err
}

func (cs *Credentials) usable(ctx context.Context, key store.Key, target string) (*store.Credential, error) {
	c, err := cs.get(ctx, key, target)
	if err != nil || cs.fresh(c) {
		return c, err
	}
	unlock, err := cs.Store.Lock(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("cannot lock the credential for refresh: %w", err)
	}
	defer unlock()
	if c, err = cs.get(ctx, key, target); err != nil || cs.fresh(c) {
		return c, err
	}
	next, err := cs.refresh(ctx, c, target)
	if err != nil && c.Rejected == "" && c.AccessToken != "" && c.Expiry.After(cs.Now()) {
		// The issuer is down, or refused the refresh; the token still
		// works for a while: use it, and say so.
		if cs.UI != nil {
			cs.UI.Warn(fmt.Sprintf("%s; using the current access token, valid for %s more", err, RoughDuration(c.Expiry.Sub(cs.Now()))))
		}
		return c, nil
	}
	return next, err
}

// Refresh forces one refresh of a credential whose access token a server
// refused (invalid_token), unless the stored access token already differs
// from stale's: another process refreshed it meanwhile, and that one is
// returned.
func (cs *Credentials) Refresh(ctx context.Context, stale *store.Credential, target string) (*store.Credential, error) {
	unlock, err := cs.Store.Lock(ctx, stale.Key)
	if err != nil {
		return nil, fmt.Errorf("cannot lock the credential for refresh: %w", err)
	}
	defer unlock()
	c, err := cs.get(ctx, stale.Key, target)
	if err != nil {
		return nil, err
	}
	if c.AccessToken != stale.AccessToken {
		bindDPoP(cs.HTTPClient, c)
		return c, nil
	}
	if c.RefreshToken == "" && !renewable(c) && cs.fresh(c) {
		// Refused before its expiry: "expired" would be untrue.
		left := ""
		if !c.Expiry.IsZero() {
			left = ", which expires in " + RoughDuration(c.Expiry.Sub(cs.Now())) + ","
		}
		return nil, &AuthError{Err: fmt.Errorf("the server refused the access token for %s%s and there is no refresh token to get another",
			DescribeKey(c.Key), left), Hint: LoginCommand(target, c.SchemeID)}
	}
	if c, err = cs.refresh(ctx, c, target); err == nil {
		bindDPoP(cs.HTTPClient, c)
	}
	return c, err
}

// get reads the credential for key, to be used for target: one that
// target may not receive (mayReceive) is an *AuthError, before anything is
// refreshed or sent.
func (cs *Credentials) get(ctx context.Context, key store.Key, target string) (*store.Credential, error) {
	c, err := cs.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &AuthError{Err: fmt.Errorf("no stored credential for %s", DescribeKey(key)), Hint: LoginCommand(target, key.SchemeID)}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the credential for %s: %w", DescribeKey(key), err)
	}
	if !mayReceive(c, target) {
		return nil, newCrossOriginError(target, c.Resource, key.SchemeID)
	}
	if c.Rejected != "" {
		return nil, &AuthError{Err: fmt.Errorf("the authorization server rejected the credential for %s (%s): log in again", DescribeKey(key), c.Rejected),
			Hint: LoginCommand(target, key.SchemeID)}
	}
	return c, nil
}

// mayReceive is the binding rule: a stored credential's token goes only to
// a target on its resource's own origin (wire.Origin: ws and http, wss and
// https of one host and port are one server; RFC 8707 §2 audience, MCP
// security best practices "token passthrough"), or to a target the user
// allowed explicitly when logging in (login --allow-resource). A host's own
// word that it serves a resource is never enough: any host can declare any
// resource.
func mayReceive(c *store.Credential, target string) bool {
	return wire.SameOrigin(target, c.Resource) || slices.Contains(c.AllowedTargets, allowedTarget(target))
}

// receivable narrows creds to those target may receive.
func receivable(creds []*store.Credential, target string) []*store.Credential {
	var out []*store.Credential
	for _, c := range creds {
		if mayReceive(c, target) {
			out = append(out, c)
		}
	}
	return out
}

// allowedTarget is how a target is recorded in Credential.AllowedTargets:
// its origin, or the whole target for stdio: (which has none).
func allowedTarget(target string) string {
	if o := wire.Origin(target); o != "" {
		return o
	}
	return target
}

// crossOriginError refuses to hand a token for Resource to Target, a
// host on another origin that the user never allowed.
type crossOriginError struct {
	Target, Resource, SchemeID string
}

// newCrossOriginError is the *AuthError for a credential that target may
// not receive; its hint is the login that allows it explicitly.
func newCrossOriginError(target, resource, schemeID string) *AuthError {
	e := &crossOriginError{Target: target, Resource: resource, SchemeID: schemeID}
	return &AuthError{Err: e, Hint: allowResourceLogin(target, schemeID, resource)}
}

func (e *crossOriginError) Error() string {
	where := wire.Origin(e.Target)
	if where == "" {
		where = "a local program"
	}
	return fmt.Sprintf("%s declares resource %s, which is on another origin (%s) than the host (%s): "+
		"agentauth does not send a token issued for one server to another, since the host could replay it there",
		wire.RedactTarget(e.Target), e.Resource, cmp.Or(wire.Origin(e.Resource), e.Resource), where)
}

// renewable says whether c's grant is run again instead of refreshed:
// client credentials (RFC 6749 §4.4.3), a JWT bearer assertion, an
// enterprise-managed one.
func renewable(c *store.Credential) bool {
	return c.Grant == wire.GrantClientCredentials || c.Grant == flows.GrantJWTBearer || c.Grant == GrantEnterprise
}

// fresh reports whether c's access token stays valid for leeway(c). A
// token without a known expiry is used as is: the server will say.
func (cs *Credentials) fresh(c *store.Credential) bool {
	return c.AccessToken != "" && (c.Expiry.IsZero() || c.Expiry.Sub(cs.Now()) >= leeway(c))
}

// refresh runs the refresh token grant for c (the caller holds the lock)
// and stores the result.
func (cs *Credentials) refresh(ctx context.Context, c *store.Credential, target string) (*store.Credential, error) {
	hint := LoginCommand(target, c.SchemeID)
	if renewable(c) {
		return cs.renew(ctx, c, hint)
	}
	if c.RefreshToken == "" {
		return nil, &AuthError{Err: fmt.Errorf("the access token for %s has expired and there is no refresh token", DescribeKey(c.Key)), Hint: hint}
	}
	resource := c.Resource
	if c.NoResource {
		resource = ""
	}
	cs.Logger.Debug("refreshing the access token", "resource", c.Resource, "issuer", c.Issuer, "scheme", c.SchemeID)
	tok, err := flows.Refresh(ctx, cs.HTTPClient, flows.RefreshRequest{
		TokenEndpoint: c.TokenEndpoint,
		Client:        withDPoP(clientOf(c.Client), c),
		RefreshToken:  c.RefreshToken,
		Resource:      resource,
		Scopes:        c.Scopes,
	})
	var oe *wire.OAuthError
	switch {
	case err == nil:
	case errors.Is(err, flows.ErrInvalidClient):
		// The server forgot the client (a restarted development server,
		// a deleted registration): the next login must not reuse it.
		rejected := *c
		rejected.Client.Rejected = true
		rejected.Rejected = "invalid_client"
		if perr := cs.Store.Put(ctx, &rejected); perr != nil {
			cs.Logger.Debug("cannot mark the rejected client", "issuer", c.Issuer, "err", perr)
		}
		if perr := store.MarkRejected(ctx, cs.Store, c.Issuer, c.Client.ClientID); perr != nil {
			cs.Logger.Debug("cannot mark the rejected client registration", "issuer", c.Issuer, "err", perr)
		}
		return nil, &AuthError{Err: fmt.Errorf("cannot refresh the token for %s: %w", DescribeKey(c.Key), err), Hint: hint}
	case errors.Is(err, flows.ErrInvalidGrant), errors.As(err, &oe):
		// The refresh token is dead (RFC 6749 §5.2): mark the credential,
		// so that status shows it and no command offers its token again.
		rejected := *c
		rejected.Rejected = "invalid_grant"
		if oe != nil && oe.Code != "" {
			rejected.Rejected = oe.Code
		}
		if perr := cs.Store.Put(ctx, &rejected); perr != nil {
			cs.Logger.Debug("cannot mark the rejected credential", "resource", c.Resource, "err", perr)
		}
		return nil, &AuthError{Err: fmt.Errorf("cannot refresh the token for %s: %w", DescribeKey(c.Key), err), Hint: hint}
	default:
		return nil, fmt.Errorf("cannot refresh the token for %s: %w", DescribeKey(c.Key), err)
	}
	return cs.saveToken(ctx, c, tok)
}

// saveToken stores c with the token tok of a refresh or a renewal.
func (cs *Credentials) saveToken(ctx context.Context, c *store.Credential, tok *flows.Token) (*store.Credential, error) {
	next := *c
	next.AccessToken, next.RefreshToken, next.TokenType = tok.AccessToken, tok.RefreshToken, tok.TokenType
	next.Expiry, next.Scopes, next.Obtained = tok.Expiry, tok.Scopes, cs.Now()
	next.RefreshExpiry = tok.RefreshExpiry
	if sub := TokenSubject(tok.AccessToken); sub != "" {
		next.Subject = sub
	}
	if err := cs.Save(ctx, &next); err != nil {
		return nil, err
	}
	cs.Logger.Debug("access token refreshed", "resource", c.Resource, "expiry", next.Expiry)
	return &next, nil
}

// save stores c; when the keyring refuses it, c goes to the file store with
// a loud warning rather than being lost (its refresh token may be the only
// valid one left).
func (cs *Credentials) Save(ctx context.Context, c *store.Credential) error {
	err := cs.Store.Put(ctx, c)
	if err == nil {
		return nil
	}
	if cs.Fallback == nil {
		return fmt.Errorf("cannot store the credential for %s: %w", DescribeKey(c.Key), err)
	}
	fs, ferr := cs.Fallback()
	if ferr == nil {
		ferr = fs.Put(ctx, c)
	}
	if ferr != nil {
		return fmt.Errorf("cannot store the credential for %s: %w (and the file store failed too: %w)", DescribeKey(c.Key), err, ferr)
	}
	if cs.UI != nil {
		cs.UI.StoredInFile(err, fs.Location())
	}
	return nil
}

// clientOf is the flows view of a stored client registration.
func clientOf(r store.ClientRegistration) flows.Client {
	return flows.Client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.AuthMethod, PrivateKey: r.PrivateKey}
}

// DescribeKey names a credential for messages: its resource, and its
// scheme when it has one.
func DescribeKey(k store.Key) string {
	if k.SchemeID != "" {
		return fmt.Sprintf("%s (scheme %s)", k.Resource, k.SchemeID)
	}
	return k.Resource
}

// TokenSubject returns the sub claim of a JWT access token (RFC 9068 §2.2),
// decoded for display only (the signature is not checked: agentauth is not
// the token's audience), or "" for an opaque token.
func TokenSubject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// otherStoreNote is a line for a "nothing stored" error when the file
// store was chosen and the keyring (by its index) holds credentials: they
// may be the ones the user means. (The keyring store searches the file
// store too, so the other way round needs no note.)
func otherStoreNote(st store.Store) string {
	if st == nil || st.Kind() != store.KindFile {
		return ""
	}
	dir, err := store.ConfigDir()
	if err != nil {
		return ""
	}
	if other, n := store.OtherHolds(store.KindFile, dir); n > 0 {
		return fmt.Sprintf("\nThe %s store holds %d credential(s): add --store %s if you logged in there.", other, n, other)
	}
	return ""
}

// tokenExpiry is a JWT access token's exp, unverified (for display and
// for refreshing in time only); zero for an opaque token.
func tokenExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}

// Token returns a usable access token for target (Pick, then Usable):
// the token command.
func (cl *Client) Token(ctx context.Context, target, schemeID string) (string, error) {
	c, err := cl.TokenCredential(ctx, target, schemeID)
	if err != nil {
		return "", err
	}
	return c.AccessToken, nil
}

// TokenCredential is Token's credential, so that the caller can say whose
// login it is (LoggedInElsewhere).
func (cl *Client) TokenCredential(ctx context.Context, target, schemeID string) (*store.Credential, error) {
	cs, err := cl.Credentials()
	if err != nil {
		return nil, err
	}
	key, err := cs.Pick(ctx, target, schemeID)
	if err != nil {
		return nil, err
	}
	return cs.Usable(ctx, key, target)
}

// LoggedInElsewhere is the target c was logged in through when that is not
// target: an agent host with no login of its own uses the login of its
// HTTP face, the resource on its own origin (ForTarget); "" otherwise.
func LoggedInElsewhere(c *store.Credential, target string) string {
	through := cmp.Or(c.Target, c.Resource)
	if NormalizeTarget(through) == NormalizeTarget(target) || c.Resource == target {
		return ""
	}
	return through
}

// Pick finds the one stored credential for target (and schemeID):
// none is an *AuthError with the login command; several schemes need
// --scheme; several issuers for one scheme: the latest login wins.
func (cs *Credentials) Pick(ctx context.Context, target, schemeID string) (store.Key, error) {
	creds, err := cs.ForTarget(ctx, target, schemeID)
	if err != nil {
		return store.Key{}, err
	}
	if len(creds) == 0 {
		what := target
		if schemeID != "" {
			what += " (scheme " + schemeID + ")"
		}
		if other := otherLoopbackName(target); other != "" {
			if alt, _ := cs.ForTarget(ctx, other, schemeID); len(alt) > 0 {
				return store.Key{}, &AuthError{Err: fmt.Errorf("no stored credential for %s, but there is one for %s: localhost and 127.0.0.1 are different origins: use the target you logged in to, or --loopback-ip to write localhost as 127.0.0.1", wire.RedactTarget(what), wire.RedactTarget(other)),
					Hint: LoginCommand(target, schemeID)}
			}
		}
		return store.Key{}, &AuthError{Err: fmt.Errorf("no stored credential for %s%s", wire.RedactTarget(what), otherStoreNote(cs.Store)), Hint: LoginHintFor(target, schemeID)}
	}
	// Credentials target may receive come first (a refused one is kept
	// only so that using it says why); then logins made through target
	// itself, before those of another target with the same resource (a
	// ws:// host and its /mcp face).
	if ok := receivable(creds, target); len(ok) > 0 {
		creds = ok
	}
	creds = LoggedInThrough(creds, target)
	best := creds[0]
	var schemes []string
	for _, c := range creds {
		if id := cmp.Or(c.SchemeID, "(no scheme)"); !slices.Contains(schemes, id) {
			schemes = append(schemes, id)
		}
		if c.UpdatedAt.After(best.UpdatedAt) {
			best = c
		}
	}
	if len(schemes) > 1 {
		return store.Key{}, Usagef("%s has credentials for several schemes (%s): choose one with --scheme",
			wire.RedactTarget(target), strings.Join(schemes, ", "))
	}
	return best.Key, nil
}
