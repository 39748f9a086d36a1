package resource

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Validation types of a scheme.
const (
	ValidationStatic        = "static"
	ValidationJWT           = "jwt"
	ValidationIntrospection = "introspection"
)

// DefaultCacheTTL bounds how long an introspection result is trusted.
const DefaultCacheTTL = 30 * time.Second

// AllowedAlgorithms is the JWS allow-list (RFC 8725 §3.1).
var AllowedAlgorithms = []string{"ES256", "RS256", "EdDSA"}

// Scheme is one auth requirement of a protected resource (PROTOCOL.md
// "Auth requirements"): who issues its tokens and how they are checked.
// Its JSON keys are part of serve's config file (docs/production.md, "Configuration file"),
// which checks them (host.ParseConfig).
type Scheme struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Resource is the scheme's own RFC 8707 / RFC 9728 resource
	// identifier: the audience its tokens must carry, and what the
	// published dialect's authenticate and auth/required name. Empty:
	// host.Config.Resolve gives schemes[0] the host's resource and every other scheme
	// derivedResource (RESOURCE/ID).
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorizationServers"`
	ScopesSupported      []string `json:"scopesSupported"`
	// Required defaults to true.
	Required   *bool      `json:"required"`
	Validation Validation `json:"validation"`
}

// IsRequired reports whether gated methods need this scheme.
func (s Scheme) IsRequired() bool { return s.Required == nil || *s.Required }

// CacheTTL is how long a validation of the scheme's tokens is trusted
// (besides the token's own expiry): cacheTTL for introspection (default
// DefaultCacheTTL), zero (until the token expires) for the others.
func (s Scheme) CacheTTL() time.Duration {
	if s.Validation.Type != ValidationIntrospection {
		return 0
	}
	if s.Validation.CacheTTL == 0 {
		return DefaultCacheTTL
	}
	return time.Duration(s.Validation.CacheTTL)
}

// Validation says how a scheme's tokens are checked. Which keys apply
// depends on Type.
type Validation struct {
	Type string `json:"type"`
	// static
	Tokens []StaticToken `json:"tokens"`
	// jwt
	JWKSURI    string   `json:"jwksUri"`
	Algorithms []string `json:"algorithms"`
	// introspection (RFC 7662)
	IntrospectionEndpoint string   `json:"introspectionEndpoint"`
	ClientID              string   `json:"clientId"`
	ClientSecret          string   `json:"clientSecret"`
	CacheTTL              Duration `json:"cacheTTL"`
	// AllowMissingAudience accepts an active token whose introspection
	// answer has no aud. Without it such a token is refused: nothing
	// says it was issued for this resource (RFC 8707 §2, RFC 9068 §4),
	// and an authorization server that omits aud (ORY Hydra for a token
	// issued without an audience) would let a token meant for another
	// resource server in.
	AllowMissingAudience bool `json:"allowMissingAudience"`
}

// StaticToken is a token accepted without asking anyone: for tests
// and demos. ExpiresIn counts from the moment the token is first seen.
type StaticToken struct {
	Token     string   `json:"token"`
	Subject   string   `json:"subject"`
	Scopes    []string `json:"scopes"`
	ExpiresIn Duration `json:"expiresIn"`
	ClientID  string   `json:"clientId"`
}

// Duration is a positive Go duration string in JSON ("90s", "1h").
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`must be a duration string such as "30s" or "1h"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`%q is not a duration (use Go syntax such as "30s" or "1h")`, s)
	}
	if v <= 0 {
		return fmt.Errorf("%q must be positive", s)
	}
	*d = Duration(v)
	return nil
}

// NewValidator is the validator of a scheme's tokens, by its validation
// type (static.go, jwt.go, introspect.go), for the audience s.Resource.
// client fetches metadata, keys and introspections; now is the clock.
func NewValidator(s Scheme, client *http.Client, now func() time.Time) Validator {
	switch s.Validation.Type {
	case ValidationJWT:
		return newJWTValidator(s, s.Resource, client, now)
	case ValidationIntrospection:
		return newIntrospectionValidator(s, s.Resource, client, now)
	}
	return newStaticValidator(s, now)
}

// CheckFetchURL accepts an https URL, or http on a loopback host only:
// where a resource server may fetch metadata, keys or introspections.
func CheckFetchURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q must use https (http is allowed on loopback only)", raw)
	default:
		return fmt.Errorf("%q must be an https URL", raw)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
