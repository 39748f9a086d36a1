package gateway

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/flows"
)

// Process modes of a stdio backend. ProcessPerSession (the default): one
// process per MCP session; each MCP session belongs to one broker session,
// so an upstream token in the environment (upstreamEnv) is that session's
// only. ProcessShared: one process serving every caller (see shared.go);
// it cannot hold a per-session upstream token.
const (
	ProcessPerSession = "session"
	ProcessShared     = "shared"
)

// IdentityAssertion is the identity mode of a backend that gets an
// assertion minted for its own audience.
const IdentityAssertion = "assertion"

// Defaults and hard bounds.
const (
	// DefaultTimeout is how long a backend may stay silent on a request
	// (no message, no progress) before the caller gets an error.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxMessage bounds one message either way.
	DefaultMaxMessage = 4 << 20
	// MaxArgumentDepth bounds the nesting of tools/call arguments.
	MaxArgumentDepth = 64
	// MaxSessions bounds the MCP sessions of one backend; past it a new
	// initialize is refused (503) rather than an old session evicted.
	MaxSessions = 4096
	// MaxProcesses bounds the processes of one stdio backend (one per
	// session): past it a new initialize is refused likewise.
	MaxProcesses = 64
	// MaxInFlight bounds the requests in flight on one stdio process.
	MaxInFlight = 256
)

// Backend is one MCP server serve fronts: the config key backends[i], or
// the --backend flag.
type Backend struct {
	// Name names the backend in errors, logs and NAME/tool policy keys.
	Name string `json:"name"`
	// URL is a Streamable HTTP endpoint; or Command a stdio server.
	URL     string            `json:"url,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// Path is where serve mounts it (default /mcp for the first backend,
	// /mcp/NAME for the others).
	Path string `json:"path,omitempty"`
	// Process is ProcessPerSession (the default) or ProcessShared.
	Process string `json:"process,omitempty"`
	// Upstream names a broker upstream whose token, for the caller's
	// broker session, the backend gets in UpstreamHeader (HTTP) or
	// UpstreamEnv (stdio). The caller is asked to sign in first.
	Upstream       string `json:"upstream,omitempty"`
	UpstreamHeader string `json:"upstreamHeader,omitempty"`
	UpstreamEnv    string `json:"upstreamEnv,omitempty"`
	// Identity is "" (the backend gets no credential of the caller),
	// IdentityAssertion (HTTP only: Authorization: Bearer with a
	// short-lived RFC 9068 token of serve's embedded issuer for the
	// backend's URL as audience, naming the caller) or IdentityExchange
	// (HTTP only: Authorization: Bearer with the token TokenExchange's
	// authorization server issues for the backend in exchange for the
	// caller's, RFC 8693).
	Identity      string         `json:"identity,omitempty"`
	TokenExchange *TokenExchange `json:"tokenExchange,omitempty"`
	// Timeout is how long the backend may stay silent on a request
	// (default DefaultTimeout).
	Timeout Duration `json:"timeout,omitempty"`
	// MaxMessage bounds one message either way (default DefaultMaxMessage).
	MaxMessage int64 `json:"maxMessage,omitempty"`
}

// Policy is the gateway's top-level config: which tools need which
// scopes and upstream sign-ins, and what to redact. A key is a tool name
// or NAME/tool for backend NAME's tool; NAME/tool wins.
type Policy struct {
	ToolScopes    map[string][]string `json:"toolScopes,omitempty"`
	ToolUpstreams map[string][]string `json:"toolUpstreams,omitempty"`
	Redact        Redact              `json:"redact,omitzero"`
}

// Redact configures response scrubbing beyond the tokens serve holds,
// which are always replaced.
type Redact struct {
	// Patterns are Go regular expressions (RE2 syntax).
	Patterns []string `json:"patterns,omitempty"`
	// Presets name built-in patterns (see Presets).
	Presets []string `json:"presets,omitempty"`
}

// Presets are the named redaction patterns.
var Presets = map[string]string{
	"email":  `[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,
	"jwt":    `eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`,
	"bearer": `(?i)bearer [A-Za-z0-9._~+/=-]{16,}`,
}

// Duration is a Go duration string in JSON ("90s").
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("%q is not a positive duration such as \"30s\"", s)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ParseFlag turns the --backend flag into a Backend: a URL, or
// "stdio:COMMAND ARGS…" split on blanks.
func ParseFlag(v string) (Backend, error) {
	if rest, ok := strings.CutPrefix(v, "stdio:"); ok {
		f := strings.Fields(rest)
		if len(f) == 0 {
			return Backend{}, fmt.Errorf("--backend %q: name the command after stdio:, e.g. 'stdio:npx -y @modelcontextprotocol/server-everything'", v)
		}
		return Backend{Name: "backend", Command: f[0], Args: f[1:]}, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Backend{}, fmt.Errorf("--backend %q: want an http(s) URL of a Streamable HTTP MCP endpoint or 'stdio:COMMAND ARGS…'", v)
	}
	return Backend{Name: "backend", URL: v}, nil
}

// Check checks a backend config; p prefixes errors with its key path.
func (b *Backend) Check(p string) error {
	switch {
	case b.Name == "" || strings.ContainsAny(b.Name, "/ \t"):
		return fmt.Errorf("%s.name: want a name without blanks or slashes", p)
	case (b.URL == "") == (b.Command == ""):
		return fmt.Errorf("%s: set exactly one of url (Streamable HTTP) and command (stdio)", p)
	case b.URL != "" && (len(b.Args) > 0 || len(b.Env) > 0 || b.Cwd != "" || b.UpstreamEnv != ""):
		return fmt.Errorf("%s: args, env, cwd and upstreamEnv are for a stdio command, not a url", p)
	case b.Command != "" && b.UpstreamHeader != "":
		return fmt.Errorf("%s.upstreamHeader: a stdio command gets the upstream token in upstreamEnv", p)
	case b.Process != "" && b.Process != ProcessPerSession && b.Process != ProcessShared:
		return fmt.Errorf("%s.process: want %q (one process per MCP session) or %q (one process for every caller)", p, ProcessPerSession, ProcessShared)
	case b.Process == ProcessShared && b.Command == "":
		return fmt.Errorf("%s.process: %q is for a stdio command, not a url", p, ProcessShared)
	case b.Process == ProcessShared && b.UpstreamEnv != "":
		return fmt.Errorf("%s.upstreamEnv: a shared process serves every caller, so it cannot hold one session's upstream token; use process %q", p, ProcessPerSession)
	case b.Upstream != "" && b.UpstreamHeader == "" && b.UpstreamEnv == "":
		return fmt.Errorf("%s.upstream: say where the backend gets the token: upstreamHeader or upstreamEnv", p)
	case b.Upstream == "" && (b.UpstreamHeader != "" || b.UpstreamEnv != ""):
		return fmt.Errorf("%s.upstream: name the broker upstream whose token to send", p)
	case b.Path != "" && !strings.HasPrefix(b.Path, "/"):
		return fmt.Errorf("%s.path: want an absolute path such as /mcp/%s", p, b.Name)
	case b.Identity != "" && b.Identity != IdentityAssertion && b.Identity != IdentityExchange:
		return fmt.Errorf("%s.identity: want %q, %q or nothing", p, IdentityAssertion, IdentityExchange)
	case b.Identity != "" && b.URL == "":
		return fmt.Errorf("%s.identity: an assertion goes in an HTTP header; a stdio command gets none", p)
	case b.Identity == IdentityExchange && b.TokenExchange == nil:
		return fmt.Errorf("%s.tokenExchange: identity %q needs it: the authorization server (issuer), serve's client there (clientId) and its secret", p, IdentityExchange)
	case b.Identity != IdentityExchange && b.TokenExchange != nil:
		return fmt.Errorf("%s.tokenExchange: set identity %q to use it", p, IdentityExchange)
	case b.Identity != "" && strings.EqualFold(b.UpstreamHeader, "authorization"):
		return fmt.Errorf("%s.upstreamHeader: Authorization carries the identity assertion", p)
	case b.MaxMessage < 0:
		return fmt.Errorf("%s.maxMessage: want a positive byte count", p)
	}
	if b.TokenExchange != nil {
		if err := b.TokenExchange.check(p); err != nil {
			return err
		}
	}
	if b.UpstreamHeader != "" {
		switch strings.ToLower(b.UpstreamHeader) {
		case "authorization", "cookie", "dpop", "mcp-session-id", "mcp-protocol-version", "host", "content-type", "content-length":
			return fmt.Errorf("%s.upstreamHeader: %s is not free for a token", p, b.UpstreamHeader)
		}
	}
	if b.URL != "" {
		u, err := url.Parse(b.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s.url: want an http(s) URL", p)
		}
	}
	return nil
}

// Check checks the policy against the backends' names and the broker's
// upstream ids.
func (p *Policy) Check(backends []Backend, upstreams []string) error {
	for key, ids := range p.ToolUpstreams {
		if err := checkToolKey("toolUpstreams", key, backends); err != nil {
			return err
		}
		for i, id := range ids {
			if !slices.Contains(upstreams, id) {
				return fmt.Errorf("toolUpstreams.%s[%d]: no upstream has the id %q (add it to upstreams)", key, i, id)
			}
		}
	}
	for key, scopes := range p.ToolScopes {
		if err := checkToolKey("toolScopes", key, backends); err != nil {
			return err
		}
		for i, s := range scopes {
			if s == "" || strings.ContainsAny(s, " \t\"\\") {
				return fmt.Errorf("toolScopes.%s[%d]: %q is not a scope token (RFC 6749 §3.3)", key, i, s)
			}
		}
	}
	for i, s := range p.Redact.Presets {
		if Presets[s] == "" {
			names := make([]string, 0, len(Presets))
			for n := range Presets {
				names = append(names, n)
			}
			slices.Sort(names)
			return fmt.Errorf("redact.presets[%d]: unknown preset %q (one of %s)", i, s, strings.Join(names, ", "))
		}
	}
	for i, s := range p.Redact.Patterns {
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("redact.patterns[%d]: %v", i, err)
		}
	}
	for i, b := range backends {
		if b.Upstream != "" && !slices.Contains(upstreams, b.Upstream) {
			return fmt.Errorf("backends[%d].upstream: no upstream has the id %q (add it to upstreams)", i, b.Upstream)
		}
	}
	return nil
}

// checkToolKey checks that a NAME/tool key names a backend; with no
// backends in the config (--backend gives the one), New checks it.
func checkToolKey(key, tool string, backends []Backend) error {
	name, _, ok := strings.Cut(tool, "/")
	if !ok || backends == nil {
		return nil
	}
	if !slices.ContainsFunc(backends, func(b Backend) bool { return b.Name == name }) {
		return fmt.Errorf("%s.%s: no backend is named %q", key, tool, name)
	}
	return nil
}

// scopesFor and upstreamsFor look a tool up: NAME/tool first.
func (p *Policy) scopesFor(backend, tool string) []string {
	if len(p.ToolScopes) == 0 {
		return nil
	}
	if s, ok := p.ToolScopes[backend+"/"+tool]; ok {
		return s
	}
	return p.ToolScopes[tool]
}

func (p *Policy) upstreamsFor(backend, tool string) []string {
	if len(p.ToolUpstreams) == 0 {
		return nil
	}
	if s, ok := p.ToolUpstreams[backend+"/"+tool]; ok {
		return s
	}
	return p.ToolUpstreams[tool]
}

// IdentityExchange is the identity mode of a backend that gets an access
// token the configured authorization server issued for it in exchange
// for the caller's own (RFC 8693 token exchange).
const IdentityExchange = "exchange"

// Bounds of the token exchange.
const (
	// MaxExchangedTokens bounds the exchanged tokens one backend keeps;
	// at the bound a new one is used for its call and not kept.
	MaxExchangedTokens = 4096
	// exchangeEarly is how long before its expiry an exchanged token is
	// no longer reused (at most half its lifetime).
	exchangeEarly = 30 * time.Second
	// exchangeTimeout bounds one exchange (or the discovery of the token
	// endpoint), whoever waits for it.
	exchangeTimeout = 10 * time.Second
)

// TokenExchange configures how a backend with identity "exchange" gets
// its token (the config key backends[].tokenExchange): serve, as a
// confidential client of Issuer, exchanges each caller's access token
// (RFC 8693 §2.1, subject_token_type access_token) at Issuer's token
// endpoint for an access token for the backend: RFC 8707 resource the
// backend's URL (or Resource), audience Audience when set, scope Scopes
// or the caller's.
type TokenExchange struct {
	// Issuer is the authorization server: the issuer of the callers'
	// tokens (a caller's token of another issuer is never sent to it).
	// Its token endpoint comes from its RFC 8414 / OpenID Connect
	// Discovery metadata unless TokenEndpoint names it. serve's config
	// may leave it out: serve then takes the one authorization server of
	// the schemes of the backend's resource (commands/serve_gateway.go).
	Issuer        string `json:"issuer"`
	TokenEndpoint string `json:"tokenEndpoint,omitempty"`
	// ClientID is serve's client at Issuer, which authenticates with
	// AuthMethod: client_secret_basic (the default), client_secret_post
	// (with one of ClientSecret, ClientSecretFile, ClientSecretEnv) or
	// private_key_jwt (RFC 7523 §2.2, PrivateKeyFile a PEM key).
	ClientID         string `json:"clientId"`
	ClientSecret     string `json:"clientSecret,omitempty"`
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
	ClientSecretEnv  string `json:"clientSecretEnv,omitempty"`
	AuthMethod       string `json:"authMethod,omitempty"`
	PrivateKeyFile   string `json:"privateKeyFile,omitempty"`
	// Resource is the RFC 8707 resource asked for (default: the
	// backend's URL); Audience, when set, the RFC 8693 audience.
	Resource string `json:"resource,omitempty"`
	Audience string `json:"audience,omitempty"`
	// Scopes are the scopes asked for (default: the caller's).
	Scopes []string `json:"scopes,omitempty"`
}

// check checks the tokenExchange config of a backend; p is its key path.
func (x *TokenExchange) check(p string) error {
	p += ".tokenExchange"
	secrets := 0
	for _, s := range []string{x.ClientSecret, x.ClientSecretFile, x.ClientSecretEnv} {
		if s != "" {
			secrets++
		}
	}
	switch {
	case x.Issuer != "" && flows.CheckURL(x.Issuer) != nil:
		return fmt.Errorf("%s.issuer: want an https URL (http on loopback only)", p)
	case x.TokenEndpoint != "" && flows.CheckURL(x.TokenEndpoint) != nil:
		return fmt.Errorf("%s.tokenEndpoint: want an https URL (http on loopback only)", p)
	case x.Resource != "" && flows.CheckURL(x.Resource) != nil:
		return fmt.Errorf("%s.resource: want an absolute http(s) URL", p)
	case x.ClientID == "":
		return fmt.Errorf("%s.clientId: name serve's client at the authorization server", p)
	case secrets > 1:
		return fmt.Errorf("%s.clientSecret: give one of clientSecret, clientSecretFile and clientSecretEnv", p)
	}
	for i, s := range x.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			return fmt.Errorf("%s.scopes[%d]: %q is not a scope token (RFC 6749 §3.3)", p, i, s)
		}
	}
	switch x.AuthMethod {
	case "", flows.AuthMethodClientSecretBasic, flows.AuthMethodClientSecretPost:
		if secrets == 0 {
			return fmt.Errorf("%s.clientSecret: serve authenticates as a confidential client: set clientSecret, clientSecretFile or clientSecretEnv (or authMethod %s with privateKeyFile)", p, flows.AuthMethodPrivateKeyJWT)
		}
		if x.PrivateKeyFile != "" {
			return fmt.Errorf("%s.privateKeyFile: for authMethod %s", p, flows.AuthMethodPrivateKeyJWT)
		}
	case flows.AuthMethodPrivateKeyJWT:
		if x.PrivateKeyFile == "" || secrets > 0 {
			return fmt.Errorf("%s.privateKeyFile: authMethod %s signs with a private key (PEM) and sends no secret", p, flows.AuthMethodPrivateKeyJWT)
		}
	default:
		return fmt.Errorf("%s.authMethod: want %s, %s or %s", p, flows.AuthMethodClientSecretBasic, flows.AuthMethodClientSecretPost, flows.AuthMethodPrivateKeyJWT)
	}
	return nil
}
