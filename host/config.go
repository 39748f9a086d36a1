package host

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/gateway"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// Embedded is the authorizationServers entry that stands for the
// authorization server embedded in serve; Resolve replaces it with the
// listener's origin.
const Embedded = "embedded"

// The shapes of a scheme and of its validation are resource's (the token
// checks); the config file names them here.
type (
	Scheme      = resource.Scheme
	Validation  = resource.Validation
	StaticToken = resource.StaticToken
	Duration    = resource.Duration
)

// What a validated token establishes, and why one was rejected (resource).
type (
	Grant      = resource.Grant
	TokenError = resource.TokenError
)

// Validation types of a scheme.
const (
	ValidationStatic        = resource.ValidationStatic
	ValidationJWT           = resource.ValidationJWT
	ValidationIntrospection = resource.ValidationIntrospection
)

// DefaultCacheTTL bounds how long an introspection result is trusted.
const DefaultCacheTTL = resource.DefaultCacheTTL

// Config is the host's JSON configuration file. Its key names are part of
// the user contract (docs/production.md, "Configuration file").
type Config struct {
	// Resource is the RFC 8707 / RFC 9728 resource identifier every token
	// must carry as its audience. Empty: serve uses http://HOST:PORT/mcp.
	Resource string   `json:"resource"`
	Schemes  []Scheme `json:"schemes"`
	// MethodScopes lists the extra scopes a gated method needs.
	MethodScopes map[string][]string `json:"methodScopes"`
	// Upstreams are the APIs serve calls as the user, signing each
	// session in to them itself (see package broker).
	Upstreams []Upstream `json:"upstreams"`
	// MethodUpstreams lists the upstreams a gated method needs a sign-in to.
	MethodUpstreams map[string][]string `json:"methodUpstreams"`
	// StateLifetime bounds a pending upstream sign-in (default
	// DefaultStateLifetime).
	StateLifetime Duration `json:"stateLifetime"`
	// UpstreamTokenLifetime is how long a session's upstream tokens are
	// kept after their last use or refresh, when the upstream does not say
	// when its refresh token expires (refresh_expires_in); past it the
	// session signs in again (default broker.DefaultTokenLifetime, 720h).
	UpstreamTokenLifetime Duration `json:"upstreamTokenLifetime"`
	// RevokeOnLogout revokes a session's upstream tokens at the upstream
	// when it logs out (default true).
	RevokeOnLogout *bool `json:"revokeOnLogout"`
	// RevokeOnSessionEnd signs a session out of every upstream, revoking
	// its tokens there, when the session ends: its client revoked its
	// last grant at serve's embedded issuer (default true; see EndSession).
	RevokeOnSessionEnd *bool `json:"revokeOnSessionEnd"`
	// Login is the OpenID Provider the embedded issuer signs users in at.
	Login *Login `json:"login"`
	// ScopeDescriptions says, per scope, what it lets a client do; the
	// embedded issuer's consent and device pages show it (plain text, at
	// most maxScopeDescription bytes).
	ScopeDescriptions map[string]string `json:"scopeDescriptions"`
	// Backends are the MCP servers serve is put in front of (package
	// gateway): the first at the resource's path (/mcp).
	Backends []gateway.Backend `json:"backends"`
	// ToolScopes, ToolUpstreams and Redact are the gateway's policy on
	// the backends' tools and answers (gateway.Policy).
	ToolScopes    map[string][]string `json:"toolScopes"`
	ToolUpstreams map[string][]string `json:"toolUpstreams"`
	Redact        gateway.Redact      `json:"redact"`
	// GatewayLimits bound what callers hold in the gateway at once
	// (gateway.Limits; absent: its defaults).
	GatewayLimits gateway.Limits `json:"gatewayLimits"`
}

// GatewayPolicy is the config's policy on the backends' tools.
func (c *Config) GatewayPolicy() gateway.Policy {
	return gateway.Policy{ToolScopes: c.ToolScopes, ToolUpstreams: c.ToolUpstreams, Redact: c.Redact}
}

// maxScopeDescription bounds one scopeDescriptions value.
const maxScopeDescription = 300

// DefaultStateLifetime bounds a pending upstream sign-in (the state of a
// sign-in expires after 10 minutes).
const DefaultStateLifetime = 10 * time.Minute

// PKCE settings of an upstream (RFC 7636).
const (
	PKCES256 = "S256"
	PKCENone = "none"
)

// Upstream is an API serve calls as the user: serve is the OAuth client of
// its authorization server (RFC 6749 §4.1), named by issuer (discovered at
// start, RFC 8414 then OpenID Connect) or by explicit endpoints; with
// both, nothing is discovered and issuer is what an iss in the
// authorization response must be (RFC 9207).
type Upstream struct {
	ID                    string `json:"id"`
	Label                 string `json:"label"`
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorizationEndpoint"`
	TokenEndpoint         string `json:"tokenEndpoint"`
	RevocationEndpoint    string `json:"revocationEndpoint"`
	ClientID              string `json:"clientId"`
	// At most one of the three secret sources; none for a public client.
	ClientSecret     string `json:"clientSecret"`
	ClientSecretFile string `json:"clientSecretFile"`
	ClientSecretEnv  string `json:"clientSecretEnv"`
	// TokenEndpointAuthMethod is client_secret_basic (default with a
	// secret) or client_secret_post (RFC 7591 §2); none without a secret.
	TokenEndpointAuthMethod string   `json:"tokenEndpointAuthMethod"`
	Scopes                  []string `json:"scopes"`
	// PKCE is "S256" (default) or "none", for an upstream that cannot.
	PKCE string `json:"pkce"`
	// Resource is sent as the RFC 8707 resource indicator when set.
	Resource string `json:"resource"`
	// API is the URL the upstream_call tool POSTs to with the user's
	// upstream token.
	API string `json:"api"`
}

// UsesPKCE reports whether sign-ins to the upstream use PKCE S256.
func (u Upstream) UsesPKCE() bool { return u.PKCE != PKCENone }

// gatedMethods are the methods that need authentication.
var gatedMethods = []string{wire.MethodCreateSession, wire.MethodListSessions, wire.MethodDisposeSession, wire.MethodWhoami, wire.MethodEcho}

// LoadConfig reads and checks a config file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("invalid config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a config strictly (an unknown key is an error) and
// checks it for consistency. Errors name the key path, e.g.
// "schemes[0].validation.tokns: unknown key".
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	if err := decodeStrict(data, &c); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) check() error {
	if c.Login != nil {
		if err := c.Login.check(); err != nil {
			return fmt.Errorf("login.%w", err)
		}
	}
	if c.Resource != "" {
		if err := checkResource(c.Resource); err != nil {
			return fmt.Errorf("resource: %w", err)
		}
	}
	if len(c.Schemes) == 0 {
		return fmt.Errorf("schemes: at least one scheme is needed")
	}
	seen := map[string]bool{}
	for i, s := range c.Schemes {
		p := fmt.Sprintf("schemes[%d]", i)
		if s.ID == "" {
			return fmt.Errorf("%s.id: missing", p)
		}
		if seen[s.ID] {
			return fmt.Errorf("%s.id: duplicate scheme id %q", p, s.ID)
		}
		seen[s.ID] = true
		if s.Resource != "" {
			if err := checkSchemeResource(s.Resource); err != nil {
				return fmt.Errorf("%s.resource: %w", p, err)
			}
		}
		for j, as := range s.AuthorizationServers {
			if as == Embedded {
				continue
			}
			if err := resource.CheckFetchURL(as); err != nil {
				return fmt.Errorf("%s.authorizationServers[%d]: %w", p, j, err)
			}
		}
		if err := checkScopes(p+".scopesSupported", s.ScopesSupported); err != nil {
			return err
		}
		if err := checkValidation(p+".validation", s); err != nil {
			return err
		}
	}
	upstreams := map[string]bool{}
	for i, u := range c.Upstreams {
		if err := u.check(fmt.Sprintf("upstreams[%d]", i)); err != nil {
			return err
		}
		if upstreams[u.ID] {
			return fmt.Errorf("upstreams[%d].id: duplicate upstream id %q", i, u.ID)
		}
		upstreams[u.ID] = true
	}
	for method, ids := range c.MethodUpstreams {
		if !slices.Contains(gatedMethods, method) {
			return fmt.Errorf("methodUpstreams.%s: not a gated method (%s)", method, strings.Join(gatedMethods, ", "))
		}
		for i, id := range ids {
			if !upstreams[id] {
				return fmt.Errorf("methodUpstreams.%s[%d]: no upstream has the id %q (add it to upstreams)", method, i, id)
			}
		}
	}
	for scope, d := range c.ScopeDescriptions {
		if scope == "" || strings.ContainsAny(scope, " \t\"\\") {
			return fmt.Errorf("scopeDescriptions: %q is not a valid scope (RFC 6749 §3.3)", scope)
		}
		if len(d) > maxScopeDescription {
			return fmt.Errorf("scopeDescriptions.%s: longer than %d bytes", scope, maxScopeDescription)
		}
	}
	if err := c.checkGateway(upstreams); err != nil {
		return err
	}
	for method, scopes := range c.MethodScopes {
		if !slices.Contains(gatedMethods, method) {
			return fmt.Errorf("methodScopes.%s: not a gated method (%s)", method, strings.Join(gatedMethods, ", "))
		}
		if err := checkScopes("methodScopes."+method, scopes); err != nil {
			return err
		}
	}
	return nil
}

// checkGateway checks the backends and the policy on their tools.
func (c *Config) checkGateway(upstreams map[string]bool) error {
	if err := c.GatewayLimits.Check("gatewayLimits"); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, b := range c.Backends {
		if err := b.Check(fmt.Sprintf("backends[%d]", i)); err != nil {
			return err
		}
		if names[b.Name] {
			return fmt.Errorf("backends[%d].name: duplicate backend name %q", i, b.Name)
		}
		names[b.Name] = true
	}
	ids := make([]string, 0, len(upstreams))
	for id := range upstreams {
		ids = append(ids, id)
	}
	p := c.GatewayPolicy()
	return p.Check(c.Backends, ids)
}

func checkValidation(p string, s Scheme) error {
	v := s.Validation
	// Keys that belong to one type only.
	owners := []struct {
		key, typ string
		set      bool
	}{
		{"tokens", ValidationStatic, v.Tokens != nil},
		{"jwksUri", ValidationJWT, v.JWKSURI != ""},
		{"algorithms", ValidationJWT, v.Algorithms != nil},
		{"introspectionEndpoint", ValidationIntrospection, v.IntrospectionEndpoint != ""},
		{"clientId", ValidationIntrospection, v.ClientID != ""},
		{"clientSecret", ValidationIntrospection, v.ClientSecret != ""},
		{"cacheTTL", ValidationIntrospection, v.CacheTTL != 0},
		{"allowMissingAudience", ValidationIntrospection, v.AllowMissingAudience},
	}
	switch v.Type {
	case ValidationStatic, ValidationJWT, ValidationIntrospection:
	case "":
		return fmt.Errorf("%s.type: missing (static, jwt or introspection)", p)
	default:
		return fmt.Errorf("%s.type: unknown validation type %q (static, jwt or introspection)", p, v.Type)
	}
	for _, o := range owners {
		if o.set && o.typ != v.Type {
			return fmt.Errorf("%s.%s: only applies to type %q", p, o.key, o.typ)
		}
	}
	switch v.Type {
	case ValidationStatic:
		if len(v.Tokens) == 0 {
			return fmt.Errorf("%s.tokens: at least one token is needed", p)
		}
		seen := map[string]bool{}
		for i, t := range v.Tokens {
			tp := fmt.Sprintf("%s.tokens[%d]", p, i)
			if t.Token == "" {
				return fmt.Errorf("%s.token: missing", tp)
			}
			if seen[t.Token] {
				return fmt.Errorf("%s.token: the same token appears twice", tp)
			}
			seen[t.Token] = true
			if t.Subject == "" {
				return fmt.Errorf("%s.subject: missing", tp)
			}
			if err := checkScopes(tp+".scopes", t.Scopes); err != nil {
				return err
			}
		}
	case ValidationJWT:
		if len(s.AuthorizationServers) == 0 {
			return fmt.Errorf("%s.authorizationServers: a jwt scheme needs at least one (the tokens' iss)", strings.TrimSuffix(p, ".validation"))
		}
		if v.JWKSURI != "" {
			if err := resource.CheckFetchURL(v.JWKSURI); err != nil {
				return fmt.Errorf("%s.jwksUri: %w", p, err)
			}
		}
		for i, a := range v.Algorithms {
			if !slices.Contains(resource.AllowedAlgorithms, a) {
				return fmt.Errorf("%s.algorithms[%d]: %q is not allowed (use %s)", p, i, a, strings.Join(resource.AllowedAlgorithms, ", "))
			}
		}
	case ValidationIntrospection:
		if v.IntrospectionEndpoint != "" {
			if err := resource.CheckFetchURL(v.IntrospectionEndpoint); err != nil {
				return fmt.Errorf("%s.introspectionEndpoint: %w", p, err)
			}
		} else if len(s.AuthorizationServers) == 0 {
			return fmt.Errorf("%s.introspectionEndpoint: missing, and there is no authorization server to discover it from", p)
		}
		if v.ClientID == "" {
			return fmt.Errorf("%s.clientId: missing (introspection needs client credentials)", p)
		}
		if v.ClientSecret == "" {
			return fmt.Errorf("%s.clientSecret: missing (introspection needs client credentials)", p)
		}
	}
	return nil
}

func (u Upstream) check(p string) error {
	if u.ID == "" {
		return fmt.Errorf("%s.id: missing", p)
	}
	if !isUpstreamID(u.ID) {
		return fmt.Errorf("%s.id: %q must be letters, digits, '-' and '_' only", p, u.ID)
	}
	if u.ClientID == "" {
		return fmt.Errorf("%s.clientId: missing (the client id the upstream registered serve under)", p)
	}
	switch {
	case (u.AuthorizationEndpoint == "") != (u.TokenEndpoint == ""):
		return fmt.Errorf("%s: give both authorizationEndpoint and tokenEndpoint, or neither and issuer (discovered with RFC 8414)", p)
	case u.Issuer == "" && u.AuthorizationEndpoint == "":
		return fmt.Errorf("%s: needs issuer (discovered with RFC 8414) or both authorizationEndpoint and tokenEndpoint", p)
	}
	for _, e := range []struct{ key, url string }{
		{"issuer", u.Issuer}, {"authorizationEndpoint", u.AuthorizationEndpoint}, {"tokenEndpoint", u.TokenEndpoint},
		{"revocationEndpoint", u.RevocationEndpoint}, {"api", u.API},
	} {
		if e.url != "" {
			if err := resource.CheckFetchURL(e.url); err != nil {
				return fmt.Errorf("%s.%s: %w", p, e.key, err)
			}
		}
	}
	if u.Resource != "" {
		if err := checkResource(u.Resource); err != nil {
			return fmt.Errorf("%s.resource: %w", p, err)
		}
	}
	sources := 0
	for _, s := range []string{u.ClientSecret, u.ClientSecretFile, u.ClientSecretEnv} {
		if s != "" {
			sources++
		}
	}
	if sources > 1 {
		return fmt.Errorf("%s.clientSecret: give one of clientSecret, clientSecretFile and clientSecretEnv", p)
	}
	switch u.TokenEndpointAuthMethod {
	case "":
	case "client_secret_basic", "client_secret_post":
		if sources == 0 {
			return fmt.Errorf("%s.tokenEndpointAuthMethod: %s needs a secret: set clientSecret, clientSecretFile or clientSecretEnv", p, u.TokenEndpointAuthMethod)
		}
	case "none":
		if sources > 0 {
			return fmt.Errorf("%s.tokenEndpointAuthMethod: none sends no secret: remove the client secret or use client_secret_basic", p)
		}
	default:
		return fmt.Errorf("%s.tokenEndpointAuthMethod: %q is not supported (client_secret_basic, client_secret_post or none)", p, u.TokenEndpointAuthMethod)
	}
	switch u.PKCE {
	case "", PKCES256, PKCENone:
	default:
		return fmt.Errorf("%s.pkce: %q is not supported (S256, or none for an upstream that cannot do PKCE)", p, u.PKCE)
	}
	if u.PKCE == PKCENone && sources == 0 {
		return fmt.Errorf("%s.pkce: none needs a client secret: a public client without PKCE is refused (RFC 9700 §2.1.1)", p)
	}
	return checkScopes(p+".scopes", u.Scopes)
}

func isUpstreamID(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return len(s) <= 64
}

func checkScopes(p string, scopes []string) error {
	for i, s := range scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			return fmt.Errorf("%s[%d]: %q is not a valid scope (RFC 6749 §3.3)", p, i, s)
		}
	}
	return nil
}

func checkResource(r string) error {
	u, err := url.Parse(r)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http or https URL", r)
	}
	if u.Fragment != "" {
		return fmt.Errorf("%q must not have a fragment (RFC 8707 §2)", r)
	}
	return nil
}

// checkSchemeResource accepts a scheme's resource identifier: an absolute
// https URL, or http on a loopback host (as checkFetchURL), without a
// fragment (RFC 8707 §2).
func checkSchemeResource(r string) error {
	if err := resource.CheckFetchURL(r); err != nil {
		return err
	}
	if u, _ := url.Parse(r); u.Fragment != "" {
		return fmt.Errorf("%q must not have a fragment (RFC 8707 §2)", r)
	}
	return nil
}

// derivedResource is the resource a scheme without one of its own gets
// when it is not schemes[0]: the host's resource with the scheme id
// appended as a path segment (https://h/mcp → https://h/mcp/ID), so that its RFC 9728
// document has a path-aware well-known address of its own (§3.1).
func derivedResource(hostResource, schemeID string) string {
	u, err := url.Parse(hostResource)
	if err != nil { // checked by Config.check
		return hostResource + "/" + url.PathEscape(schemeID)
	}
	u.RawPath = ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + schemeID
	return u.String()
}

// Resolve fills in what depends on serve's listener: an empty resource
// becomes origin + "/mcp", and the authorization server "embedded" becomes
// origin (e.g. "http://127.0.0.1:7777"); then the schemes get their
// default resources (see schemeResources).
func (c *Config) Resolve(origin string) {
	origin = strings.TrimSuffix(origin, "/")
	if c.Resource == "" {
		c.Resource = origin + "/mcp"
	}
	c.schemeResources()
	for i := range c.Schemes {
		for j, as := range c.Schemes[i].AuthorizationServers {
			if as == Embedded {
				c.Schemes[i].AuthorizationServers[j] = origin
			}
		}
	}
}

// schemeResources gives each scheme without a resource of its own its
// default, once the host's resource is known: the host's resource for
// schemes[0] (so a config with one scheme is served as before, and /mcp,
// whose tokens must name the host's resource, has a scheme), and
// derivedResource for the others.
func (c *Config) schemeResources() {
	if c.Resource == "" {
		return
	}
	for i := range c.Schemes {
		switch {
		case c.Schemes[i].Resource != "":
		case i == 0:
			c.Schemes[i].Resource = c.Resource
		default:
			c.Schemes[i].Resource = derivedResource(c.Resource, c.Schemes[i].ID)
		}
	}
}

func (c *Config) checkResolved() error {
	if c.Resource == "" {
		return fmt.Errorf("config has no resource: call Resolve first")
	}
	if err := checkResource(c.Resource); err != nil {
		return fmt.Errorf("resource: %w", err)
	}
	owner := map[string]int{}
	mcp := false
	for i, s := range c.Schemes {
		if slices.Contains(s.AuthorizationServers, Embedded) {
			return fmt.Errorf("scheme %s: authorization server %q is not resolved: call Resolve first", s.ID, Embedded)
		}
		if s.Resource == "" {
			return fmt.Errorf("scheme %s has no resource: call Resolve first", s.ID)
		}
		if j, ok := owner[s.Resource]; ok {
			return fmt.Errorf("schemes[%d].resource: %s is already schemes[%d]'s (%s); each scheme needs a resource of its own: set a distinct one", i, s.Resource, j, c.Schemes[j].ID)
		}
		owner[s.Resource] = i
		mcp = mcp || s.Resource == c.Resource
	}
	if !mcp {
		return fmt.Errorf("schemes: none has the host's resource %s, which /mcp serves; leave schemes[0].resource unset or set one scheme's resource to %s", c.Resource, c.Resource)
	}
	return nil
}
