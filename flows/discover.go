package flows

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// ResourceDiscovery is what an HTTP resource says about its authorization
// (PROTOCOL.md "Client discovery order").
type ResourceDiscovery struct {
	// Target is the URL discovery started from, as given.
	Target string
	// Resource is the RFC 8707 resource indicator to send, exactly as the
	// protected resource metadata names it (in the legacy fallback: the
	// target without its fragment).
	Resource string
	// MetadataURL is where the protected resource metadata was found
	// (empty in the legacy fallback).
	MetadataURL string
	// Metadata is the RFC 9728 document (nil in the legacy fallback).
	Metadata *wire.ProtectedResourceMetadata
	// AuthorizationServers are the issuers to ask, in the resource's order.
	AuthorizationServers []string
	// Status is the HTTP status of the unauthenticated request.
	Status int
	// Scope, Error and ErrorDescription come from the Bearer challenge of
	// that answer (RFC 6750 §3), when there was one.
	Scope            string
	Error            string
	ErrorDescription string
	// Legacy is set when the resource publishes no protected resource
	// metadata at all and its origin is taken as the authorization server
	// (MCP 2025-03-26); Warning then says so, for the user.
	Legacy  bool
	Warning string
}

// ScopesSupported returns the resource's scopes_supported (none in the
// legacy fallback).
func (d *ResourceDiscovery) ScopesSupported() []string {
	if d.Metadata == nil {
		return nil
	}
	return d.Metadata.ScopesSupported
}

// probeBody is an MCP initialize request: what an MCP endpoint answers with
// 401 and its challenge when it needs a token.
const probeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agentauth","version":"0"}}}`

// DiscoverResource finds the protected resource metadata of an HTTP target
// (RFC 9728, MCP authorization):
//  1. POST an MCP initialize without a token and read the Bearer challenge
//     (RFC 6750 §3, RFC 9728 §5.1: resource_metadata, scope, error);
//  2. fetch resource_metadata, or else the path-aware
//     /.well-known/oauth-protected-resource/<path>, then the root one
//     (RFC 9728 §3.1); a 4xx moves on to the next;
//  3. require the document's resource to equal the target, or to be a
//     same-origin path prefix of it (RFC 9728 §3.3 as MCP applies it);
//  4. with no document at all, fall back to the MCP 2025-03-26 behaviour:
//     the target's origin is the authorization server (Legacy, Warning).
func DiscoverResource(ctx context.Context, hc *http.Client, target string, opts ...FetchOption) (*ResourceDiscovery, error) {
	o := newFetchOptions(opts)
	if _, err := checkURL("target", target); err != nil {
		return nil, fmt.Errorf("cannot discover %s: %w", target, err)
	}
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(probeBody))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	pctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	resp, err := guard(hc).Do(req.WithContext(pctx))
	if err != nil {
		return nil, fetchError(ctx, pctx, req, o.timeout, err)
	}
	resp.Body.Close() // only the status and the challenge matter; an event stream may never end
	c, _ := wire.BearerChallenge(resp.Header.Values("WWW-Authenticate"))
	return DiscoverResourceFromChallenge(ctx, hc, target, resp.StatusCode, c, opts...)
}

// DiscoverResourceFromChallenge is DiscoverResource without the probe: it
// starts from the status and Bearer challenge (Scheme empty for none) the
// target already answered a request with, such as the 401 or the 403
// insufficient_scope of an MCP request (RFC 6750 §3, RFC 9728 §5.1), so
// that scope and resource_metadata are those of the refused request.
func DiscoverResourceFromChallenge(ctx context.Context, hc *http.Client, target string, status int, c wire.AuthChallenge, opts ...FetchOption) (*ResourceDiscovery, error) {
	o := newFetchOptions(opts)
	hc = guard(hc)
	tu, err := checkURL("target", target)
	if err != nil {
		return nil, fmt.Errorf("cannot discover %s: %w", target, err)
	}
	d := &ResourceDiscovery{Target: target, Status: status}
	hint := c.Param("resource_metadata")
	d.Scope, d.Error, d.ErrorDescription = c.Param("scope"), c.Param("error"), c.Param("error_description")

	var candidates []string
	if hint != "" {
		if _, err := checkURL("resource_metadata", hint); err != nil {
			return nil, fmt.Errorf("cannot use the WWW-Authenticate of %s: %w", target, err)
		}
		candidates = []string{hint}
	} else {
		candidates = protectedResourceMetadataURLs(tu)
	}
	for _, mdURL := range candidates {
		var md wire.ProtectedResourceMetadata
		err := getJSON(ctx, hc, mdURL, o, &md)
		if hint == "" && isAbsent(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot fetch the protected resource metadata: %w", err)
		}
		if err := checkResourceMetadata(&md, mdURL, target, tu); err != nil {
			return nil, err
		}
		d.MetadataURL, d.Metadata = mdURL, &md
		d.Resource, d.AuthorizationServers = md.Resource, md.AuthorizationServers
		return d, nil
	}

	origin := tu.Scheme + "://" + tu.Host
	d.Legacy = true
	d.Resource, _, _ = strings.Cut(target, "#")
	d.AuthorizationServers = []string{origin}
	d.Warning = fmt.Sprintf("%s publishes no protected resource metadata (RFC 9728); "+
		"falling back to MCP 2025-03-26 discovery, with %s as its authorization server", target, origin)
	return d, nil
}

// checkResourceMetadata checks the protected resource metadata md fetched
// from mdURL for target (tu parsed): its resource must identify the target
// (RFC 9728 §3.3, resourceMatches), and it must name at least one
// authorization server, each passing CheckURL.
func checkResourceMetadata(md *wire.ProtectedResourceMetadata, mdURL, target string, tu *url.URL) error {
	if !resourceMatches(md.Resource, tu) {
		return fmt.Errorf("%w: %s names resource %q, but the target is %q (RFC 9728 §3.3)",
			ErrResourceMismatch, mdURL, md.Resource, target)
	}
	if len(md.AuthorizationServers) == 0 {
		return fmt.Errorf("%w: %s", ErrNoAuthorizationServers, mdURL)
	}
	for _, as := range md.AuthorizationServers {
		if _, err := checkURL("authorization server", as); err != nil {
			return fmt.Errorf("cannot use the protected resource metadata at %s: %w", mdURL, err)
		}
	}
	return nil
}

// protectedResourceMetadataURLs lists the RFC 9728 §3.1 well-known URLs of a
// resource: path-aware first (when it has a path), then the root.
func protectedResourceMetadataURLs(u *url.URL) []string {
	root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	if p := u.EscapedPath(); p != "" && p != "/" {
		pathAware := root + p
		if u.RawQuery != "" {
			pathAware += "?" + u.RawQuery
		}
		return []string{pathAware, root}
	}
	return []string{root}
}

// resourceMatches reports whether a protected resource metadata's resource
// identifies the target: the same URL, or a same-origin path prefix of it
// (ending at a path segment boundary).
func resourceMatches(resource string, target *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" || (r.RawQuery != "" && r.RawQuery != target.RawQuery) {
		return false
	}
	if origin(r) != origin(target) {
		return false
	}
	rp, tp := r.EscapedPath(), target.EscapedPath()
	if rp == "" {
		rp = "/"
	}
	if tp == "" {
		tp = "/"
	}
	if rp == tp {
		return true
	}
	if !strings.HasSuffix(rp, "/") {
		rp += "/"
	}
	return strings.HasPrefix(tp, rp)
}

// origin is scheme://host[:port] lowercased, without a default port.
// Not wire.Origin: that one counts ws as http (an agent host's two faces),
// which a resource identifier must not.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// FetchAuthServerMetadata fetches an issuer's metadata, trying in order
// (RFC 8414 §3.1, OpenID Connect Discovery §4, MCP authorization):
// /.well-known/oauth-authorization-server/<path>,
// /.well-known/openid-configuration/<path> and
// <path>/.well-known/openid-configuration; for an issuer without a path, the
// two root documents. A 4xx moves on to the next. The document's issuer must
// equal the one asked for (RFC 8414 §3.3), code_challenge_methods_supported
// must list S256 (absent is refused), and every endpoint must pass CheckURL.
func FetchAuthServerMetadata(ctx context.Context, hc *http.Client, issuer string, opts ...FetchOption) (*wire.AuthServerMetadata, error) {
	o := newFetchOptions(opts)
	hc = guard(hc)
	iu, err := checkURL("issuer", issuer)
	if err != nil {
		return nil, fmt.Errorf("cannot discover the authorization server: %w", err)
	}
	candidates := authServerMetadataURLs(iu)
	for _, mdURL := range candidates {
		var md wire.AuthServerMetadata
		err := getJSON(ctx, hc, mdURL, o, &md)
		if isAbsent(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot fetch the authorization server metadata: %w", err)
		}
		if err := checkAuthServerMetadata(&md, mdURL, issuer); err != nil {
			return nil, err
		}
		return &md, nil
	}
	return nil, fmt.Errorf("%w for %s (tried %s)", ErrNoAuthServerMetadata, issuer, strings.Join(candidates, ", "))
}

// SameIssuer says whether two issuer identifiers are the same URI once
// normalised as RFC 3986 §6.2.2 and §6.2.3 allow for http(s): scheme and
// host compared without case, a default port (80, 443) as no port, and an
// empty path as "/" — so "http://h:8080" and "http://H:8080/" are one
// issuer. Anything else (a path, its case, a query) must be equal: RFC
// 8414 §3.3 asks for identical issuers, and these are the differences
// that do not make another URI.
func SameIssuer(a, b string) bool {
	if a == b {
		return true
	}
	na, oka := normalIssuer(a)
	nb, okb := normalIssuer(b)
	return oka && okb && na == nb
}

func normalIssuer(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	n := scheme + "://" + host + p
	if u.RawQuery != "" || u.ForceQuery {
		n += "?" + u.RawQuery
	}
	return n, true
}

// checkAuthServerMetadata checks the authorization server metadata md
// fetched from mdURL for issuer: its issuer must equal the one asked for
// (RFC 8414 §3.3), code_challenge_methods_supported must list S256, and
// every endpoint must pass CheckURL.
func checkAuthServerMetadata(md *wire.AuthServerMetadata, mdURL, issuer string) error {
	if !SameIssuer(md.Issuer, issuer) {
		return fmt.Errorf("%w: %s names issuer %q, but %q was asked for (RFC 8414 §3.3)",
			ErrIssuerMismatch, mdURL, md.Issuer, issuer)
	}
	if !slices.Contains(md.CodeChallengeMethodsSupported, "S256") {
		offered := "does not list code_challenge_methods_supported"
		if len(md.CodeChallengeMethodsSupported) > 0 {
			offered = "lists code_challenge_methods_supported " + strings.Join(md.CodeChallengeMethodsSupported, ", ")
		}
		return fmt.Errorf("%w: %s %s", ErrPKCEUnsupported, issuer, offered)
	}
	if err := checkEndpoints(md); err != nil {
		return fmt.Errorf("cannot use the authorization server metadata at %s: %w", mdURL, err)
	}
	return nil
}

func authServerMetadataURLs(iu *url.URL) []string {
	base := iu.Scheme + "://" + iu.Host
	p := strings.TrimSuffix(iu.EscapedPath(), "/")
	if p == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + p,
		base + "/.well-known/openid-configuration" + p,
		base + p + "/.well-known/openid-configuration",
	}
}

func checkEndpoints(md *wire.AuthServerMetadata) error {
	for _, e := range []struct{ field, url string }{
		{"authorization_endpoint", md.AuthorizationEndpoint},
		{"token_endpoint", md.TokenEndpoint},
		{"registration_endpoint", md.RegistrationEndpoint},
		{"revocation_endpoint", md.RevocationEndpoint},
		{"device_authorization_endpoint", md.DeviceAuthorizationEndpoint},
		{"introspection_endpoint", md.IntrospectionEndpoint},
		{"jwks_uri", md.JWKSURI},
	} {
		if e.url == "" {
			continue
		}
		if _, err := checkURL(e.field, e.url); err != nil {
			return err
		}
	}
	return nil
}

// DiscoverAuthServer fetches the metadata of the first authorization server
// of d. In the legacy fallback, an origin without any metadata document gets
// the MCP 2025-03-26 default endpoints /authorize, /token and /register.
func DiscoverAuthServer(ctx context.Context, hc *http.Client, d *ResourceDiscovery, opts ...FetchOption) (*wire.AuthServerMetadata, error) {
	if len(d.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("cannot discover the authorization server of %s: %w", d.Target, ErrNoAuthorizationServers)
	}
	issuer := d.AuthorizationServers[0]
	md, err := FetchAuthServerMetadata(ctx, hc, issuer, opts...)
	if d.Legacy && errors.Is(err, ErrNoAuthServerMetadata) {
		return &wire.AuthServerMetadata{
			Issuer:                        issuer,
			AuthorizationEndpoint:         issuer + "/authorize",
			TokenEndpoint:                 issuer + "/token",
			RegistrationEndpoint:          issuer + "/register",
			ResponseTypesSupported:        []string{"code"},
			GrantTypesSupported:           []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken},
			CodeChallengeMethodsSupported: []string{"S256"}, // PKCE is mandatory in MCP 2025-03-26
			Guessed:                       true,
		}, nil
	}
	return md, err
}
