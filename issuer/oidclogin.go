package issuer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// LoginOptions make the issuer sign users in at an OpenID Provider (OpenID
// Connect Core 1.0, the authorization code flow with PKCE and a nonce)
// instead of the development "Sign in as" box.
type LoginOptions struct {
	// Issuer is the provider's issuer identifier; its metadata is read
	// from Issuer + "/.well-known/openid-configuration" (OIDC Discovery
	// §4). https, or http on a loopback host.
	Issuer       string
	ClientID     string
	ClientSecret string
	// Scopes asked for; openid is always added. Default openid email profile.
	Scopes []string
	// SubjectClaim names the ID token claim that becomes the subject of
	// serve's tokens; empty means "ISSUER#SUB" (the provider's iss, "#",
	// its sub: unique across providers, as iss cannot hold a "#"). With
	// "email", email_verified must be true.
	SubjectClaim string
	// GroupsClaim names the claim listing the user's groups, for
	// AllowGroups; default "groups".
	GroupsClaim string
	// The allow-lists: with none, every user the provider signs in is let
	// in; with any, a user must match one entry of one list. AllowUsers
	// holds subjects (as serve names them) or verified e-mail addresses,
	// AllowEmailDomains the domains of verified e-mail addresses,
	// AllowGroups group names.
	AllowUsers        []string
	AllowEmailDomains []string
	AllowGroups       []string
	// HTTPClient reaches the provider; default a client with a 30s timeout.
	HTTPClient *http.Client
}

// DefaultLoginScopes are asked for when LoginOptions.Scopes is empty.
var DefaultLoginScopes = []string{"openid", "email", "profile"}

const (
	pathLogin         = "/login"
	pathLoginCallback = "/login/callback"
	pathLogout        = "/logout"
	// kindLogin holds the logins under way at the provider, by the hash
	// of their state.
	kindLogin state.Kind = "login"
	// loginCookiePrefix names the cookie that binds a login under way to
	// the browser that started it: one per login (loginCookie), so that two
	// tabs signing in at once do not clobber each other.
	loginCookiePrefix = "agentauth_login_"
	// loginTTL bounds a login under way at the provider.
	loginTTL = 10 * time.Minute
	// maxProviderDocument bounds the provider's metadata, JWKS and token
	// responses.
	maxProviderDocument = 1 << 20
	// jwksRefetchEvery bounds how often an unknown kid refetches the JWKS.
	jwksRefetchEvery = time.Minute
	// loginDiscoveryTimeout bounds the provider's discovery at start.
	loginDiscoveryTimeout = 15 * time.Second
)

// loginRecord is a login under way at the provider.
type loginRecord struct {
	Verifier string    `json:"verifier"`
	Nonce    string    `json:"nonce"`
	ReturnTo string    `json:"return_to"`
	Binding  string    `json:"binding"` // SHA-256 of the login's cookie
	Expires  time.Time `json:"expires"`
}

// providerMetadata is the part of the OpenID Provider metadata (OIDC
// Discovery §3) the login reads.
type providerMetadata struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	UserinfoEndpoint      string   `json:"userinfo_endpoint"`
	AuthMethods           []string `json:"token_endpoint_auth_methods_supported"`
}

// oidcLogin is the issuer's client of the OpenID Provider.
type oidcLogin struct {
	opts LoginOptions
	meta providerMetadata
	hc   *http.Client

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	keysFetch time.Time
}

// newOIDCLogin checks opts and discovers the provider.
func newOIDCLogin(ctx context.Context, opts LoginOptions) (*oidcLogin, error) {
	if opts.ClientID == "" || opts.ClientSecret == "" {
		return nil, errors.New("cannot use the login provider: clientId and a client secret are required")
	}
	if err := checkProviderURL(opts.Issuer); err != nil {
		return nil, fmt.Errorf("cannot use the login provider: issuer: %w", err)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if !slices.Contains(opts.Scopes, "openid") {
		if len(opts.Scopes) == 0 {
			opts.Scopes = slices.Clone(DefaultLoginScopes)
		} else {
			opts.Scopes = append([]string{"openid"}, opts.Scopes...)
		}
	}
	if opts.GroupsClaim == "" {
		opts.GroupsClaim = "groups"
	}
	l := &oidcLogin{opts: opts, hc: opts.HTTPClient}
	ctx, cancel := context.WithTimeout(ctx, loginDiscoveryTimeout)
	defer cancel()
	// OIDC Discovery §4.1: the issuer with any trailing "/" removed, then
	// the well-known path.
	doc := strings.TrimSuffix(opts.Issuer, "/") + "/.well-known/openid-configuration"
	if err := l.getJSON(ctx, doc, &l.meta); err != nil {
		return nil, fmt.Errorf("cannot discover the login provider %s: %w", opts.Issuer, err)
	}
	if !sameIssuer(l.meta.Issuer, opts.Issuer) {
		return nil, fmt.Errorf("cannot use the login provider: its metadata names issuer %q, not %q (OpenID Connect Discovery §4.3)", l.meta.Issuer, opts.Issuer)
	}
	for name, u := range map[string]string{"authorization_endpoint": l.meta.AuthorizationEndpoint, "token_endpoint": l.meta.TokenEndpoint, "jwks_uri": l.meta.JWKSURI} {
		if err := checkProviderURL(u); err != nil {
			return nil, fmt.Errorf("cannot use the login provider: %s: %w", name, err)
		}
	}
	if l.meta.UserinfoEndpoint != "" {
		if err := checkProviderURL(l.meta.UserinfoEndpoint); err != nil {
			return nil, fmt.Errorf("cannot use the login provider: userinfo_endpoint: %w", err)
		}
	}
	if _, err := l.fetchKeys(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// sameIssuer compares the issuer a provider's metadata names with the one
// configured (OIDC Discovery §4.3: they must be identical), after RFC 3986
// §6.2.2 and §6.2.3 normalisation: case of scheme and host, the default
// port, and an empty path being "/" — so a configured
// "https://id.example" matches a provider whose issuer is
// "https://id.example/" and the other way round. The ID tokens' iss is
// then compared with the metadata's value exactly.
func sameIssuer(a, b string) bool {
	norm := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		if p := u.Port(); u.Scheme == "https" && p == "443" || u.Scheme == "http" && p == "80" {
			u.Host = u.Hostname()
		}
		if u.Path == "" {
			u.Path = "/"
		}
		return u.String()
	}
	return a != "" && norm(a) == norm(b)
}

// checkProviderURL accepts an https URL, or http on a loopback host.
func checkProviderURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%q must use https (http is allowed on loopback only)", raw)
}

// getJSON GETs a provider document into v, at most maxProviderDocument.
func (l *oidcLogin) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderDocument+1))
	if err != nil {
		return err
	}
	if len(body) > maxProviderDocument {
		return fmt.Errorf("GET %s: the document is over %d bytes", u, maxProviderDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// fetchKeys reads the provider's JWKS.
func (l *oidcLogin) fetchKeys(ctx context.Context) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := l.getJSON(ctx, l.meta.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("cannot read the login provider's keys: %w", err)
	}
	l.mu.Lock()
	l.keys, l.keysFetch = &set, time.Now()
	l.mu.Unlock()
	return &set, nil
}

// validate validates an ID token, fetching the JWKS again (at most every
// jwksRefetchEvery) when no known key verifies it: the provider may have
// rotated its keys.
func (l *oidcLogin) validate(ctx context.Context, raw, nonce string, now time.Time) (*idTokenClaims, error) {
	l.mu.Lock()
	keys, fetched := l.keys, l.keysFetch
	l.mu.Unlock()
	want := idTokenCheck{Issuer: l.meta.Issuer, ClientID: l.opts.ClientID, Nonce: nonce, Now: now, Keys: keys}
	c, err := validateIDToken(raw, want)
	if errors.Is(err, errUnknownKey) && time.Since(fetched) > jwksRefetchEvery {
		if want.Keys, err = l.fetchKeys(ctx); err != nil {
			return nil, err
		}
		c, err = validateIDToken(raw, want)
	}
	return c, err
}

func (l *oidcLogin) oauth2Config(redirectURI string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader // client_secret_basic, the default (OIDC Core §9)
	if len(l.meta.AuthMethods) > 0 && !slices.Contains(l.meta.AuthMethods, "client_secret_basic") && slices.Contains(l.meta.AuthMethods, "client_secret_post") {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{ClientID: l.opts.ClientID, ClientSecret: l.opts.ClientSecret, RedirectURL: redirectURI, Scopes: l.opts.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: l.meta.AuthorizationEndpoint, TokenURL: l.meta.TokenEndpoint, AuthStyle: style}}
}

// addUserinfo completes the ID token's claims with the UserInfo
// response (OIDC Core §5.3), which many providers send the scope's claims
// in rather than in the ID token: its sub must be the ID token's
// (§5.3.4); it fills only the claims the ID token lacks, and only email,
// email_verified, the groups claim and the subject claim are read.
func (l *oidcLogin) addUserinfo(ctx context.Context, tok *oauth2.Token, c *idTokenClaims) error {
	want := []string{"email", "email_verified", l.opts.GroupsClaim}
	if l.opts.SubjectClaim != "" && l.opts.SubjectClaim != "sub" {
		want = append(want, l.opts.SubjectClaim)
	}
	missing := false
	for _, k := range want {
		if _, ok := c.Extra[k]; !ok {
			missing = true
		}
	}
	if !missing || l.meta.UserinfoEndpoint == "" || tok.AccessToken == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.meta.UserinfoEndpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", l.meta.UserinfoEndpoint, resp.Status)
	}
	var info map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxProviderDocument)).Decode(&info); err != nil {
		return fmt.Errorf("GET %s: %w (a signed UserInfo response is not supported)", l.meta.UserinfoEndpoint, err)
	}
	if sub, _ := info["sub"].(string); sub != c.Subject {
		return errors.New("the UserInfo response is about another sub than the ID token (OIDC Core §5.3.4)")
	}
	if c.Extra == nil {
		c.Extra = map[string]any{}
	}
	for _, k := range want {
		v, ok := info[k]
		if _, have := c.Extra[k]; !ok || have {
			continue
		}
		c.Extra[k] = v
		switch k {
		case "email":
			c.Email, _ = v.(string)
		case "email_verified":
			c.EmailVerified = v
		}
	}
	return nil
}

// subject maps validated claims to the subject of serve's tokens.
func (l *oidcLogin) subject(c *idTokenClaims) (string, error) {
	switch l.opts.SubjectClaim {
	case "":
		return c.Issuer + "#" + c.Subject, nil
	case "sub":
		return c.Subject, nil
	case "email":
		if c.Email == "" || !c.emailVerified() {
			return "", errors.New("the provider sent no verified e-mail address (email_verified), which this server uses as your user name")
		}
		return c.Email, nil
	}
	s, ok := c.Extra[l.opts.SubjectClaim].(string)
	if !ok || s == "" {
		return "", fmt.Errorf("the provider sent no %q claim, which this server uses as your user name", l.opts.SubjectClaim)
	}
	return s, nil
}

// allowed applies the allow-lists to a user signed in as subject.
func (l *oidcLogin) allowed(c *idTokenClaims, subject string) bool {
	o := l.opts
	if len(o.AllowUsers) == 0 && len(o.AllowEmailDomains) == 0 && len(o.AllowGroups) == 0 {
		return true
	}
	if slices.Contains(o.AllowUsers, subject) {
		return true
	}
	if c.Email != "" && c.emailVerified() {
		for _, u := range o.AllowUsers {
			if strings.EqualFold(u, c.Email) {
				return true
			}
		}
		if at := strings.LastIndexByte(c.Email, '@'); at >= 0 {
			for _, d := range o.AllowEmailDomains {
				if strings.EqualFold(strings.TrimPrefix(d, "@"), c.Email[at+1:]) {
					return true
				}
			}
		}
	}
	if groups, ok := c.Extra[o.GroupsClaim].([]any); ok {
		for _, g := range groups {
			if s, ok := g.(string); ok && slices.Contains(o.AllowGroups, s) {
				return true
			}
		}
	}
	return false
}

// serveLogin is GET /login?return_to=PATH: it signs the browser in and
// sends it back to PATH (a path on this origin). With a provider it
// starts the login there; with the development box it shows the "Sign in
// as" form, or, with AutoApprove, signs in as Options.Subject at once.
func (i *Issuer) serveLogin(w http.ResponseWriter, r *http.Request) {
	returnTo := localPath(r.URL.Query().Get("return_to"))
	switch {
	case i.login != nil:
		i.startLogin(w, r, returnTo)
	case i.opts.AutoApprove:
		i.setBrowserSession(w, i.opts.Subject)
		i.loggedIn(w, r, returnTo, i.opts.Subject)
	default:
		i.render(w, http.StatusOK, "login.html", loginPage{Subject: i.opts.Subject, ReturnTo: returnTo})
	}
}

// serveDevLogin is the development box's POST /login: it signs the browser
// in as the name typed, without a password.
func (i *Issuer) serveDevLogin(w http.ResponseWriter, r *http.Request) {
	if i.login != nil {
		i.errorPage(w, http.StatusMethodNotAllowed, "This server signs you in at its login provider.")
		return
	}
	form, ok := i.readPageForm(w, r)
	if !ok {
		return
	}
	subject := strings.TrimSpace(form.Get("subject"))
	if err := checkSubject(subject); err != nil {
		i.errorPage(w, http.StatusBadRequest, "Cannot sign in: "+err.Error()+". Go back and correct it.")
		return
	}
	i.setBrowserSession(w, subject)
	i.log.Info("issuer: signed in", "sub", subject, "via", "dev-login")
	i.loggedIn(w, r, localPath(form.Get("return_to")), subject)
}

// loggedIn sends a browser that just signed in back to returnTo, or shows
// whom it signed in as.
func (i *Issuer) loggedIn(w http.ResponseWriter, r *http.Request, returnTo, subject string) {
	returnTo = localPath(returnTo) // canonical already; a record written by an older serve may not be
	if returnTo == "" {
		i.render(w, http.StatusOK, "message.html", messagePage{Title: "Signed in", Message: "You are signed in as " + subject + "."})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	// returnTo as localPath checked it: http.Redirect would clean it again.
	w.Header().Set("Location", returnTo)
	w.WriteHeader(status)
}

// serveLogout is POST /logout: the browser is signed out of the issuer.
func (i *Issuer) serveLogout(w http.ResponseWriter, r *http.Request) {
	i.clearBrowserSession(w)
	i.render(w, http.StatusOK, "message.html", messagePage{Title: "Signed out", Message: "You are signed out of this server."})
}

// spendLogin deletes the pending sign-in key; spent is false when it was
// gone already (another callback completed it first).
func (i *Issuer) spendLogin(ctx context.Context, key string) (spent bool, err error) {
	err = i.store.Update(ctx, func(tx state.Tx) error {
		rec, err := getRecord[loginRecord](tx, kindLogin, key)
		if err != nil || rec == nil {
			return err
		}
		spent = true
		return tx.Delete(kindLogin, key)
	})
	return spent, err
}

// loginCookie is the name of the cookie of the login with state st.
func loginCookie(st string) string { return loginCookiePrefix + hash(st)[:16] }

// startLogin sends the browser to the provider's authorization endpoint
// (OIDC Core §3.1.2.1) with a state bound to this browser by a cookie, a
// nonce and a PKCE S256 challenge (RFC 7636).
func (i *Issuer) startLogin(w http.ResponseWriter, r *http.Request, returnTo string) {
	st, nonce, binding, verifier := randomToken(), randomToken(), randomToken(), oauth2.GenerateVerifier()
	now := i.clock(r.Context())
	rec := &loginRecord{Verifier: verifier, Nonce: nonce, ReturnTo: returnTo, Binding: hash(binding), Expires: now.Add(loginTTL)}
	err := i.store.Update(r.Context(), func(tx state.Tx) error {
		if err := evictFirst(tx, kindLogin, maxPendingConsents); err != nil {
			return err
		}
		return putRecord(tx, kindLogin, hash(st), rec, rec.Expires)
	})
	if err != nil {
		i.storePage(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie(st), Value: binding, Path: pathLoginCallback, MaxAge: int(loginTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: i.secureCookies()})
	u := i.login.oauth2Config(i.opts.Issuer+pathLoginCallback).AuthCodeURL(st, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("nonce", nonce))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u, http.StatusFound)
}

// serveLoginCallback is the login's redirect URI (OIDC Core §3.1.2.5): it
// checks the state (bound to this browser), exchanges the code with the
// PKCE verifier, validates the ID token (§3.1.3.7), maps it to a subject,
// applies the allow-lists and signs the browser in.
//
// The pending sign-in is spent only once the provider has redeemed the
// code for it: a callback refused before that (another browser, an iss
// that is not the provider's, an error or code the provider did not send)
// leaves it, and the binding cookie, for the owner's real callback, as
// the broker's links are kept. The provider's single-use code and the
// delete in one transaction make it complete at most once.
func (i *Issuer) serveLoginCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := hash(q.Get("state"))
	now := i.clock(r.Context())
	var rec *loginRecord
	err := i.store.View(r.Context(), func(tx state.Tx) error {
		var err error
		rec, err = getRecord[loginRecord](tx, kindLogin, key)
		return err
	})
	if err != nil {
		i.storePage(w, err)
		return
	}
	cookie, _ := r.Cookie(loginCookie(q.Get("state")))
	switch {
	case rec == nil || now.After(rec.Expires):
		i.errorPage(w, http.StatusBadRequest, "This sign-in is unknown, expired or was already completed. Start again from your application.")
		return
	case cookie == nil || hash(cookie.Value) != rec.Binding:
		i.log.Warn("issuer: login refused", "reason", "the login was started in another browser")
		i.errorPage(w, http.StatusBadRequest, "This sign-in was started in another browser. Start again from your application in this browser.")
		return
	}
	if e := q.Get("error"); e != "" {
		i.log.Info("issuer: login refused by the provider", "error", wire.QuoteValue(e))
		i.errorPage(w, http.StatusForbidden, "The login provider answered "+wire.QuoteValue(e)+": you are not signed in.")
		return
	}
	// RFC 9207 §2.4: a provider that sends iss must send its own.
	if iss, ok := q["iss"]; ok && (len(iss) != 1 || iss[0] != i.login.meta.Issuer) {
		i.log.Warn("issuer: login refused", "reason", "iss is not the provider's (RFC 9207)")
		i.errorPage(w, http.StatusBadRequest, "The sign-in answer came from another server than the login provider. You are not signed in.")
		return
	}
	ctx := context.WithValue(r.Context(), oauth2.HTTPClient, i.login.hc)
	tok, err := i.login.oauth2Config(i.opts.Issuer+pathLoginCallback).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(rec.Verifier))
	if err != nil {
		i.log.Warn("issuer: login failed: the provider issued no token", "err", err)
		i.errorPage(w, http.StatusBadGateway, "The login provider did not complete the sign-in. Start again from your application.")
		return
	}
	spent, err := i.spendLogin(r.Context(), key)
	if err != nil {
		i.storePage(w, err)
		return
	}
	if !spent { // another callback completed it first
		i.errorPage(w, http.StatusBadRequest, "This sign-in is unknown, expired or was already completed. Start again from your application.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie(q.Get("state")), Value: "", Path: pathLoginCallback, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: i.secureCookies()})
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		i.log.Warn("issuer: login failed", "reason", "the token response has no id_token")
		i.errorPage(w, http.StatusBadGateway, "The login provider sent no ID token. Check that the openid scope is allowed for this client.")
		return
	}
	claims, err := i.login.validate(r.Context(), raw, rec.Nonce, now)
	if err != nil {
		i.log.Warn("issuer: login refused: invalid ID token", "err", err)
		i.errorPage(w, http.StatusBadGateway, "The login provider's answer did not check out, so you are not signed in. See serve's log.")
		return
	}
	if err := i.login.addUserinfo(r.Context(), tok, claims); err != nil {
		i.log.Warn("issuer: login failed: cannot read the userinfo", "err", err)
		i.errorPage(w, http.StatusBadGateway, "The login provider did not say who you are. Start again from your application.")
		return
	}
	subject, err := i.login.subject(claims)
	if err == nil {
		err = checkSubject(subject)
	}
	if err != nil {
		i.log.Warn("issuer: login refused", "reason", err.Error())
		i.errorPage(w, http.StatusForbidden, "You cannot sign in here: "+err.Error()+".")
		return
	}
	if !i.login.allowed(claims, subject) {
		i.log.Warn("issuer: login refused", "sub", subject, "reason", "not in the allow-lists")
		i.opts.Telemetry.Audit(ops.EventPolicyDenied, "sub", subject, "reason", "not_in_allow_list", "method", "login_provider")
		i.render(w, http.StatusForbidden, "message.html", messagePage{Title: "Not allowed",
			Message: "You signed in at the login provider as " + subject + ", and this server does not let that account in. Ask its administrator to add you to its allow-list, or sign in at the provider as another user."})
		return
	}
	i.setBrowserSession(w, subject)
	i.log.Info("issuer: signed in", "sub", subject, "via", "login provider")
	i.opts.Telemetry.Audit(ops.EventLogin, "sub", subject, "method", "login_provider")
	i.loggedIn(w, r, rec.ReturnTo, subject)
}
