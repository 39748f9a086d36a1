package issuer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/state"
)

// maxClientName bounds a client_name, in characters.
const maxClientName = 200

// client is a registered client, as read at the start of a request. Its
// metadata never changes after registration.
type client struct {
	id           string
	name         string
	authMethod   string
	secretHash   [sha256.Size]byte
	redirectURIs []string
	grantTypes   []string
	// jwks are the public keys of a private_key_jwt client.
	jwks *jose.JSONWebKeySet

	// registered marks a client from the registration endpoint, kept in
	// the Store: it counts against Limits.Clients and, while issued is
	// false, expires unusedClientTTL after lastActive.
	registered bool
	issued     bool
	lastActive time.Time
}

// lookupClient finds the client id: pre-registered, or registered in the
// Store. It returns nil for an unknown id. Every client_id the issuer is
// sent is resolved here (through clientTx).
func (i *Issuer) lookupClient(ctx context.Context, id string) (*client, error) {
	if c := i.static[id]; c != nil {
		return c, nil
	}
	var c *client
	err := i.store.View(ctx, func(tx state.Tx) error {
		var err error
		c, err = i.clientTx(tx, id)
		return err
	})
	if err != nil || c != nil || !isCIMDClientID(id) {
		return c, err
	}
	return i.cimdClient(ctx, id)
}

// clientTx is lookupClient inside a transaction.
func (i *Issuer) clientTx(tx state.Tx, id string) (*client, error) {
	if c := i.static[id]; c != nil {
		return c, nil
	}
	b, err := tx.Get(kindClient, id)
	if errors.Is(err, state.ErrNotFound) {
		i.clients.drop(id)
		return i.cachedCIMD(id), nil
	}
	if err != nil {
		return nil, err
	}
	if c := i.clients.get(id, b); c != nil {
		return c, nil
	}
	r, err := decodeRecord[clientRecord](kindClient, b, nil)
	if err != nil {
		return nil, err
	}
	c, err := decodeClient(r)
	if err != nil {
		return nil, err
	}
	i.clients.put(id, b, c)
	cp := *c
	return &cp, nil
}

// decodeClient makes a client of its record.
func decodeClient(r *clientRecord) (*client, error) {
	var err error
	c := &client{id: r.ID, name: r.Name, authMethod: r.AuthMethod, redirectURIs: r.RedirectURIs, grantTypes: r.GrantTypes,
		registered: true, issued: r.Issued, lastActive: r.LastActive}
	if len(r.JWKS) > 0 {
		if c.jwks, err = checkJWKS(r.JWKS); err != nil {
			return nil, fmt.Errorf("cannot read client %s: %w", r.ID, err)
		}
	}
	copy(c.secretHash[:], r.SecretHash)
	return c, nil
}

// clientCache keeps the registered clients decoded, each with the record
// it was decoded from: a read of the record that finds the same bytes
// reuses the decoded client, so a client's JSON (and its JWKS) is decoded
// once per change, on every replica, whichever replica changed it. It
// holds at most max clients (Limits.Clients): beyond, a client is decoded
// on every request, as none is evicted.
type clientCache struct {
	mu  sync.Mutex
	max int
	m   map[string]cachedClient
}

type cachedClient struct {
	record []byte
	c      *client
}

// get returns a copy of the client id decoded from record, or nil.
func (cc *clientCache) get(id string, record []byte) *client {
	cc.mu.Lock()
	e, ok := cc.m[id]
	cc.mu.Unlock()
	if !ok || !bytes.Equal(e.record, record) {
		return nil
	}
	c := *e.c
	return &c
}

// put keeps c, decoded from record, unless the cache is full.
func (cc *clientCache) put(id string, record []byte, c *client) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = map[string]cachedClient{}
	}
	if _, ok := cc.m[id]; ok || len(cc.m) < cc.max {
		cc.m[id] = cachedClient{record: bytes.Clone(record), c: c}
	}
}

// drop forgets the client id, whose record is gone.
func (cc *clientCache) drop(id string) {
	cc.mu.Lock()
	delete(cc.m, id)
	cc.mu.Unlock()
}

// putClientTx stores a registered client. Until it is issued a token it
// expires when idle for unusedClientTTL, or longer when a consent page and
// its code may still be pending.
func (i *Issuer) putClientTx(tx state.Tx, c *client) error {
	r := clientRecord{ID: c.id, Name: c.name, AuthMethod: c.authMethod, RedirectURIs: c.redirectURIs, GrantTypes: c.grantTypes,
		Issued: c.issued, LastActive: c.lastActive}
	if c.jwks != nil {
		b, err := json.Marshal(c.jwks)
		if err != nil {
			return err
		}
		r.JWKS = b
	}
	if c.hasSecret() {
		r.SecretHash = c.secretHash[:]
	}
	var expires time.Time
	if !c.issued {
		expires = c.lastActive.Add(max(unusedClientTTL, consentTTL+i.opts.CodeTTL))
	}
	return putRecord(tx, kindClient, c.id, r, expires)
}

// touchClientTx records a request of a registered client never issued a
// token, which keeps it from expiring.
func (i *Issuer) touchClientTx(tx state.Tx, id string, now time.Time) error {
	c, err := i.clientTx(tx, id)
	if err != nil || c == nil || !c.registered || c.issued {
		return err
	}
	c.lastActive = now
	return i.putClientTx(tx, c)
}

// issuedClientTx records that a registered client was issued a token: it
// no longer expires.
func (i *Issuer) issuedClientTx(tx state.Tx, id string) error {
	c, err := i.clientTx(tx, id)
	if err != nil || c == nil || !c.registered || c.issued {
		return err
	}
	c.issued = true
	return i.putClientTx(tx, c)
}

func (c *client) public() bool { return c.authMethod == AuthNone }

// hasSecret reports whether the client authenticates with a secret.
func (c *client) hasSecret() bool {
	return c.authMethod == AuthClientSecretBasic || c.authMethod == AuthClientSecretPost
}

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
	if form.Has("client_assertion") || form.Has("client_assertion_type") {
		if _, _, basic := r.BasicAuth(); basic || form.Has("client_secret") {
			return nil, badRequest("invalid_request", "use one client authentication method, not a client assertion and a secret")
		}
		return i.authenticateAssertion(r, form)
	}
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
	if len(id) > maxParamBytes {
		return nil, clientError("unknown client", basic)
	}
	c, err := i.lookupClient(r.Context(), id)
	var refused *cimdError
	switch {
	case errors.As(err, &refused):
		return nil, clientError(refused.Error(), basic)
	case err != nil:
		return nil, i.storeFailed(err)
	}
	switch {
	case c == nil:
		return nil, clientError("unknown client", basic)
	case c.authMethod != method:
		return nil, clientError("the client must authenticate with "+c.authMethod, basic)
	case method != AuthNone && subtle.ConstantTimeCompare(c.secretHash[:], hashBytes(secret)) != 1:
		return nil, clientError("wrong client secret", basic)
	}
	if c.registered && !c.issued {
		if err := i.store.Update(r.Context(), func(tx state.Tx) error { return i.touchClientTx(tx, c.id, i.now()) }); err != nil {
			return nil, i.storeFailed(err)
		}
	}
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
