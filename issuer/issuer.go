package issuer

import (
	"context"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// CLIClientID is the pre-registered public client that `agentauth login`
// uses, with loopback redirects (RFC 8252 §7.3).
const CLIClientID = "agentauth-cli"

// Client authentication methods (RFC 7591 §2, token_endpoint_auth_method).
const (
	AuthNone              = "none"
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
)

// Default option values.
const (
	DefaultTokenTTL       = time.Hour
	DefaultRefreshTTL     = 30 * 24 * time.Hour
	DefaultCodeTTL        = 60 * time.Second
	DefaultDeviceCodeTTL  = 10 * time.Minute
	DefaultDeviceInterval = 5 * time.Second
	DefaultSubject        = "alice"
	DefaultScope          = "agent:use"
	// DefaultResourcePath is appended to Issuer to form the default
	// DefaultResource: the resource `serve` declares by default.
	DefaultResourcePath = "/mcp"
)

// consentTTL bounds how long a rendered consent or device page stays
// answerable.
const consentTTL = 10 * time.Minute

// Bounds on what the issuer keeps in memory (see the package doc).
const (
	// maxPendingConsents bounds the consent and device pages awaiting an
	// answer; a new page evicts the one that expires first.
	maxPendingConsents = 1000
	// maxDeviceAuthorizations bounds the device authorizations kept;
	// beyond it a new one is refused (temporarily_unavailable).
	maxDeviceAuthorizations = 1000
	// unusedClientTTL is how long a registered client that was never
	// issued a token is kept after its registration or last request.
	unusedClientTTL = 15 * time.Minute
)

// sweepEvery bounds how often expired records are swept.
const sweepEvery = 30 * time.Second

// Client is a registered OAuth client (RFC 7591 §2 metadata subset).
type Client struct {
	ID           string
	Secret       string   // empty for public clients
	RedirectURIs []string // https, or http on a loopback host
	// AuthMethod is none, client_secret_basic or client_secret_post;
	// empty means client_secret_basic when Secret is set, none otherwise.
	AuthMethod string
	Name       string
	// GrantTypes the client may use; empty means authorization_code,
	// refresh_token and the device code grant.
	GrantTypes []string
}

// Options configure an Issuer. Zero values take the documented defaults.
type Options struct {
	// Issuer is the listener origin "http://HOST:PORT" (RFC 8414 §2: no
	// query, no fragment, and here no path). It is also the JWT iss.
	Issuer string
	// DefaultResource is the token audience when a request names no
	// resource (RFC 9068 §3 requires a default); default Issuer + "/mcp".
	DefaultResource string
	TokenTTL        time.Duration // default 1h
	// RefreshTTL is the lifetime of each refresh token, counted from its
	// issue: rotation slides it. Default 30 days.
	RefreshTTL     time.Duration
	CodeTTL        time.Duration // default 60s
	DeviceCodeTTL  time.Duration // default 10m
	DeviceInterval time.Duration // default 5s; faster polling gets slow_down (RFC 8628 §3.5)
	// AutoApprove skips the consent page: /authorize redirects with a code
	// at once and opening verification_uri_complete approves a device code,
	// as Subject, or as the name the browser signed in as with the
	// development box (POST /login); with Login, as the user after their
	// sign-in there.
	AutoApprove bool
	// Subject is the dev user every approval signs in as; default "alice".
	// The consent and device pages let the user type another one.
	Subject string
	// ScopesSupported is advertised in the metadata and granted when a
	// request names no scope; default ["agent:use"]. Any well-formed scope
	// a request names is shown on the consent page and granted if approved.
	ScopesSupported []string
	// ScopeDescriptions says, per scope, what it lets a client do: the
	// consent and device pages show it beside the scope (config
	// scopeDescriptions).
	ScopeDescriptions map[string]string
	// AllowedRedirectOrigins are https origins ("https://app.example",
	// "https://app.example:8443"), matched exactly, on which clients may
	// have redirect URIs besides loopback http (RFC 8252 §7.3), which is
	// always allowed. Registration and Clients are checked against them.
	AllowedRedirectOrigins []string
	// CIMD says which client ID metadata documents are used: pinned,
	// fetched (from which hosts), or none (CIMDOptions).
	CIMD CIMDOptions
	// Clients are pre-registered in addition to agentauth-cli. They live
	// in the process, not in Store.
	Clients []Client
	// AssertionIssuers are trusted to issue JWT bearer assertions (RFC
	// 7523 §2.1), whose sub becomes the token's subject. Without any, the
	// JWT bearer grant is neither advertised nor accepted.
	AssertionIssuers []AssertionIssuer
	// Store keeps the issuer's state: registered clients, codes, device
	// codes, grants, refresh and access tokens, revocations and signing
	// keys. Default: a new state.Memory, which dies with the process.
	Store state.Store
	// StateKey, StateKeySize bytes, encrypts the signing keys in Store
	// (AES-256-GCM); without it they are stored in the clear.
	StateKey []byte
	// KeyRotation is how long a signing key signs before a new one takes
	// over; the old one stays in the JWKS until its tokens have expired.
	// Default 30 days.
	KeyRotation time.Duration
	// RotateKey retires the current signing key at New, out of schedule
	// (a key that may have leaked): a new one signs from then on.
	RotateKey bool
	// Login, when set, signs users in at an OpenID Provider; without it
	// the consent and device pages and /login show the development
	// "Sign in as" box, which signs anyone in without a password.
	Login *LoginOptions
	// Limits bound the replay caches, pending codes and registrations;
	// zero fields take DefaultLimits.
	Limits Limits
	// Telemetry, when set, counts the tokens issued and receives the audit
	// events of logins, consents, tokens issued, refresh token reuse and
	// revocations (nil: none).
	Telemetry *ops.Recorder
	Logger    *slog.Logger
	Now       func() time.Time
}

// Issuer is the embedded authorization server. Its methods are safe for
// concurrent use; several Issuers (in several processes) may share one
// Store.
type Issuer struct {
	opts    Options
	meta    wire.AuthServerMetadata
	pages   *template.Template
	handler http.Handler
	log     *slog.Logger
	now     func() time.Time
	store   state.Store
	// static are the pre-registered clients, by id.
	static map[string]*client
	keys   keyRing
	// login is the OpenID Provider client, nil for the development box.
	login *oidcLogin
	// cookieAEAD seals the browser session cookies.
	cookieAEAD cipher.AEAD
	// live counts the access tokens of grants that keep no record.
	live *liveTokens
	// clients caches decoded client records (clientCache).
	clients clientCache

	mu        sync.Mutex
	cimd      map[string]cimdEntry // fetched client ID metadata documents, by URL
	pinned    map[string]*client   // the clients of CIMDOptions.Pinned, by URL (read only)
	guesses   userCodeGuard
	nextSweep time.Time
	onRevoke  []func(jtis []string)
	onEnd     []func(subject, clientID string)
}

// New validates opts, applies defaults and generates the signing key.
func New(opts Options) (*Issuer, error) {
	origin, err := parseOrigin(opts.Issuer)
	if err != nil {
		return nil, err
	}
	opts.Issuer = origin
	if opts.DefaultResource == "" {
		opts.DefaultResource = origin + DefaultResourcePath
	}
	if err := checkResource(opts.DefaultResource); err != nil {
		return nil, fmt.Errorf("cannot use default resource: %w", err)
	}
	setDefault(&opts.TokenTTL, DefaultTokenTTL)
	setDefault(&opts.RefreshTTL, DefaultRefreshTTL)
	setDefault(&opts.CodeTTL, DefaultCodeTTL)
	setDefault(&opts.DeviceCodeTTL, DefaultDeviceCodeTTL)
	setDefault(&opts.DeviceInterval, DefaultDeviceInterval)
	setDefault(&opts.KeyRotation, DefaultKeyRotation)
	setDefault(&opts.Limits.Codes.Retry, opts.CodeTTL)
	opts.Limits.setDefaults()
	if err := checkAssertionIssuers(opts.AssertionIssuers); err != nil {
		return nil, err
	}
	if opts.StateKey != nil && len(opts.StateKey) != StateKeySize {
		return nil, fmt.Errorf("cannot use a state key of %d bytes: want %d", len(opts.StateKey), StateKeySize)
	}
	if opts.Store == nil {
		opts.Store = state.NewMemory()
	}
	if opts.TokenTTL < time.Second || opts.DeviceInterval < time.Second {
		return nil, errors.New("cannot use a token ttl or device interval under one second")
	}
	if opts.Subject == "" {
		opts.Subject = DefaultSubject
	}
	if err := checkSubject(opts.Subject); err != nil {
		return nil, err
	}
	if len(opts.ScopesSupported) == 0 {
		opts.ScopesSupported = []string{DefaultScope}
	}
	if _, err := parseScope(strings.Join(opts.ScopesSupported, " ")); err != nil {
		return nil, fmt.Errorf("cannot use scopes supported: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}

	i := &Issuer{opts: opts, log: opts.Logger, now: opts.Now, store: opts.Store, static: map[string]*client{}, cimd: map[string]cimdEntry{},
		live: newLiveTokens(opts.Limits.ClientTokens, opts.TokenTTL), clients: clientCache{max: opts.Limits.Clients}}
	cli := Client{
		ID:           CLIClientID,
		Name:         "agentauth CLI",
		RedirectURIs: []string{"http://127.0.0.1/callback", "http://localhost/callback"},
	}
	for _, o := range opts.AllowedRedirectOrigins {
		if err := checkAllowedOrigin(o); err != nil {
			return nil, err
		}
	}
	if err := i.setupCIMD(); err != nil {
		return nil, err
	}
	for _, c := range append([]Client{cli}, opts.Clients...) {
		rc, err := i.newClient(c)
		if err != nil {
			return nil, err
		}
		if i.static[rc.id] != nil {
			return nil, fmt.Errorf("cannot register client %q twice", rc.id)
		}
		i.static[rc.id] = rc
	}
	if opts.RotateKey {
		if err := i.retireKeys(context.Background(), i.now()); err != nil {
			return nil, err
		}
	}
	if _, err := i.signer(context.Background(), i.now()); err != nil {
		return nil, err
	}
	if err := i.loadBrowserKey(context.Background()); err != nil {
		return nil, fmt.Errorf("cannot load the browser session key: %w", err)
	}
	if opts.Login != nil {
		if i.login, err = newOIDCLogin(context.Background(), *opts.Login); err != nil {
			return nil, err
		}
	}
	i.store.OnRevoked(i.callOnRevoke)
	if i.pages, err = parsePages(i.login == nil); err != nil {
		return nil, err
	}
	i.meta = wire.AuthServerMetadata{
		Issuer:                            origin,
		AuthorizationEndpoint:             origin + pathAuthorize,
		TokenEndpoint:                     origin + pathToken,
		JWKSURI:                           origin + pathJWKS,
		RegistrationEndpoint:              origin + pathRegister,
		ScopesSupported:                   slices.Clone(opts.ScopesSupported),
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               slices.Clone(supportedGrants),
		TokenEndpointAuthMethodsSupported: slices.Clone(supportedAuthMethods),
		TokenEndpointAuthSigningAlgValuesSupported: []string{"ES256", "RS256"},
		DPoPSigningAlgValuesSupported:              []string{"ES256"},
		RevocationEndpoint:                         origin + pathRevoke,
		IntrospectionEndpoint:                      origin + pathIntrospect,
		DeviceAuthorizationEndpoint:                origin + pathDeviceAuthorization,
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: true,
		ClientIDMetadataDocumentSupported:          i.opts.CIMD.Mode != CIMDOff,
	}
	if len(opts.AssertionIssuers) == 0 {
		i.meta.GrantTypesSupported = slices.DeleteFunc(i.meta.GrantTypesSupported, func(g string) bool { return g == GrantJWTBearer })
	}
	i.handler = i.routes()
	return i, nil
}

func setDefault[T int | time.Duration](d *T, def T) {
	if *d <= 0 {
		*d = def
	}
}

// parseOrigin checks an issuer identifier: an absolute http(s) URL with a
// host and no path, query or fragment (RFC 8414 §2).
func parseOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("cannot parse issuer: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(raw, "#") {
		return "", fmt.Errorf("cannot use issuer %q: want an origin like http://127.0.0.1:7777", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Handler serves every endpoint listed by Paths.
func (i *Issuer) Handler() http.Handler { return i.handler }

// Paths lists the URL paths Handler serves, for mounting on a shared mux.
func (i *Issuer) Paths() []string { return slices.Clone(allPaths) }

// Metadata returns the RFC 8414 document served at the well-known paths.
func (i *Issuer) Metadata() wire.AuthServerMetadata {
	m := i.meta
	m.ScopesSupported = slices.Clone(m.ScopesSupported)
	m.ResponseTypesSupported = slices.Clone(m.ResponseTypesSupported)
	m.GrantTypesSupported = slices.Clone(m.GrantTypesSupported)
	m.TokenEndpointAuthMethodsSupported = slices.Clone(m.TokenEndpointAuthMethodsSupported)
	m.CodeChallengeMethodsSupported = slices.Clone(m.CodeChallengeMethodsSupported)
	return m
}

// OnRevoke registers fn to be called, synchronously, with the jti of every
// live access token the issuer revokes: at the revocation endpoint
// (RFC 7009), on refresh token reuse and on authorization code replay
// (RFC 6749 §4.1.2); and those that other issuers sharing the Store
// revoke, as the Store reports them.
func (i *Issuer) OnRevoke(fn func(jtis []string)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.onRevoke = append(i.onRevoke, fn)
}

// OnSessionEnd registers fn to be called, synchronously, when the issuer
// revoked the last live token family (refresh token) that the client
// clientID held for subject, at the revocation endpoint (RFC 7009 §2.1)
// or because a rotated refresh token was reused (RFC 9700 §4.14.2) or a
// redeemed code replayed (RFC 6749 §4.1.2): that client is signed out of
// this issuer. Families that expire do not call it.
func (i *Issuer) OnSessionEnd(fn func(subject, clientID string)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.onEnd = append(i.onEnd, fn)
}

// notifyRevoked tells the OnRevoke callbacks and the other processes
// sharing the Store.
func (i *Issuer) notifyRevoked(ctx context.Context, jtis []string) {
	if len(jtis) == 0 {
		return
	}
	if err := i.store.PublishRevoked(ctx, jtis); err != nil {
		i.log.Warn("issuer: cannot tell the other replicas of a revocation; they refuse the tokens once their caches expire", "err", err)
	}
	i.callOnRevoke(jtis)
}

func (i *Issuer) callOnRevoke(jtis []string) {
	i.mu.Lock()
	fns := slices.Clone(i.onRevoke)
	i.mu.Unlock()
	for _, fn := range fns {
		fn(slices.Clone(jtis))
	}
}

// hash is the only form in which codes, refresh tokens, device codes and
// page nonces are kept.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Ready reports whether the issuer can sign: its current signing key is
// loaded (from the store when due for a reload), for serve's /readyz.
func (i *Issuer) Ready(ctx context.Context) error {
	_, err := i.signer(ctx, i.clock(ctx))
	return err
}
