package flows

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// The fuzz targets of flows. testdata/fuzz/run.sh runs every Fuzz target
// of the module for a fixed time; `go test` runs their seeds.

// safeURL is a model of CheckURL, written apart from it: an absolute URL
// with a host, https, or http to a loopback host.
func safeURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		ip, err := netip.ParseAddr(h)
		return strings.EqualFold(h, "localhost") || (err == nil && ip.Unmap().IsLoopback())
	}
	return false
}

// FuzzAuthServerMetadata checks any RFC 8414 document against any issuer:
// an accepted one names that issuer (RFC 3986 §6.2.3 normalised), offers PKCE with S256, and
// has only safe endpoints; a refused one says why with one of the
// sentinels or a *URLError.
func FuzzAuthServerMetadata(f *testing.F) {
	good := `{"issuer":"https://as.example","authorization_endpoint":"https://as.example/authorize","token_endpoint":"https://as.example/token",` +
		`"registration_endpoint":"https://as.example/register","code_challenge_methods_supported":["plain","S256"]}`
	f.Add(good, "https://as.example")
	f.Add(good, "https://as.example/")
	f.Add(`{"issuer":"http://127.0.0.1:7777","authorization_endpoint":"http://127.0.0.1:7777/authorize","token_endpoint":"http://[::1]:7777/token","code_challenge_methods_supported":["S256"]}`, "http://127.0.0.1:7777")
	f.Add(`{"issuer":"https://as.example","token_endpoint":"javascript:alert(1)","code_challenge_methods_supported":["S256"]}`, "https://as.example")
	f.Add(`{"issuer":"https://as.example","token_endpoint":"http://as.example/token","code_challenge_methods_supported":["S256"]}`, "https://as.example")
	f.Add(`{"issuer":"https://as.example","jwks_uri":"HTTP://LOCALHOST/jwks","code_challenge_methods_supported":["S256"]}`, "https://as.example")
	f.Add(`{"issuer":"https://as.example","code_challenge_methods_supported":["plain"]}`, "https://as.example")
	f.Fuzz(func(t *testing.T, doc, issuer string) {
		var md wire.AuthServerMetadata
		if json.Unmarshal([]byte(doc), &md) != nil {
			return
		}
		err := checkAuthServerMetadata(&md, "https://as.example/.well-known/oauth-authorization-server", issuer)
		if err != nil {
			var ue *URLError
			if !errors.Is(err, ErrIssuerMismatch) && !errors.Is(err, ErrPKCEUnsupported) && !errors.As(err, &ue) {
				t.Fatalf("%s: error %v names no reason", doc, err)
			}
			return
		}
		if !SameIssuer(md.Issuer, issuer) {
			t.Fatalf("%s: accepted for issuer %q", doc, issuer)
		}
		if !slices.Contains(md.CodeChallengeMethodsSupported, "S256") {
			t.Fatalf("%s: accepted without S256", doc)
		}
		for _, e := range []string{md.AuthorizationEndpoint, md.TokenEndpoint, md.RegistrationEndpoint, md.RevocationEndpoint,
			md.DeviceAuthorizationEndpoint, md.IntrospectionEndpoint, md.JWKSURI} {
			if e != "" && !safeURL(e) {
				t.Fatalf("%s: accepted with endpoint %q", doc, e)
			}
		}
	})
}

// FuzzResourceMetadata checks any RFC 9728 document against any target:
// an accepted one names a resource of the target's origin whose path is
// the target's or a segment prefix of it, and only safe authorization
// servers; a document naming the target itself is always accepted.
func FuzzResourceMetadata(f *testing.F) {
	f.Add(`{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`, "https://mcp.example/mcp")
	f.Add(`{"resource":"https://mcp.example","authorization_servers":["https://as.example"]}`, "https://mcp.example:443/mcp/x?q=1")
	f.Add(`{"resource":"https://mcp.example/mc","authorization_servers":["https://as.example"]}`, "https://mcp.example/mcp")
	f.Add(`{"resource":"https://evil.example/mcp","authorization_servers":["https://as.example"]}`, "https://mcp.example/mcp")
	f.Add(`{"resource":"http://127.0.0.1:7777/mcp","authorization_servers":["http://evil.example"]}`, "http://127.0.0.1:7777/mcp")
	f.Add(`{"resource":"http://127.0.0.1:7777/mcp","authorization_servers":[]}`, "http://127.0.0.1:7777/mcp")
	f.Add(`{"resource":"HTTP://LocalHost:80/a%2Fb?x","authorization_servers":["https://as.example"]}`, "http://localhost/a%2Fb/c?x")
	// A host-less target: checkURL refuses it (it would reach this
	// machine's port 443).
	f.Add(`{"resource":"https://:","authorization_servers":["https://as.example"]}`, "https://:")
	f.Fuzz(func(t *testing.T, doc, target string) {
		tu, err := checkURL("target", target)
		if err != nil {
			return
		}
		const mdURL = "https://mcp.example/.well-known/oauth-protected-resource"
		if tu.Fragment == "" {
			self := wire.ProtectedResourceMetadata{Resource: target, AuthorizationServers: []string{"https://as.example"}}
			if err := checkResourceMetadata(&self, mdURL, target, tu); err != nil {
				t.Fatalf("the target's own resource is refused: %v", err)
			}
		}
		var md wire.ProtectedResourceMetadata
		if json.Unmarshal([]byte(doc), &md) != nil || checkResourceMetadata(&md, mdURL, target, tu) != nil {
			return
		}
		r, err := url.Parse(md.Resource)
		if err != nil {
			t.Fatalf("%s: accepted an unparsable resource for %q", doc, target)
		}
		port := func(u *url.URL) string {
			if p := u.Port(); p != "" {
				return p
			}
			return map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
		}
		if !strings.EqualFold(r.Scheme, tu.Scheme) || !strings.EqualFold(r.Hostname(), tu.Hostname()) || port(r) != port(tu) {
			t.Fatalf("%s: accepted a resource of another origin for %q", doc, target)
		}
		rp, tp := cmp.Or(r.EscapedPath(), "/"), cmp.Or(tu.EscapedPath(), "/")
		if rp != tp && !strings.HasPrefix(tp, strings.TrimSuffix(rp, "/")+"/") {
			t.Fatalf("%s: accepted resource path %q for target path %q", doc, rp, tp)
		}
		if len(md.AuthorizationServers) == 0 {
			t.Fatalf("%s: accepted without an authorization server", doc)
		}
		for _, as := range md.AuthorizationServers {
			if !safeURL(as) {
				t.Fatalf("%s: accepted authorization server %q", doc, as)
			}
		}
	})
}
