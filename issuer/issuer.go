package issuer

import (
	"crypto/ecdsa"
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

	"github.com/go-jose/go-jose/v4"

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
	// maxPendingCodes bounds the issued authorization codes not yet
	// redeemed; a new code evicts the one that expires first.
	maxPendingCodes = 1000
	// maxDeviceAuthorizations bounds the device authorizations kept;
	// beyond it a new one is refused (temporarily_unavailable).
	maxDeviceAuthorizations = 1000
	// maxRegistrations bounds the clients registered at the registration
	// endpoint; beyond it a registration is refused
	// (temporarily_unavailable).
	maxRegistrations = 1000
	// unusedClientTTL is how long a registered client that was never
	// issued a token is kept after its registration or last request.
	unusedClientTTL = 15 * time.Minute
)

// pruneEvery bounds how often expired entries are swept.
const pruneEvery = 30 * time.Second

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
	// at once and opening verification_uri_complete approves a device code.
	AutoApprove bool
	// Subject is the dev user every approval signs in as; default "alice".
	// The consent and device pages let the user type another one.
	Subject string
	// ScopesSupported is advertised in the metadata and granted when a
	// request names no scope; default ["agent:use"]. Any well-formed scope
	// a request names is shown on the consent page and granted if approved.
	ScopesSupported []string
	// AllowedRedirectOrigins are https origins ("https://app.example",
	// "https://app.example:8443"), matched exactly, on which clients may
	// have redirect URIs besides loopback http (RFC 8252 §7.3), which is
	// always allowed. Registration and Clients are checked against them.
	AllowedRedirectOrigins []string
	// Clients are pre-registered in addition to agentauth-cli.
	Clients []Client
	Logger  *slog.Logger
	Now     func() time.Time
}

// Issuer is the embedded authorization server. Its methods are safe for
// concurrent use.
type Issuer struct {
	opts    Options
	meta    wire.AuthServerMetadata
	key     *ecdsa.PrivateKey
	signer  jose.Signer
	jwks    jose.JSONWebKeySet
	pages   *template.Template
	handler http.Handler
	log     *slog.Logger
	now     func() time.Time

	mu        sync.Mutex
	clients   map[string]*client
	codes     map[string]*authCode     // not yet redeemed, by sha256 of the code
	usedCodes map[string]*usedCode     // redeemed, by sha256 of the code
	refresh   map[string]*refreshToken // by sha256 of the token
	access    map[string]*accessToken  // by jti
	devices   map[string]*deviceAuth   // by sha256 of the device code
	userCodes map[string]*deviceAuth   // by normalised user code
	consents  map[string]*consent      // by sha256 of the page nonce
	cimd      map[string]cimdEntry     // fetched client ID metadata documents, by URL
	// registered counts the clients in clients that came from the
	// registration endpoint.
	registered int
	guesses    userCodeGuard
	nextPrune  time.Time
	onRevoke   []func(jtis []string)
}

// grant is one authorization: the family of every token issued from one
// code or device approval, through all refresh rotations.
type grant struct {
	client   *client
	subject  string
	scope    string
	resource string
	jtis     []string // access tokens issued in this family
	revoked  bool
}

type authCode struct {
	client        *client
	redirectURI   string // effective redirect URI
	redirectGiven bool   // redirect_uri was sent (RFC 6749 §4.1.3)
	challenge     string
	subject       string
	scope         string
	resource      string
	expires       time.Time
}

// usedCode is a redeemed code, kept while its tokens may live to detect a
// replay (RFC 6749 §4.1.2).
type usedCode struct {
	grant     *grant
	keepUntil time.Time
}

type refreshToken struct {
	grant   *grant
	expires time.Time
	used    bool // rotated: presenting it again is reuse
}

type accessToken struct {
	grant   *grant
	expires time.Time
	revoked bool
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

	i := &Issuer{
		opts:      opts,
		log:       opts.Logger,
		now:       opts.Now,
		clients:   map[string]*client{},
		cimd:      map[string]cimdEntry{},
		codes:     map[string]*authCode{},
		usedCodes: map[string]*usedCode{},
		refresh:   map[string]*refreshToken{},
		access:    map[string]*accessToken{},
		devices:   map[string]*deviceAuth{},
		userCodes: map[string]*deviceAuth{},
		consents:  map[string]*consent{},
	}
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
	for _, c := range append([]Client{cli}, opts.Clients...) {
		rc, err := i.newClient(c)
		if err != nil {
			return nil, err
		}
		if i.clients[rc.id] != nil {
			return nil, fmt.Errorf("cannot register client %q twice", rc.id)
		}
		i.clients[rc.id] = rc
	}
	if err := i.initKey(); err != nil {
		return nil, err
	}
	if i.pages, err = parsePages(); err != nil {
		return nil, err
	}
	i.meta = wire.AuthServerMetadata{
		Issuer:                                     origin,
		AuthorizationEndpoint:                      origin + pathAuthorize,
		TokenEndpoint:                              origin + pathToken,
		JWKSURI:                                    origin + pathJWKS,
		RegistrationEndpoint:                       origin + pathRegister,
		ScopesSupported:                            slices.Clone(opts.ScopesSupported),
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        slices.Clone(supportedGrants),
		TokenEndpointAuthMethodsSupported:          slices.Clone(supportedAuthMethods),
		RevocationEndpoint:                         origin + pathRevoke,
		IntrospectionEndpoint:                      origin + pathIntrospect,
		DeviceAuthorizationEndpoint:                origin + pathDeviceAuthorization,
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: true,
		ClientIDMetadataDocumentSupported:          true,
	}
	i.handler = i.routes()
	return i, nil
}

func setDefault(d *time.Duration, def time.Duration) {
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

// OnRevoke registers fn to be called, synchronously and without the
// issuer's lock held, with the jti of every live access token the issuer
// revokes: at the revocation endpoint (RFC 7009), on refresh token reuse and
// on authorization code replay (RFC 6749 §4.1.2).
func (i *Issuer) OnRevoke(fn func(jtis []string)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.onRevoke = append(i.onRevoke, fn)
}

// notifyRevoked calls the OnRevoke callbacks; the lock must not be held.
func (i *Issuer) notifyRevoked(jtis []string) {
	if len(jtis) == 0 {
		return
	}
	i.mu.Lock()
	fns := slices.Clone(i.onRevoke)
	i.mu.Unlock()
	for _, fn := range fns {
		fn(slices.Clone(jtis))
	}
}

// revokeGrantLocked revokes every token of g and returns the jtis of the
// access tokens that were still live.
func (i *Issuer) revokeGrantLocked(g *grant) []string {
	g.revoked = true
	var jtis []string
	for _, jti := range g.jtis {
		if a := i.access[jti]; a != nil && !a.revoked {
			a.revoked = true
			jtis = append(jtis, jti)
		}
	}
	return jtis
}

// lock takes the state lock and sweeps expired entries now and then.
func (i *Issuer) lock() time.Time {
	i.mu.Lock()
	now := i.now()
	if now.Before(i.nextPrune) {
		return now
	}
	i.nextPrune = now.Add(pruneEvery)
	for k, c := range i.codes {
		if now.After(c.expires) {
			delete(i.codes, k)
		}
	}
	for k, c := range i.usedCodes {
		if now.After(c.keepUntil) {
			delete(i.usedCodes, k)
		}
	}
	for k, r := range i.refresh {
		if now.After(r.expires) {
			delete(i.refresh, k)
		}
	}
	for k, a := range i.access {
		if now.After(a.expires) {
			delete(i.access, k)
		}
	}
	// Kept a while past expiry so that a late poll still learns
	// expired_token (RFC 8628 §3.5).
	i.pruneDevicesLocked(now, i.opts.DeviceCodeTTL)
	for k, c := range i.consents {
		if now.After(c.expires) {
			delete(i.consents, k)
		}
	}
	i.pruneClientsLocked(now)
	return now
}

// evictOldest makes room for one more entry in m, which may hold max: when
// it is full, the entry that expires first is dropped.
func evictOldest[V any](m map[string]V, max int, expires func(V) time.Time) {
	if len(m) < max {
		return
	}
	var oldest string
	var first time.Time
	for k, v := range m {
		if e := expires(v); oldest == "" || e.Before(first) {
			oldest, first = k, e
		}
	}
	delete(m, oldest)
}

// hash is the only form in which codes, refresh tokens, device codes and
// page nonces are kept.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
