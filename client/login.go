package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Client sources recorded in store.ClientRegistration.Source.
const (
	clientSourceDCR           = "dcr"
	clientSourcePreregistered = "preregistered"
	clientSourceCIMD          = "cimd"
)

// Choices are how the user wants to log in (login's and call --login's
// flags).
type Choices struct {
	// Scopes are added to the chosen scopes (--scope).
	Scopes []string
	// ClientID and ClientSecret name a pre-registered client.
	ClientID, ClientSecret string
	// ClientMetadataURL is a client ID metadata document URL, used as the
	// client_id when the server supports it.
	ClientMetadataURL string
	Device            bool
	NoBrowser         bool
	CallbackHost      string
	CallbackPort      int
	NoResource        bool
	// Timeout bounds the wait for the user (default flows.DefaultLoginTimeout).
	Timeout time.Duration
	// AllowResources lets the target receive tokens for these resources on
	// other origins (login --allow-resource); see mayReceive.
	AllowResources []string
	// Web asks a GitHub host for its web flow rather than its device flow.
	Web bool
	// GitHubHost names a GitHub host (login --github-host): a host name, or
	// a URL (http only to loopback, for a test's fake GitHub).
	GitHubHost string
	// GitHubClientID is the client id for a GitHub host when ClientID is
	// empty ($AGENTAUTH_GITHUB_CLIENT_ID).
	GitHubClientID string
	// Endpoints stand in for the metadata of an authorization server that
	// publishes none (login --authorization-endpoint …).
	Endpoints Endpoints
	// DPoP asks for a token bound to a key of the credential (RFC 9449;
	// login --dpop); the default is a bearer token, which can be copied
	// out (agentauth token).
	DPoP bool
	// dpop is the DPoP key of the login, when the server takes proofs.
	dpop *wire.DPoPKey
	// Token is an access token the user already has (login --with-token,
	// read from stdin): stored as a bearer credential for the requirement
	// without any grant, like gh auth login --with-token. It is not
	// refreshable; its expiry is the JWT's exp when it is a JWT.
	Token string
	// ClientCredentials runs the client credentials grant (RFC 6749 §4.4)
	// with ClientID and ClientSecret or PrivateKey (a PEM key for
	// private_key_jwt, RFC 7523 §2.2): no user, no browser.
	ClientCredentials bool
	PrivateKey        string
	// AssertionSource runs the JWT bearer grant (RFC 7523 §2.1) with the
	// assertion read from it (AssertionFromFile, AssertionFromEnv), again
	// at each renewal.
	AssertionSource string
	// Assertion is an identity assertion given at login (stdin), used
	// instead of AssertionSource and never stored.
	Assertion string
	// IdP, when set, makes the assertion an ID token exchanged at the
	// enterprise IdP for an ID-JAG first (enterprise-managed
	// authorization).
	IdP IdP
	// NoLogin never starts a login or a step-up (SharedAuth, for a
	// program without a person): a refusal the stored credential, once
	// refreshed, cannot answer is returned as it is.
	NoLogin bool
}

// TargetLogin is a login to every requirement of a target (or SchemeID's).
type TargetLogin struct {
	Target   string
	SchemeID string
	Choices
}

// LoginTarget discovers what target needs and logs in to each required
// requirement (or SchemeID's): the login command. The store is checked
// first (UsableStore): nothing is approved, and no token obtained, that
// could not be kept. It returns the stored credentials and the store.
func (cl *Client) LoginTarget(ctx context.Context, req TargetLogin) ([]*store.Credential, store.Store, error) {
	st, err := cl.UsableStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	info, err := Discover(ctx, cl.HTTPClient, cl.Stderr, req.Target)
	if err != nil {
		return nil, nil, err
	}
	defer info.Close()
	for _, w := range info.Warnings {
		cl.UI.Warn(w)
	}
	reqs, err := loginRequirements(info, req.SchemeID)
	if err != nil {
		return nil, nil, err
	}
	if err := checkAllowResources(info, req.AllowResources); err != nil {
		return nil, nil, err
	}
	if req.Token != "" && len(reqs) > 1 {
		var ids []string
		for _, r := range reqs {
			ids = append(ids, r.Name())
		}
		return nil, nil, Usagef("--with-token stores one token: name its scheme with --scheme (%s declares %s)", wire.RedactTarget(req.Target), strings.Join(ids, ", "))
	}
	var out []*store.Credential
	for _, r := range reqs {
		c, err := cl.Login(ctx, LoginRequest{Target: req.Target, Requirement: r, Choices: req.Choices})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, c)
	}
	return out, st, nil
}

// checkAllowResources refuses an --allow-resource that names no resource
// the target declares: a typo must not pass for consent.
func checkAllowResources(info *TargetInfo, allow []string) error {
	for _, a := range allow {
		var declared []string
		for _, r := range info.Requirements {
			if r.Resource == a {
				declared = nil
				break
			}
			declared = append(declared, r.Resource)
		}
		if declared != nil {
			return Usagef("--allow-resource %s: %s declares no such resource (declared: %s)", a, wire.RedactTarget(info.Target), strings.Join(declared, ", "))
		}
	}
	return nil
}

// loginRequirements picks what to log in to: --scheme (a scheme id, or the
// resource of a requirement without one), else every required requirement,
// else (none required) every one.
func loginRequirements(info *TargetInfo, schemeID string) ([]*RequirementInfo, error) {
	if len(info.Requirements) == 0 {
		return nil, fmt.Errorf("cannot log in: %s declares no auth requirement", wire.RedactTarget(info.Target))
	}
	if schemeID != "" {
		var ids []string
		for _, r := range info.Requirements {
			if r.Name() == schemeID {
				return []*RequirementInfo{r}, nil
			}
			ids = append(ids, r.Name())
		}
		return nil, Usagef("%s declares no scheme %q (declared: %s)", wire.RedactTarget(info.Target), schemeID, strings.Join(ids, ", "))
	}
	var out []*RequirementInfo
	for _, r := range info.Requirements {
		if r.Required {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return info.Requirements, nil
	}
	return out, nil
}

// LoginRequest is one login to one discovered requirement. call --login and
// step-up build one with the challenge's scope in Requirement.ChallengeScope.
type LoginRequest struct {
	// Target is what the user named; stored as Credential.Target.
	Target string
	// knownClient: the client was registered in this login (RFC 7591), is
	// a client ID metadata document, or got a token in this call just now
	// (a step-up), so the server knows it and its redirect URIs, and the
	// checks before the browser (flows.AuthCodeRequest.NoPreflight) are
	// skipped. A stored registration gets the token endpoint's check only
	// (flows.AuthCodeRequest.ClientCheckOnly): its redirect URIs are the
	// ones agentauth registered, and only a server that forgot the client
	// refuses it.
	knownClient bool
	storedDCR   bool
	// Requirement must have its AuthServer metadata.
	Requirement *RequirementInfo
	Choices
}

// Login logs in to one requirement: it chooses the scopes (flows.ChooseScopes)
// and the client (chooseClient), runs the authorization code grant with
// PKCE (or the device grant), stores the credential and reports it to the
// UI. It never shows a secret. A GitHub host gets GitHub's own flow
// (gitHubGrant); an authorization server without metadata, the endpoints
// the user gave (legacyMetadata), with a warning.
func (cl *Client) Login(ctx context.Context, req LoginRequest) (*store.Credential, error) {
	r := req.Requirement
	gh, err := gitHubHostFor(r, req.GitHubHost)
	if err != nil {
		return nil, fmt.Errorf("cannot log in to %s: %w", r.Name(), err)
	}
	md := r.AuthServer
	if gh == nil && req.Endpoints.Set() {
		// Wherever discovery found no document (none, one that failed its
		// checks, or only the MCP 2025-03-26 defaults guessed for a server
		// without metadata), the user's endpoints are used, never invented
		// ones; a published document wins over them.
		switch {
		case md == nil && r.Err != nil || md != nil && md.Guessed:
			var warning string
			md, warning = legacyMetadata(r, req.Endpoints)
			if r.Err != nil && !errors.Is(r.Err, flows.ErrNoAuthServerMetadata) {
				// A document that failed its checks: the user's endpoints
				// stand in for it, and the refusal is said first.
				warning = "the authorization server metadata was refused: " + r.Err.Error() + "; using the endpoints given on the command line instead; nothing about this server could be verified (issuer, PKCE support, client authentication)."
			}
			cl.UI.Warn(warning)
		case md != nil:
			cl.UI.Warn(md.Issuer + " publishes its metadata: the endpoints given on the command line are not used.")
		}
	}
	if md == nil && gh == nil && req.Token != "" && len(r.AuthorizationServers) > 0 {
		// A token given by the user needs no endpoint: the issuer names
		// the credential.
		md = &wire.AuthServerMetadata{Issuer: r.AuthorizationServers[0]}
	}
	if md == nil && gh == nil {
		err := r.Err
		if err == nil {
			err = errors.New("no authorization server metadata")
		}
		return nil, fmt.Errorf("cannot log in to %s: %w", r.Name(), err)
	}
	crossOrigin := !wire.SameOrigin(req.Target, r.Resource)
	if crossOrigin && !slices.Contains(req.AllowResources, r.Resource) {
		// Refused before anything is approved: a host names the resource
		// it wants, and could name another server's to have its token.
		return nil, newCrossOriginError(req.Target, r.Resource, r.SchemeID)
	}
	st, err := cl.UsableStore(ctx)
	if err != nil {
		return nil, err
	}
	scopes := flows.ChooseScopes(r.ChallengeScope, r.ScopesSupported, req.Scopes)
	resource := r.Resource
	if req.NoResource {
		resource = ""
	}

	var tok *flows.Token
	var reg *store.ClientRegistration
	var dpopPEM string
	if gh == nil && req.DPoP {
		if req.dpop, dpopPEM, err = wire.NewDPoPKey(); err != nil {
			return nil, err
		}
		if r.DPoP != nil && !*r.DPoP {
			cl.UI.Warn(r.Resource + "'s metadata (RFC 9728) does not advertise DPoP (no dpop_signing_alg_values_supported): it may accept only Bearer tokens, and refuse this DPoP-bound one; if calls are refused, log in again without --dpop.")
		}
	}
	switch {
	case req.Token != "":
		tok = &flows.Token{AccessToken: req.Token, TokenType: "Bearer", Expiry: tokenExpiry(req.Token)}
		reg = &store.ClientRegistration{Source: "with-token"}
	case gh != nil:
		tok, reg, err = cl.gitHubGrant(ctx, req, gh, scopes)
		md = gh.Metadata(r.AuthorizationServers[0])
	case req.ClientCredentials:
		tok, reg, err = cl.clientCredentialsGrant(ctx, md, req, scopes, resource)
	case req.AssertionSource != "" || req.Assertion != "":
		tok, reg, err = cl.jwtBearerGrant(ctx, md, req, scopes, resource)
	default:
		tok, reg, err = cl.standardGrant(ctx, st, md, req, scopes, resource)
	}
	if err != nil {
		return nil, err
	}

	c := &store.Credential{
		Key:                store.Key{Resource: r.Resource, Issuer: md.Issuer, SchemeID: r.SchemeID},
		NoResource:         req.NoResource,
		AccessToken:        tok.AccessToken,
		RefreshToken:       tok.RefreshToken,
		TokenType:          tok.TokenType,
		Expiry:             tok.Expiry,
		RefreshExpiry:      tok.RefreshExpiry,
		Obtained:           cl.Now(),
		Scopes:             tok.Scopes,
		Subject:            TokenSubject(tok.AccessToken),
		Client:             *reg,
		TokenEndpoint:      md.TokenEndpoint,
		RevocationEndpoint: md.RevocationEndpoint,
	}
	switch {
	case req.ClientCredentials:
		c.Grant = wire.GrantClientCredentials
	case req.IdP.TokenEndpoint != "":
		c.Grant, c.AssertionSource = GrantEnterprise, req.AssertionSource
		c.IdPTokenEndpoint, c.IdPClientID = req.IdP.TokenEndpoint, req.IdP.ClientID
	case req.AssertionSource != "":
		c.Grant, c.AssertionSource = flows.GrantJWTBearer, req.AssertionSource
	}
	switch {
	case tok.TokenType == wire.TokenTypeDPoP:
		c.DPoPKey = dpopPEM
	case req.dpop != nil:
		cl.UI.Warn(md.Issuer + " answered a DPoP proof with a bearer token: it does not bind tokens to keys (RFC 9449).")
	}
	if gh != nil {
		c.Provider, c.Subject = ProviderGitHub, cl.gitHubSubject(ctx, gh, tok.AccessToken)
	}
	if req.Target != r.Resource {
		c.Target = req.Target
	}
	if prev, err := st.Get(ctx, c.Key); err == nil {
		c.AllowedTargets = prev.AllowedTargets
	}
	if crossOrigin && !slices.Contains(c.AllowedTargets, allowedTarget(req.Target)) {
		c.AllowedTargets = append(c.AllowedTargets, allowedTarget(req.Target))
	}
	if crossOrigin {
		if dir, err := store.ConfigDir(); err == nil {
			// For hints only (LoginHintFor); a failure costs a hint.
			_ = store.RememberAllowed(dir, allowedTarget(req.Target), r.Resource)
		}
	}
	cs, err := cl.Credentials()
	if err != nil {
		return nil, err
	}
	if err := cs.Save(ctx, c); err != nil {
		return nil, err
	}
	bindDPoP(cl.HTTPClient, c)
	cl.UI.LoggedIn(c)
	return c, nil
}

// standardGrant chooses the client (chooseClient) and runs the grant; a
// stored registration the server rejects is dropped and the client chosen
// again, once. A failed grant is a loginError.
func (cl *Client) standardGrant(ctx context.Context, st store.Store, md *wire.AuthServerMetadata, req LoginRequest, scopes []string, resource string) (*flows.Token, *store.ClientRegistration, error) {
	reg, stored, err := cl.chooseClient(ctx, st, md, req)
	if err != nil {
		return nil, nil, err
	}
	if reg.CallbackPort != 0 && req.CallbackPort == 0 && !req.Device {
		// Registered with the exact redirect URIs of one port.
		req.CallbackPort = reg.CallbackPort
	}
	client := clientOf(*reg)
	client.DPoP = req.dpop
	req.knownClient = req.knownClient || knownClient(reg, stored)
	req.storedDCR = stored && reg.Source == clientSourceDCR
	tok, err := cl.runGrant(ctx, req, md, client, scopes, resource)
	if reg.Source == clientSourceDCR && req.CallbackPort == 0 && !req.Device && redirectURIRefused(err) {
		// The server matches redirect URIs exactly and refused the
		// port-less ones (RFC 8252 §7.3 asks it not to): register once
		// more with the exact URIs of a fixed port, kept with the
		// registration so that later logins listen on it.
		return cl.exactRedirectGrant(ctx, st, md, req, reg, err, scopes, resource)
	}
	if stored && (errors.Is(err, flows.ErrInvalidClient) || reg.Source == clientSourceDCR && redirectURIRefused(err)) {
		// The stored registration is stale (the server forgot it, or it
		// lacks the redirect URI of this --callback-port at a server that
		// matches them exactly): mark it so that no login offers it
		// again, and choose again (registering again), once.
		cl.UI.Warn(fmt.Sprintf("%s no longer accepts the stored client %s; choosing the client again.", md.Issuer, reg.ClientID))
		if err := store.MarkRejected(ctx, st, md.Issuer, reg.ClientID); err != nil {
			return nil, nil, fmt.Errorf("cannot record the rejected client: %w", err)
		}
		if reg, stored, err = cl.chooseClient(ctx, st, md, req); err != nil {
			return nil, nil, err
		}
		client = clientOf(*reg)
		client.DPoP = req.dpop
		req.knownClient = knownClient(reg, stored)
		req.storedDCR = stored && reg.Source == clientSourceDCR
		tok, err = cl.runGrant(ctx, req, md, client, scopes, resource)
	}
	if err != nil {
		if md.Guessed {
			return nil, nil, guessedEndpointError(md, err, req.Target, req.Requirement.SchemeID)
		}
		if errors.Is(err, flows.ErrInvalidClient) && reg.Source == clientSourcePreregistered {
			return nil, nil, fmt.Errorf("cannot log in: %w\nCheck the client ID (--client-id) and its secret: the server knows no such client, or refuses its secret.", err)
		}
		return nil, nil, loginError(err, req.Target, req.Requirement.SchemeID)
	}
	return tok, reg, nil
}

// knownClient reports whether the server knows reg by construction: a
// registration made in this login, or a client ID metadata document.
func knownClient(reg *store.ClientRegistration, stored bool) bool {
	return reg.Source == clientSourceCIMD || reg.Source == clientSourceDCR && !stored
}

// exactRedirectGrant registers a client with the exact redirect URIs of a
// free loopback port after refused, the error of the port-less client
// reg, and runs the grant on that port.
func (cl *Client) exactRedirectGrant(ctx context.Context, st store.Store, md *wire.AuthServerMetadata, req LoginRequest, reg *store.ClientRegistration, refused error, scopes []string, resource string) (*flows.Token, *store.ClientRegistration, error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, nil, loginError(refused, req.Target, req.Requirement.SchemeID)
	}
	cl.UI.Warn(fmt.Sprintf("%s refused the redirect URI (%v): it matches redirect URIs exactly, so agentauth registers http://127.0.0.1:%d/callback and keeps port %d for this server (choose another with --callback-port).", md.Issuer, refused, port, port))
	if err := store.MarkRejected(ctx, st, md.Issuer, reg.ClientID); err != nil {
		return nil, nil, fmt.Errorf("cannot record the rejected client: %w", err)
	}
	unlock, err := st.Lock(ctx, store.RegistrationKey(md.Issuer))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot lock the client registration for %s: %w", md.Issuer, err)
	}
	reg, err = cl.registerClient(ctx, md, req.Device, port)
	if err == nil {
		reg.CallbackPort = port
		if perr := store.PutRegistration(ctx, st, md.Issuer, *reg); perr != nil {
			cl.logger().Warn("cannot store the client registration", "issuer", md.Issuer, "err", perr)
		}
	}
	unlock()
	if err != nil {
		return nil, nil, err
	}
	req.CallbackPort = port
	client := clientOf(*reg)
	client.DPoP = req.dpop
	req.knownClient = true // registered just now
	tok, err := cl.runGrant(ctx, req, md, client, scopes, resource)
	if err != nil {
		return nil, nil, loginError(err, req.Target, req.Requirement.SchemeID)
	}
	return tok, reg, nil
}

// freeLoopbackPort is a port free on 127.0.0.1 now.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ErrDeviceTimeout: the login's timeout passed before the device code was
// approved.
var ErrDeviceTimeout = errors.New("timed out waiting for the device login to be approved")

// loginError makes a failed grant say what to do: a refusal by the user or
// the authorization server is an authentication failure (*AuthError).
func loginError(err error, target, schemeID string) error {
	if errors.Is(err, flows.ErrCallbackPortInUse) {
		return fmt.Errorf("cannot log in: %w\nChoose another --callback-port, or leave it out to listen on a free port.", err)
	}
	err = fmt.Errorf("cannot log in: %w", err)
	if errors.Is(err, flows.ErrAuthorizationRefused) || errors.Is(err, flows.ErrAccessDenied) ||
		errors.Is(err, flows.ErrDeviceCodeExpired) || errors.Is(err, flows.ErrLoginTimeout) || errors.Is(err, ErrDeviceTimeout) || errors.Is(err, flows.ErrInvalidGrant) {
		return &AuthError{Err: err, Hint: LoginCommand(target, schemeID)}
	}
	return err
}

// chooseClient picks the OAuth client, in order: the registration stored
// for this issuer (unless a client ID is given), the given client ID (with
// the stored secret of that client when none is given), a client ID
// metadata document, dynamic registration (RFC 7591; registerOnce). stored
// reports that a stored registration was used.
func (cl *Client) chooseClient(ctx context.Context, st store.Store, md *wire.AuthServerMetadata, req LoginRequest) (reg *store.ClientRegistration, stored bool, err error) {
	prev, found := store.FindRegistration(ctx, st, md.Issuer)
	if found && req.ClientID == "" {
		return prev, true, nil
	}
	switch {
	case req.ClientID != "":
		secret := req.ClientSecret
		if secret == "" && found && prev.ClientID == req.ClientID {
			secret = prev.ClientSecret
		}
		method, err := flows.ChooseAuthMethod(md.TokenEndpointAuthMethodsSupported, secret != "")
		if err != nil {
			return nil, false, fmt.Errorf("cannot use client %s with %s: %w", req.ClientID, md.Issuer, err)
		}
		return &store.ClientRegistration{ClientID: req.ClientID, ClientSecret: secret, AuthMethod: method, Source: clientSourcePreregistered}, false, nil
	case req.ClientMetadataURL != "" && md.ClientIDMetadataDocumentSupported:
		return &store.ClientRegistration{ClientID: req.ClientMetadataURL, AuthMethod: flows.AuthMethodNone, Source: clientSourceCIMD}, false, nil
	case md.RegistrationEndpoint != "":
		return cl.registerOnce(ctx, st, md, req.Device, req.CallbackPort)
	}
	var offers string
	if req.ClientMetadataURL != "" {
		offers = " and does not accept client ID metadata documents"
	}
	return nil, false, fmt.Errorf("cannot log in: %s has no registration endpoint (RFC 7591)%s, so agentauth cannot get a client by itself\n"+
		"Register a client with it and run: agentauth login --client-id ID [--client-secret-stdin] TARGET", md.Issuer, offers)
}

// registerOnce registers a client with md's issuer unless another login
// (in this process or another) did meanwhile: it holds the store lock of
// the issuer's registration record while it checks again, registers and
// records the registration, before any grant runs. So concurrent logins
// register one client, and a login that then fails or is cancelled leaves
// it for the next one. stored reports that another login's was found.
func (cl *Client) registerOnce(ctx context.Context, st store.Store, md *wire.AuthServerMetadata, device bool, callbackPort int) (reg *store.ClientRegistration, stored bool, err error) {
	unlock, err := st.Lock(ctx, store.RegistrationKey(md.Issuer))
	if err != nil {
		return nil, false, fmt.Errorf("cannot lock the client registration for %s: %w", md.Issuer, err)
	}
	defer unlock()
	if prev, found := store.FindRegistration(ctx, st, md.Issuer); found {
		return prev, true, nil
	}
	if reg, err = cl.registerClient(ctx, md, device, callbackPort); err != nil {
		if md.Guessed {
			return nil, false, guessedRegistrationError(md, err)
		}
		return nil, false, err
	}
	if err := store.PutRegistration(ctx, st, md.Issuer, *reg); err != nil {
		// The login goes on: the registration is kept with the credential
		// (or its file-store fallback) when the login succeeds.
		cl.logger().Warn("cannot store the client registration", "issuer", md.Issuer, "err", err)
	}
	return reg, false, nil
}

// registerClient registers agentauth as a public native client with the
// port-less loopback redirect URIs (RFC 8252 §7.3), and with a
// callbackPort (--callback-port) the exact ones of that port first, for a
// server that matches redirect URIs exactly; it asks for the device grant
// too when the server has a device endpoint, so that one registration
// serves both flows.
func (cl *Client) registerClient(ctx context.Context, md *wire.AuthServerMetadata, device bool, callbackPort int) (*store.ClientRegistration, error) {
	var redirects []string
	if callbackPort != 0 {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			redirects = append(redirects, fmt.Sprintf("http://%s:%d/callback", host, callbackPort))
		}
		redirects = append(redirects, flows.LoopbackRedirectURIs...)
	}
	r, err := flows.Register(ctx, cl.HTTPClient, md.RegistrationEndpoint, flows.RegistrationRequest{
		RedirectURIs: redirects,
		Device:       device || md.DeviceAuthorizationEndpoint != "",
	})
	if err != nil {
		return nil, err
	}
	cl.logger().Debug("client registered", "issuer", md.Issuer, "client_id", r.ClientID, "auth_method", r.TokenEndpointAuthMethod)
	return &store.ClientRegistration{ClientID: r.ClientID, ClientSecret: r.ClientSecret, AuthMethod: r.TokenEndpointAuthMethod, Source: clientSourceDCR}, nil
}

// redirectURIRefused reports whether a failed grant is the authorization
// server refusing the redirect URI ("Unregistered redirect_uri",
// "redirect_uri mismatch"; RFC 6749 §4.1.3, §4.1.2.1 invalid_request).
func redirectURIRefused(err error) bool {
	var oe *wire.OAuthError
	var se *flows.HTTPStatusError
	switch {
	case errors.As(err, &oe):
		return strings.Contains(strings.ToLower(oe.Description), "redirect_uri")
	case errors.As(err, &se):
		return strings.Contains(strings.ToLower(se.Detail), "redirect_uri")
	}
	return false
}

// runGrant runs the authorization code grant, or the device grant.
func (cl *Client) runGrant(ctx context.Context, req LoginRequest, md *wire.AuthServerMetadata, client flows.Client, scopes []string, resource string) (*flows.Token, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = flows.DefaultLoginTimeout
	}
	var open func(string) error
	if !req.NoBrowser {
		open = cl.Browser
	}
	if req.Device {
		return cl.waitDevice(ctx, open, timeout, func(ctx context.Context, show func(flows.DeviceCodePrompt)) (*flows.Token, error) {
			return flows.DeviceCode(ctx, cl.HTTPClient, flows.DeviceRequest{Metadata: md, Client: client, Scopes: scopes, Resource: resource, ShowCode: show})
		})
	}
	return flows.AuthorizationCode(ctx, cl.HTTPClient, flows.AuthCodeRequest{
		Metadata: md, Client: client, Scopes: scopes, Resource: resource, NoPreflight: req.knownClient, ClientCheckOnly: req.storedDCR,
		CallbackHost: req.CallbackHost, CallbackPort: req.CallbackPort, Timeout: timeout,
		ShowURL: func(u string) { cl.showAuthURL(u, open, req.NoBrowser, timeout) },
	})
}

// BrowserAlternatives ends a browser login's opener failure: the ways to
// log in without a browser here.
const BrowserAlternatives = "log in with --device instead (approve on any device), or with --no-browser and an SSH tunnel to the callback port (ssh -L PORT:127.0.0.1:PORT, with --callback-port PORT)"

// showAuthURL tries open (nil: no browser to try) on the login URL u first
// and shows u after, so that the output says what happened in order:
// "opened" only once the opener succeeded; after a failure, the warning
// saying why and then the URL to open by hand.
func (cl *Client) showAuthURL(u string, open func(string) error, noBrowser bool, timeout time.Duration) {
	opened := false
	if open != nil {
		if err := open(u); err != nil {
			cl.UI.Warn(err.Error() + "; " + BrowserAlternatives + "; or open the URL below yourself.")
			noBrowser = true
		} else {
			opened = true
		}
	}
	cl.UI.AuthURL(u, opened, noBrowser, timeout)
}

// waitDevice runs a device authorization grant (RFC 8628; run is flows'
// or GitHub's) within timeout: the code shown, the verification URL opened
// like the login URL, then a wait display with the remaining time.
func (cl *Client) waitDevice(ctx context.Context, open func(string) error, timeout time.Duration, run func(context.Context, func(flows.DeviceCodePrompt)) (*flows.Token, error)) (*flows.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := func() {}
	defer func() { stop() }()
	tok, err := run(ctx, func(p flows.DeviceCodePrompt) {
		cl.UI.DeviceCode(p)
		if open != nil {
			u := p.VerificationURIComplete
			if u == "" {
				u = p.VerificationURI
			}
			if err := open(u); err != nil {
				cl.UI.Warn(err.Error() + "; enter the code above at the URL shown, on any device")
			}
		}
		expiry := p.Expiry
		if deadline, _ := ctx.Deadline(); expiry.IsZero() || deadline.Before(expiry) {
			expiry = deadline
		}
		stop = cl.UI.Wait("Waiting for approval", expiry)
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, flows.ErrDeviceCodeExpired) {
		return nil, fmt.Errorf("%w (%s)", ErrDeviceTimeout, ExactDuration(timeout))
	}
	return tok, err
}

// ExactDuration renders a duration the user chose (--timeout) as given,
// whole seconds kept: 80s is "1m20s", 5m is "5m", 1h is "1h".
func ExactDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// RoughDuration renders d for people, rounded down: 45s, 12m, 3h, 2d (0s
// for a negative d). It is the one wording of durations, in messages of
// the core and of the CLI.
func RoughDuration(d time.Duration) string {
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
