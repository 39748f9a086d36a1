package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

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

// LoginOptions are login's inputs.
type LoginOptions struct {
	IO *IOStreams
	// Factory gives the store, the HTTP client, the browser and the clock.
	Factory *Factory

	Target   string
	SchemeID string
	LoginChoices
	// AllowResources are resources on another origin than Target that the
	// user allows Target to receive tokens for (--allow-resource).
	AllowResources []string
	NoResource     bool
	Timeout        time.Duration
	JSON           bool
}

// LoginChoices are how the user wants to log in: the flags that login and
// call --login share.
type LoginChoices struct {
	Scopes            []string
	ClientID          string
	ClientSecretStdin bool
	ClientMetadataURL string
	Device            bool
	NoBrowser         bool
	CallbackHost      string
	CallbackPort      int

	scopes cli.StringSlice // --scope; check copies it into Scopes
}

// loginChoiceFlags declares the shared login flags, writing into ch; prefix
// starts each usage text ("" for login, "with --login, " for call).
func loginChoiceFlags(ch *LoginChoices, prefix string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "scope", Usage: prefix + "also request `SCOPE` (repeatable)", Destination: &ch.scopes},
		&cli.StringFlag{Name: "client-id", Usage: prefix + "use the pre-registered client `ID`", Destination: &ch.ClientID},
		&cli.BoolFlag{Name: "client-secret-stdin", Usage: prefix + "read the pre-registered client's secret from stdin", Destination: &ch.ClientSecretStdin},
		&cli.StringFlag{Name: "client-metadata-url", Usage: prefix + "https `URL` of agentauth's client ID metadata document, used as client_id where the server supports it", Destination: &ch.ClientMetadataURL},
		&cli.BoolFlag{Name: "device", Usage: prefix + "use the device authorization grant (RFC 8628): approve on any device", Destination: &ch.Device},
		&cli.BoolFlag{Name: "no-browser", Usage: prefix + "print the URL instead of opening a browser", Destination: &ch.NoBrowser},
		&cli.StringFlag{Name: "callback-host", Value: "127.0.0.1", Usage: prefix + "redirect URI host: `127.0.0.1` or localhost", Destination: &ch.CallbackHost},
		&cli.IntFlag{Name: "callback-port", Usage: prefix + "listen for the redirect on `PORT`", DefaultText: "a free one", Destination: &ch.CallbackPort},
	}
}

func newLoginCommand(f *Factory) *cli.Command { return loginCommandWith(f, runLogin) }

// loginCommandWith builds the command; run is runLogin except in the flag tests.
func loginCommandWith(f *Factory, run func(context.Context, *LoginOptions) error) *cli.Command {
	opts := &LoginOptions{}
	return &cli.Command{
		Name:      "login",
		Usage:     "log in to a target's authorization server and store the token",
		ArgsUsage: "TARGET",
		Description: `Discovers what TARGET needs (see discover), then runs the authorization code
grant with PKCE over a loopback redirect (http://127.0.0.1:PORT/callback), or
with --device the device authorization grant (RFC 8628), for each required
scheme (or --scheme), and stores the credential keyed by (resource, issuer,
scheme).

Scopes: the challenge's scope, else the resource's scopes_supported, else none;
--scope adds to them. No openid/profile default.

Client: --client-id (a pre-registered client; --client-secret-stdin for a
confidential one), else a registration stored for this issuer, else a
client ID metadata document (--client-metadata-url, when the server
supports it), else dynamic registration (RFC 7591). A stored registration
the server rejects with invalid_client is dropped and registration is done
again, once.

Browser: $BROWSER is run with the URL when set, even without a terminal;
otherwise the platform opener is used only when stdout or stderr is a
terminal; otherwise, or with --no-browser, the URL is printed on stderr. The
device flow opens its verification URL the same way and always prints the
code on stderr.

The keyring (the default store) is checked before anything starts; if it does
not work, login stops and says to use --store file. If the final write fails
anyway, the credential goes to the file store with a warning.

On success one line goes to stderr; --json prints on stdout:
{"target", "logins": [{"resource", "issuer", "schemeId", "subject", "scopes",
 "tokenType", "expiresAt", "refreshable", "client": {"clientId", "authMethod",
 "source"}, "store", "storeLocation"}]} (never a token or secret).`,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "log in to the scheme `ID` only (default: every required scheme)", Destination: &opts.SchemeID},
		}, loginChoiceFlags(&opts.LoginChoices, "")...),
			&cli.StringSliceFlag{Name: "allow-resource", Usage: "let TARGET receive tokens for `URL`, a resource it declares on another origin (repeatable)"},
			&cli.BoolFlag{Name: "no-resource", Usage: "do not send the RFC 8707 resource parameter", Destination: &opts.NoResource},
			&cli.DurationFlag{Name: "timeout", Value: flows.DefaultLoginTimeout, Usage: "give up after `DURATION` without an approval", Destination: &opts.Timeout},
			&cli.BoolFlag{Name: "json", Usage: "print the login details as JSON on stdout", Destination: &opts.JSON},
		),
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			if err := opts.check(c.IsSet("client-id")); err != nil {
				return err
			}
			opts.AllowResources = c.StringSlice("allow-resource")
			for _, r := range opts.AllowResources {
				if wire.Origin(r) == "" {
					return usageErrorf("--allow-resource must be an http(s) URL, not %q", r)
				}
			}
			opts.IO, opts.Factory = f.IO, f
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, opts)
		},
	}
}

// check rejects flag combinations that cannot work.
func (opts *LoginOptions) check(clientIDSet bool) error {
	if opts.Timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	return opts.LoginChoices.check(clientIDSet)
}

// check rejects login choices that cannot work; clientIDSet says whether
// --client-id was given. It also reads --scope into Scopes.
func (ch *LoginChoices) check(clientIDSet bool) error {
	ch.Scopes = ch.scopes.Value()
	switch {
	case clientIDSet && ch.ClientID == "":
		return usageErrorf("--client-id must not be empty")
	case ch.ClientSecretStdin && ch.ClientID == "":
		return usageErrorf("--client-secret-stdin needs --client-id")
	case ch.CallbackHost != "127.0.0.1" && ch.CallbackHost != "localhost":
		return usageErrorf("--callback-host must be 127.0.0.1 or localhost, not %q", ch.CallbackHost)
	case ch.CallbackPort < 0 || ch.CallbackPort > 65535:
		return usageErrorf("--callback-port must be between 1 and 65535")
	case ch.Device && ch.CallbackPort != 0:
		return usageErrorf("--callback-port does not apply to --device")
	}
	for _, s := range ch.Scopes {
		if strings.TrimSpace(s) == "" {
			return usageErrorf("--scope must not be empty")
		}
	}
	if ch.ClientMetadataURL != "" {
		u, err := url.Parse(ch.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" {
			return usageErrorf("--client-metadata-url must be an https URL with a path (a client ID metadata document), not %q", ch.ClientMetadataURL)
		}
	}
	return nil
}

// request is the loginFlow request for requirement r of target, with the
// pre-registered client's secret (read from stdin once per command).
func (ch *LoginChoices) request(target string, r *requirementInfo, secret string) loginRequest {
	return loginRequest{
		Target:            target,
		Requirement:       r,
		ExtraScopes:       ch.Scopes,
		ClientID:          ch.ClientID,
		ClientSecret:      secret,
		ClientMetadataURL: ch.ClientMetadataURL,
		Device:            ch.Device,
		CallbackHost:      ch.CallbackHost,
		CallbackPort:      ch.CallbackPort,
		NoBrowser:         ch.NoBrowser,
	}
}

func runLogin(ctx context.Context, opts *LoginOptions) error {
	f := opts.Factory
	var secret string
	if opts.ClientSecretStdin {
		var err error
		if secret, err = readStdinSecret(opts.IO.In, "--client-secret-stdin", "client secret"); err != nil {
			return err
		}
	}
	// The keyring is checked before discovery: nothing is approved, and no
	// token obtained, that could not be kept.
	st, err := f.usableStore(ctx)
	if err != nil {
		return err
	}
	info, err := discoverTarget(ctx, f.HTTPClient, opts.IO.ErrOut, opts.Target)
	if err != nil {
		return err
	}
	defer info.Close()
	for _, w := range info.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", opts.IO.ErrPainter().Yellow("warning:"), safeText(w))
	}
	reqs, err := loginRequirements(info, opts.SchemeID)
	if err != nil {
		return err
	}
	if err := checkAllowResources(info, opts.AllowResources); err != nil {
		return err
	}
	doc := loginDoc{Target: wire.RedactTarget(opts.Target), Logins: []loginDetails{}}
	for _, r := range reqs {
		req := opts.request(opts.Target, r, secret)
		req.NoResource, req.Timeout, req.AllowResources = opts.NoResource, opts.Timeout, opts.AllowResources
		c, err := loginFlow(ctx, f, req)
		if err != nil {
			return err
		}
		doc.Logins = append(doc.Logins, detailsOf(c, st))
	}
	if opts.JSON {
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return fmt.Errorf("cannot print the login: %w", err)
		}
		fmt.Fprintln(opts.IO.Out, string(b))
	}
	return nil
}

// checkAllowResources refuses an --allow-resource that names no resource
// the target declares: a typo must not pass for consent.
func checkAllowResources(info *targetInfo, allow []string) error {
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
			return usageErrorf("--allow-resource %s: %s declares no such resource (declared: %s)", a, wire.RedactTarget(info.Target), strings.Join(declared, ", "))
		}
	}
	return nil
}

// loginRequirements picks what to log in to: --scheme, else every required
// requirement, else (none required) every one.
func loginRequirements(info *targetInfo, schemeID string) ([]*requirementInfo, error) {
	if len(info.Requirements) == 0 {
		return nil, fmt.Errorf("cannot log in: %s declares no auth requirement", wire.RedactTarget(info.Target))
	}
	if schemeID != "" {
		var ids []string
		for _, r := range info.Requirements {
			if r.SchemeID == schemeID {
				return []*requirementInfo{r}, nil
			}
			ids = append(ids, r.name())
		}
		return nil, usageErrorf("%s declares no scheme %q (declared: %s)", wire.RedactTarget(info.Target), schemeID, strings.Join(ids, ", "))
	}
	var out []*requirementInfo
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

// usableStore returns the store after checking that a login's token could
// be kept: once per process, that the OS keyring works when it is the
// backend (store.ProbeKeyring); every time, that the stored credentials can
// be read (a corrupt credentials file or keyring index would refuse the
// write only after the user approved).
func (f *Factory) usableStore(ctx context.Context) (store.Store, error) {
	st, err := f.Store()
	if err != nil {
		return nil, err
	}
	if st.Kind() == store.KindKeyring && !f.keyringChecked {
		if err := f.ProbeKeyring(ctx); err != nil {
			return nil, fmt.Errorf("cannot log in: %w", err)
		}
		f.keyringChecked = true
	}
	if _, err := st.List(ctx); err != nil {
		return nil, fmt.Errorf("cannot log in: %w", err)
	}
	return st, nil
}

// loginRequest is one login to one discovered requirement. call --login and
// step-up build one with the challenge's scope in Requirement.ChallengeScope
// (or ExtraScopes).
type loginRequest struct {
	// Target is what the user named; stored as Credential.Target.
	Target string
	// Requirement must have its AuthServer metadata.
	Requirement *requirementInfo
	// ExtraScopes are added to the chosen scopes (--scope).
	ExtraScopes []string
	// ClientID and ClientSecret name a pre-registered client.
	ClientID, ClientSecret string
	// ClientMetadataURL is a client ID metadata document URL, used as the
	// client_id when the server supports it.
	ClientMetadataURL string
	Device            bool
	NoResource        bool
	CallbackHost      string
	CallbackPort      int
	NoBrowser         bool
	// Timeout bounds the wait for the user (default flows.DefaultLoginTimeout).
	Timeout time.Duration
	// AllowResources lets Target receive tokens for these resources on
	// other origins (login --allow-resource); see mayReceive.
	AllowResources []string
}

// loginFlow logs in to one requirement: it chooses the scopes and the
// client, runs the authorization code grant with PKCE (or the device grant),
// stores the credential and prints the success line on stderr. It never
// prints a secret.
func loginFlow(ctx context.Context, f *Factory, req loginRequest) (*store.Credential, error) {
	r := req.Requirement
	md := r.AuthServer
	if md == nil {
		err := r.Err
		if err == nil {
			err = errors.New("no authorization server metadata")
		}
		return nil, fmt.Errorf("cannot log in to %s: %w", r.name(), err)
	}
	crossOrigin := !wire.SameOrigin(req.Target, r.Resource)
	if crossOrigin && !slices.Contains(req.AllowResources, r.Resource) {
		// Refused before anything is approved: a host names the resource
		// it wants, and could name another server's to have its token.
		return nil, newCrossOriginError(req.Target, r.Resource, r.SchemeID)
	}
	st, err := f.usableStore(ctx)
	if err != nil {
		return nil, err
	}
	scopes := flows.ChooseScopes(r.ChallengeScope, r.ScopesSupported, req.ExtraScopes)
	resource := r.Resource
	if req.NoResource {
		resource = ""
	}

	reg, stored, err := chooseClient(ctx, f, st, md, req)
	if err != nil {
		return nil, err
	}
	tok, err := runGrant(ctx, f, req, md, clientOf(*reg), scopes, resource)
	if stored && errors.Is(err, flows.ErrInvalidClient) {
		// The stored registration is stale (the server forgot it): mark it
		// so that no login offers it again, and choose again, once.
		fmt.Fprintf(f.IO.ErrOut, "%s %s no longer accepts the stored client %s; choosing the client again.\n",
			f.IO.ErrPainter().Yellow("warning:"), md.Issuer, reg.ClientID)
		if err := store.MarkRejected(ctx, st, md.Issuer, reg.ClientID); err != nil {
			return nil, fmt.Errorf("cannot record the rejected client: %w", err)
		}
		if reg, _, err = chooseClient(ctx, f, st, md, req); err != nil {
			return nil, err
		}
		tok, err = runGrant(ctx, f, req, md, clientOf(*reg), scopes, resource)
	}
	if err != nil {
		return nil, loginError(err, req.Target, r.SchemeID)
	}

	c := &store.Credential{
		Key:                store.Key{Resource: r.Resource, Issuer: md.Issuer, SchemeID: r.SchemeID},
		NoResource:         req.NoResource,
		AccessToken:        tok.AccessToken,
		RefreshToken:       tok.RefreshToken,
		TokenType:          tok.TokenType,
		Expiry:             tok.Expiry,
		Scopes:             tok.Scopes,
		Subject:            tokenSubject(tok.AccessToken),
		Client:             *reg,
		TokenEndpoint:      md.TokenEndpoint,
		RevocationEndpoint: md.RevocationEndpoint,
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
	cs, err := f.credentials()
	if err != nil {
		return nil, err
	}
	if err := cs.save(ctx, c); err != nil {
		return nil, err
	}
	fmt.Fprintf(f.IO.ErrOut, "%s %s\n", f.IO.ErrPainter().Green("✓"), safeText(loggedInLine(c, f.Now())))
	return c, nil
}

// errDeviceTimeout: --timeout passed before the device code was approved.
var errDeviceTimeout = errors.New("timed out waiting for the device login to be approved")

// loginError makes a failed grant say what to do: a refusal by the user or
// the authorization server is an authentication failure (exit 4).
func loginError(err error, target, schemeID string) error {
	if errors.Is(err, flows.ErrCallbackPortInUse) {
		return fmt.Errorf("cannot log in: %w\nChoose another --callback-port, or leave it out to listen on a free port.", err)
	}
	err = fmt.Errorf("cannot log in: %w", err)
	if errors.Is(err, flows.ErrAuthorizationRefused) || errors.Is(err, flows.ErrAccessDenied) ||
		errors.Is(err, flows.ErrDeviceCodeExpired) || errors.Is(err, flows.ErrLoginTimeout) || errors.Is(err, errDeviceTimeout) || errors.Is(err, flows.ErrInvalidGrant) {
		return &AuthError{Err: err, Hint: loginCommand(target, schemeID)}
	}
	return err
}

// loggedInLine is the success line: "Logged in to RESOURCE as SUB (SCOPES,
// expires in 59m)"; the subject is left out when unknown.
func loggedInLine(c *store.Credential, now time.Time) string {
	s := "Logged in to " + c.Resource
	if c.SchemeID != "" {
		s += " [" + c.SchemeID + "]"
	}
	if c.Subject != "" {
		s += " as " + c.Subject
	}
	scopes := wire.JoinScope(c.Scopes)
	if scopes == "" {
		scopes = "no scope"
	}
	if c.Expiry.IsZero() {
		return s + " (" + scopes + ", no expiry given)"
	}
	return s + " (" + scopes + ", expires in " + roughDuration(c.Expiry.Sub(now)) + ")"
}

// chooseClient picks the OAuth client, in order: the registration stored
// for this issuer (unless --client-id is given), --client-id (with the
// stored secret of that client when none is given), a client ID metadata
// document, dynamic registration (RFC 7591; registerOnce). stored reports
// that a stored registration was used.
func chooseClient(ctx context.Context, f *Factory, st store.Store, md *wire.AuthServerMetadata, req loginRequest) (reg *store.ClientRegistration, stored bool, err error) {
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
		return registerOnce(ctx, f, st, md, req.Device)
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
func registerOnce(ctx context.Context, f *Factory, st store.Store, md *wire.AuthServerMetadata, device bool) (reg *store.ClientRegistration, stored bool, err error) {
	unlock, err := st.Lock(ctx, store.RegistrationKey(md.Issuer))
	if err != nil {
		return nil, false, fmt.Errorf("cannot lock the client registration for %s: %w", md.Issuer, err)
	}
	defer unlock()
	if prev, found := store.FindRegistration(ctx, st, md.Issuer); found {
		return prev, true, nil
	}
	if reg, err = registerClient(ctx, f, md, device); err != nil {
		return nil, false, err
	}
	if err := store.PutRegistration(ctx, st, md.Issuer, *reg); err != nil {
		// The login goes on: the registration is kept with the credential
		// (or its file-store fallback) when the login succeeds.
		f.Logger().Warn("cannot store the client registration", "issuer", md.Issuer, "err", err)
	}
	return reg, false, nil
}

// registerClient registers agentauth as a public native client with the
// port-less loopback redirect URIs (RFC 8252 §7.3), asking for the device
// grant too when the server has a device endpoint, so that one
// registration serves both flows.
func registerClient(ctx context.Context, f *Factory, md *wire.AuthServerMetadata, device bool) (*store.ClientRegistration, error) {
	r, err := flows.Register(ctx, f.HTTPClient, md.RegistrationEndpoint, flows.RegistrationRequest{
		Device: device || md.DeviceAuthorizationEndpoint != "",
	})
	if err != nil {
		return nil, err
	}
	f.Logger().Debug("client registered", "issuer", md.Issuer, "client_id", r.ClientID, "auth_method", r.TokenEndpointAuthMethod)
	return &store.ClientRegistration{ClientID: r.ClientID, ClientSecret: r.ClientSecret, AuthMethod: r.TokenEndpointAuthMethod, Source: clientSourceDCR}, nil
}

// runGrant runs the authorization code grant, or the device grant.
func runGrant(ctx context.Context, f *Factory, req loginRequest, md *wire.AuthServerMetadata, client flows.Client, scopes []string, resource string) (*flows.Token, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = flows.DefaultLoginTimeout
	}
	var open func(string) error
	if !req.NoBrowser {
		open = f.Browser()
	}
	if req.Device {
		return deviceGrant(ctx, f, md, client, scopes, resource, open, timeout)
	}
	p := f.IO.ErrPainter()
	return flows.AuthorizationCode(ctx, f.HTTPClient, flows.AuthCodeRequest{
		Metadata: md, Client: client, Scopes: scopes, Resource: resource,
		CallbackHost: req.CallbackHost, CallbackPort: req.CallbackPort, Timeout: timeout,
		ShowURL: func(u string) {
			u = safeText(u)
			switch {
			case open != nil:
				fmt.Fprintf(f.IO.ErrOut, "Opening %s in your browser.\n", u)
			case req.NoBrowser:
				fmt.Fprintf(f.IO.ErrOut, "Open this URL in a browser to log in:\n  %s\n", u)
			default:
				fmt.Fprintf(f.IO.ErrOut, "No terminal and no $BROWSER, so no browser was opened. Open this URL to log in:\n  %s\n"+
					"(--no-browser says so and skips this note; --device logs in without a browser here.)\n", u)
			}
			fmt.Fprintf(f.IO.ErrOut, "Waiting for the authorization (%s)…\n", p.Bold("times out in "+roughDuration(timeout)))
		},
		OpenURL: func(u string) error {
			if open == nil {
				return nil
			}
			if err := open(u); err != nil {
				fmt.Fprintf(f.IO.ErrOut, "%s %v; open the URL above yourself.\n", p.Yellow("warning:"), err)
			}
			return nil
		},
	})
}

// deviceGrant runs the device authorization grant (RFC 8628): the code on
// stderr, the verification URL opened like the login URL, a spinner with
// the remaining time on a terminal.
func deviceGrant(ctx context.Context, f *Factory, md *wire.AuthServerMetadata, client flows.Client, scopes []string, resource string, open func(string) error, timeout time.Duration) (*flows.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	spin := newSpinner(f.IO, f.Now)
	defer spin.stop()
	tok, err := flows.DeviceCode(ctx, f.HTTPClient, flows.DeviceRequest{
		Metadata: md, Client: client, Scopes: scopes, Resource: resource,
		ShowCode: func(p flows.DeviceCodePrompt) {
			w, paint := f.IO.ErrOut, f.IO.ErrPainter()
			fmt.Fprintf(w, "To log in, open %s and enter the code %s\n", safeText(p.VerificationURI), paint.Bold(safeText(p.UserCode)))
			if p.VerificationURIComplete != "" {
				fmt.Fprintf(w, "or open %s\n", safeText(p.VerificationURIComplete))
			}
			if open != nil {
				u := p.VerificationURIComplete
				if u == "" {
					u = p.VerificationURI
				}
				if err := open(u); err != nil {
					fmt.Fprintf(w, "%s %v\n", paint.Yellow("warning:"), err)
				}
			}
			expiry := p.Expiry
			if deadline, _ := ctx.Deadline(); expiry.IsZero() || deadline.Before(expiry) {
				expiry = deadline
			}
			spin.start("Waiting for approval", expiry)
		},
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, flows.ErrDeviceCodeExpired) {
		return nil, fmt.Errorf("%w (%s)", errDeviceTimeout, roughDuration(timeout))
	}
	return tok, err
}

// loginDoc is login --json's document (documented in its help).
type loginDoc struct {
	Target string         `json:"target"`
	Logins []loginDetails `json:"logins"`
}

// loginDetails are a credential's non-secret details.
type loginDetails struct {
	Resource      string    `json:"resource"`
	Issuer        string    `json:"issuer"`
	SchemeID      string    `json:"schemeId,omitempty"`
	Subject       string    `json:"subject,omitempty"`
	Scopes        []string  `json:"scopes"`
	TokenType     string    `json:"tokenType"`
	ExpiresAt     time.Time `json:"expiresAt,omitzero"`
	Refreshable   bool      `json:"refreshable"`
	Client        clientDoc `json:"client"`
	Store         string    `json:"store"`
	StoreLocation string    `json:"storeLocation"`
}

type clientDoc struct {
	ClientID   string `json:"clientId"`
	AuthMethod string `json:"authMethod"`
	Source     string `json:"source"`
}

// detailsOf are c's non-secret details, stored in st.
func detailsOf(c *store.Credential, st store.Store) loginDetails {
	return loginDetails{Resource: c.Resource, Issuer: c.Issuer, SchemeID: c.SchemeID, Subject: c.Subject,
		Scopes: nonNil(c.Scopes), TokenType: c.TokenType, ExpiresAt: c.Expiry.UTC(), Refreshable: c.RefreshToken != "",
		Client: clientDoc{ClientID: c.Client.ClientID, AuthMethod: c.Client.AuthMethod, Source: c.Client.Source},
		Store:  st.Kind(), StoreLocation: st.Location()}
}

// spinner shows progress with the remaining time on a terminal's stderr;
// elsewhere it does nothing.
type spinner struct {
	io   *IOStreams
	now  func() time.Time
	done chan struct{}
	quit chan struct{}
}

func newSpinner(io *IOStreams, now func() time.Time) *spinner {
	return &spinner{io: io, now: now}
}

func (s *spinner) start(label string, until time.Time) {
	if !s.io.StderrTTY || s.done != nil {
		return
	}
	s.done, s.quit = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			line := fmt.Sprintf("%c %s", frames[i%len(frames)], label)
			if !until.IsZero() {
				line += " (" + roughDuration(until.Sub(s.now())) + " left)"
			}
			fmt.Fprintf(s.io.ErrOut, "\r\033[K%s", line)
			select {
			case <-s.quit:
				fmt.Fprint(s.io.ErrOut, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
}

func (s *spinner) stop() {
	if s.done == nil {
		return
	}
	close(s.quit)
	<-s.done
	s.done = nil
}
