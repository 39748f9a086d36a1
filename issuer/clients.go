package issuer

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// maxClientName bounds a client_name, in characters.
const maxClientName = 200

// client is a registered client. Its metadata never changes after
// registration; the fields below it are guarded by Issuer.mu.
type client struct {
	id           string
	name         string
	authMethod   string
	secretHash   [sha256.Size]byte
	redirectURIs []string
	grantTypes   []string

	// registered marks a client from the registration endpoint: it
	// counts against maxRegistrations and, while issued is false, is
	// pruned unusedClientTTL after lastActive.
	registered bool
	issued     bool
	lastActive time.Time
}

// pruneClientsLocked drops the registered clients that were never issued a
// token and made no request for unusedClientTTL, or longer when a consent
// page and its code may still be pending.
func (i *Issuer) pruneClientsLocked(now time.Time) {
	idle := max(unusedClientTTL, consentTTL+i.opts.CodeTTL)
	for id, c := range i.clients {
		if c.registered && !c.issued && now.Sub(c.lastActive) > idle {
			delete(i.clients, id)
			i.registered--
		}
	}
}

func (c *client) public() bool { return c.authMethod == AuthNone }

func (c *client) allows(grantType string) bool { return slices.Contains(c.grantTypes, grantType) }

// displayName is what the consent and device pages call the client.
func (c *client) displayName() string {
	if c.name != "" {
		return c.name
	}
	return c.id
}

// newClient checks a pre-registered client from Options.
func (i *Issuer) newClient(c Client) (*client, error) {
	if c.ID == "" {
		return nil, errors.New("cannot register a client without an id")
	}
	method := c.AuthMethod
	if method == "" {
		method = AuthNone
		if c.Secret != "" {
			method = AuthClientSecretBasic
		}
	}
	if !slices.Contains(supportedAuthMethods, method) {
		return nil, fmt.Errorf("cannot register client %q: unsupported auth method %q", c.ID, method)
	}
	if (method == AuthNone) != (c.Secret == "") {
		return nil, fmt.Errorf("cannot register client %q: a secret goes with client_secret_basic or client_secret_post only", c.ID)
	}
	grants := c.GrantTypes
	if len(grants) == 0 {
		grants = supportedGrants
	}
	for _, g := range grants {
		if !slices.Contains(supportedGrants, g) {
			return nil, fmt.Errorf("cannot register client %q: unsupported grant type %q", c.ID, g)
		}
	}
	for _, u := range c.RedirectURIs {
		if err := i.checkRedirectURI(u); err != nil {
			return nil, fmt.Errorf("cannot register client %q: %w", c.ID, err)
		}
	}
	if utf8.RuneCountInString(c.Name) > maxClientName {
		return nil, fmt.Errorf("cannot register client %q: name longer than %d characters", c.ID, maxClientName)
	}
	return &client{
		id:           c.ID,
		name:         c.Name,
		authMethod:   method,
		secretHash:   sha256.Sum256([]byte(c.Secret)),
		redirectURIs: slices.Clone(c.RedirectURIs),
		grantTypes:   slices.Clone(grants),
	}, nil
}

// checkRedirectURI accepts an absolute http URI on a loopback host, any
// port (RFC 8252 §7.3), or an https URI on one of
// Options.AllowedRedirectOrigins; without fragment (RFC 6749 §3.1.2) or
// user info. Everything else, javascript: and data: included, is refused.
func (i *Issuer) checkRedirectURI(raw string) error {
	if len(raw) > maxURIBytes {
		return fmt.Errorf("a redirect URI is longer than %d bytes", maxURIBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("cannot parse redirect URI")
	}
	if strings.Contains(raw, "#") {
		return fmt.Errorf("redirect URI %q has a fragment", raw)
	}
	if u.User != nil || u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("redirect URI %q is not an absolute URL with a host", raw)
	}
	if u.Scheme == "http" && isLoopback(u.Hostname()) {
		return nil
	}
	origin := strings.ToLower(u.Scheme + "://" + u.Host)
	if u.Scheme == "https" && slices.Contains(i.opts.AllowedRedirectOrigins, origin) {
		return nil
	}
	hint := "use http://127.0.0.1, http://[::1] or http://localhost on any port"
	if u.Scheme == "https" {
		hint = "to allow it, run serve with --allow-redirect-origin " + origin
	}
	return fmt.Errorf("redirect URI %q is not on loopback, which the dev issuer requires (RFC 8252 §7.3) unless its origin is allowed; %s", raw, hint)
}

// checkAllowedOrigin accepts an https origin for AllowedRedirectOrigins,
// in lower case: scheme, host and optional port, nothing else.
func checkAllowedOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" ||
		strings.Contains(o, "#") || o != strings.ToLower(o) {
		return fmt.Errorf("cannot allow redirect origin %q: want a lower-case https origin like https://app.example or https://app.example:8443 (loopback http is always allowed)", o)
	}
	return nil
}

// isLoopback reports a loopback IP literal or "localhost" (RFC 8252 §8.3
// prefers the literal; agentauth-cli registers both).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// matchRedirect reports whether requested is one of c's redirect URIs:
// simple string comparison (RFC 6749 §3.1.2.3), except that an http
// loopback URI matches with any port (RFC 8252 §7.3). Hosts, paths and
// queries must be identical; a non-loopback port is never ignored.
func (c *client) matchRedirect(requested string) bool {
	if slices.Contains(c.redirectURIs, requested) {
		return true
	}
	q, err := url.Parse(requested)
	if err != nil || q.Scheme != "http" || q.User != nil || q.Fragment != "" || strings.Contains(requested, "#") {
		return false
	}
	for _, reg := range c.redirectURIs {
		r, err := url.Parse(reg)
		if err != nil || r.Scheme != "http" || !isLoopback(r.Hostname()) {
			continue
		}
		if r.Hostname() == q.Hostname() && r.EscapedPath() == q.EscapedPath() && r.RawQuery == q.RawQuery {
			return true
		}
	}
	return false
}

// authenticateClient identifies the client of a token, device, revocation
// or introspection request (RFC 6749 §2.3): HTTP Basic with form-encoded
// credentials (§2.3.1), client_secret in the body, or client_id alone for a
// public client. The method must be the client's registered one.
func (i *Issuer) authenticateClient(r *http.Request, form url.Values) (*client, *oauthError) {
	id, secret, basic := r.BasicAuth()
	method := AuthNone
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, clientError("cannot decode the Basic credentials", true)
		}
		if form.Has("client_secret") {
			return nil, badRequest("invalid_request", "use one client authentication method, not Basic and client_secret")
		}
		if form.Has("client_id") && form.Get("client_id") != id {
			return nil, badRequest("invalid_request", "client_id differs from the Basic credentials")
		}
		method = AuthClientSecretBasic
	} else {
		id = form.Get("client_id")
		if form.Has("client_secret") {
			secret = form.Get("client_secret")
			method = AuthClientSecretPost
		}
	}
	if id == "" {
		return nil, clientError("client authentication is required", false)
	}
	c, err := i.lookupClient(r.Context(), id)
	switch {
	case err != nil:
		return nil, clientError(err.Error(), basic)
	case c == nil:
		return nil, clientError("unknown client", basic)
	case c.authMethod != method:
		return nil, clientError("the client must authenticate with "+c.authMethod, basic)
	case method != AuthNone && subtle.ConstantTimeCompare(c.secretHash[:], hashBytes(secret)) != 1:
		return nil, clientError("wrong client secret", basic)
	}
	i.mu.Lock()
	c.lastActive = i.now()
	i.mu.Unlock()
	return c, nil
}

func clientError(desc string, basic bool) *oauthError {
	e := badRequest("invalid_client", desc)
	e.status = http.StatusUnauthorized
	e.basic = basic
	return e
}

func hashBytes(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
