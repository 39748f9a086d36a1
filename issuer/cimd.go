package issuer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Bounds on Client ID Metadata Documents (draft-ietf-oauth-client-id-
// metadata-document; MCP 2025-11-25 "Authorization", Client ID Metadata
// Documents).
const (
	// maxCIMDBytes bounds one fetched document.
	maxCIMDBytes = 64 << 10
	// cimdFetchTimeout bounds one fetch, body included.
	cimdFetchTimeout = 10 * time.Second
	// cimdCacheTTL is how long a fetched document is used before it is
	// fetched again.
	cimdCacheTTL = 5 * time.Minute
	// maxCIMDClients bounds the cached documents; past it the expired
	// ones go first, then any.
	maxCIMDClients = 256
)

// The CIMD modes (CIMDOptions.Mode).
const (
	// CIMDFetch uses the pinned documents and fetches any other document
	// URL (from CIMDOptions.Hosts only, when given). The default.
	CIMDFetch = "fetch"
	// CIMDPinned uses the pinned documents only and fetches nothing: a
	// deployment with no way out to the internet.
	CIMDPinned = "pinned"
	// CIMDOff turns client ID metadata documents off: the metadata does
	// not advertise them and a client_id URL is an unknown client unless
	// it was registered.
	CIMDOff = "off"
)

// CIMDOptions say which client ID metadata documents (draft-ietf-oauth-
// client-id-metadata-document §3, §4) the issuer uses. A pinned document
// is used whenever its client_id is sent, online or not, and never
// fetched: the operator vetted it, it does not change under the issuer's
// feet, and a login does not wait on a host that cannot be reached (an
// air-gapped or egress-filtered deployment). A client whose hosted
// document changes (a new redirect URI) needs its pin updated.
type CIMDOptions struct {
	// Mode is CIMDFetch (default, ""), CIMDPinned or CIMDOff.
	Mode string
	// Hosts, when not empty, are the only hosts whose documents are
	// fetched ("claude.ai", or "host:port" for a port other than the
	// scheme's), compared case-insensitively with the URL's host; the
	// SSRF checks (cimdDialControl) still apply. Pinned documents are
	// used whatever their host.
	Hosts []string
	// Pinned are documents held in the configuration, each a JSON client
	// metadata object whose client_id is the URL it stands for
	// (ParseCIMDDocuments). They pass the checks of a fetched document.
	Pinned [][]byte
}

// ParseCIMDDocuments reads a file of pinned client ID metadata documents:
// one JSON object, or an array of them. Each is checked at New.
func ParseCIMDDocuments(data []byte) ([][]byte, error) {
	var many []json.RawMessage
	if err := json.Unmarshal(data, &many); err != nil {
		var one map[string]any
		if err := json.Unmarshal(data, &one); err != nil {
			return nil, errors.New("want a JSON client metadata object, or an array of them")
		}
		many = []json.RawMessage{data}
	}
	if len(many) == 0 {
		return nil, errors.New("it holds no document")
	}
	out := make([][]byte, len(many))
	for k, d := range many {
		out[k] = []byte(d)
	}
	return out, nil
}

// setupCIMD checks opts.CIMD and keeps the pinned documents' clients.
func (i *Issuer) setupCIMD() error {
	o := &i.opts.CIMD
	switch o.Mode {
	case "":
		o.Mode = CIMDFetch
	case CIMDFetch, CIMDPinned, CIMDOff:
	default:
		return fmt.Errorf("cannot use the client ID metadata document mode %q: want %s, %s or %s", o.Mode, CIMDFetch, CIMDPinned, CIMDOff)
	}
	if o.Mode == CIMDPinned && len(o.Pinned) == 0 {
		return errors.New("client ID metadata documents are pinned-only, and none is pinned")
	}
	o.Hosts = slices.Clone(o.Hosts)
	for k, h := range o.Hosts {
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return fmt.Errorf("cannot fetch client ID metadata documents from the host %q: want a host name, or host:port", h)
		}
		o.Hosts[k] = strings.ToLower(h)
	}
	i.pinned = map[string]*client{}
	for _, d := range o.Pinned {
		c, err := i.checkCIMD(d, "")
		if err != nil {
			return fmt.Errorf("cannot pin the client ID metadata document %.80s: %w", d, err)
		}
		if i.pinned[c.id] != nil {
			return fmt.Errorf("cannot pin two client ID metadata documents for %s", c.id)
		}
		i.pinned[c.id] = c
	}
	return nil
}

// cimdError says why a client ID metadata document cannot be used: the
// client's fault (400), unlike a failing state store.
type cimdError struct{ msg string }

func (e *cimdError) Error() string { return e.msg }

// cimdEntry is a cached document's client.
type cimdEntry struct {
	client  *client
	expires time.Time
}

// isCIMDClientID reports whether a client_id is a Client ID Metadata
// Document URL the issuer fetches: https with a path, or http on a
// loopback host (tests); no fragment, no user info.
func isCIMDClientID(id string) bool {
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.Path == "" || u.Path == "/" {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())
}

// cimdClient is lookupClient for a client_id that is a document URL
// (isCIMDClientID) and no registered client: the public client its
// document describes, fetched, or from the cache while it is fresh.
// Off, it is an unknown client (nil); pinned, the pinned document's
// client; otherwise fetched only in CIMDFetch mode from an allowed host.
func (i *Issuer) cimdClient(ctx context.Context, id string) (*client, error) {
	if i.opts.CIMD.Mode == CIMDOff {
		return nil, nil
	}
	if c := i.cachedCIMD(id); c != nil {
		return c, nil
	}
	if err := i.mayFetchCIMD(id); err != nil {
		i.log.Warn("issuer: client ID metadata document refused", "client_id", id, "reason", err)
		return nil, &cimdError{msg: fmt.Sprintf("cannot use the client ID metadata document %s: %v", id, err)}
	}
	c, err := i.fetchCIMD(ctx, id)
	if err != nil {
		i.log.Warn("issuer: client ID metadata document refused", "client_id", id, "reason", err)
		return nil, &cimdError{msg: fmt.Sprintf("cannot use the client ID metadata document %s: %v", id, err)}
	}
	now := i.now()
	i.mu.Lock()
	if len(i.cimd) >= maxCIMDClients {
		for k, e := range i.cimd {
			if !now.Before(e.expires) || len(i.cimd) >= maxCIMDClients {
				delete(i.cimd, k)
			}
		}
	}
	i.cimd[id] = cimdEntry{client: c, expires: now.Add(cimdCacheTTL)}
	i.mu.Unlock()
	i.log.Info("issuer: client ID metadata document fetched", "client_id", id)
	return c, nil
}

// mayFetchCIMD refuses a document URL the options do not let the issuer
// fetch: any in CIMDPinned mode, one off CIMDOptions.Hosts.
func (i *Issuer) mayFetchCIMD(id string) error {
	o := i.opts.CIMD
	if o.Mode == CIMDPinned {
		return errors.New("this server uses only the client ID metadata documents pinned in its configuration, and fetches none; " +
			"pin this client's document (serve --cimd-document), or register the client another way (dynamic client registration)")
	}
	u, _ := url.Parse(id) // isCIMDClientID parsed it
	if len(o.Hosts) > 0 && !slices.Contains(o.Hosts, strings.ToLower(u.Host)) {
		return fmt.Errorf("this server fetches client ID metadata documents only from %s; pin this client's document (serve --cimd-document), or allow its host (serve --cimd-host %s)",
			strings.Join(o.Hosts, ", "), strings.ToLower(u.Host))
	}
	return nil
}

// cachedCIMD is the client of a pinned document (CIMDOptions.Pinned), or
// of a fresh cached one, or nil. Off, it is nil.
func (i *Issuer) cachedCIMD(id string) *client {
	if i.opts.CIMD.Mode == CIMDOff {
		return nil
	}
	if c := i.pinned[id]; c != nil {
		return c
	}
	now := i.now()
	i.mu.Lock()
	defer i.mu.Unlock()
	if e, ok := i.cimd[id]; ok && now.Before(e.expires) {
		return e.client
	}
	return nil
}

// fetchCIMD fetches a document: 200 application/json within maxCIMDBytes
// and cimdFetchTimeout, no redirect; then checkCIMD.
func (i *Issuer) fetchCIMD(ctx context.Context, id string) (*client, error) {
	ctx, cancel := context.WithTimeout(ctx, cimdFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	issuer, _ := url.Parse(i.opts.Issuer)
	dialer := &net.Dialer{Control: cimdDialControl(isLoopback(issuer.Hostname()))}
	hc := &http.Client{
		// No proxy: the address checked must be the one connected to.
		Transport:     &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := hc.Do(req)
	if err != nil {
		var blocked *blockedAddressError
		if errors.As(err, &blocked) {
			return nil, blocked
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %s", cimdFetchTimeout)
		}
		return nil, errors.New("cannot fetch it")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("it answered %s (want 200, no redirect)", resp.Status)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/json" {
		return nil, errors.New("it is not application/json")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCIMDBytes+1))
	if err != nil {
		return nil, errors.New("cannot read it")
	}
	if len(body) > maxCIMDBytes {
		return nil, fmt.Errorf("it is larger than %d bytes", maxCIMDBytes)
	}
	return i.checkCIMD(body, id)
}

// checkCIMD checks a document (fetched from id, or pinned when id is ""):
// client_id equal to its URL (a document URL, isCIMDClientID), a public
// client (token_endpoint_auth_method none: the document cannot carry a
// shared secret), and the registration checks of checkRegistration
// (redirect URIs on loopback or an allowed origin).
func (i *Issuer) checkCIMD(body []byte, id string) (*client, error) {
	if len(body) > maxCIMDBytes {
		return nil, fmt.Errorf("it is larger than %d bytes", maxCIMDBytes)
	}
	var doc struct {
		ClientID string `json:"client_id"`
		registration
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, errors.New("it is not a JSON client metadata object")
	}
	if id == "" {
		if !isCIMDClientID(doc.ClientID) {
			return nil, fmt.Errorf("its client_id %q is not a document URL (https with a path)", doc.ClientID)
		}
		id = doc.ClientID
	}
	if doc.ClientID != id {
		return nil, fmt.Errorf("its client_id %q is not its URL", doc.ClientID)
	}
	if doc.TokenEndpointAuthMethod == "" {
		doc.TokenEndpointAuthMethod = AuthNone
	}
	if doc.TokenEndpointAuthMethod != AuthNone {
		return nil, fmt.Errorf("token_endpoint_auth_method %q is not supported for a client ID metadata document (want none)", doc.TokenEndpointAuthMethod)
	}
	if e := i.checkRegistration(&doc.registration); e != nil {
		return nil, errors.New(e.body.Description)
	}
	return &client{id: id, name: doc.ClientName, authMethod: AuthNone, redirectURIs: doc.RedirectURIs, grantTypes: doc.GrantTypes}, nil
}

// blockedAddressError is a document URL whose host resolved to an address
// the issuer must not fetch from. embedded, when valid, is the IPv4
// address a NAT64 address (addr) carries, and the one refused.
type blockedAddressError struct {
	addr     netip.Addr
	kind     string
	embedded netip.Addr
}

func (e *blockedAddressError) Error() string {
	fix := "serve the document from a public https URL"
	if e.kind == "loopback" {
		fix = "loopback documents are fetched only when the issuer itself is on loopback (a dev setup); " + fix
	}
	if e.embedded.IsValid() {
		return fmt.Sprintf("its host resolves to the NAT64 address %s, which carries the %s address %s, which the issuer does not fetch from: %s", e.addr, e.kind, e.embedded, fix)
	}
	return fmt.Sprintf("its host resolves to the %s address %s, which the issuer does not fetch from: %s", e.kind, e.addr, fix)
}

// nat64Prefix is the NAT64 well-known prefix (RFC 6052 section 2.1): an
// address in it carries an IPv4 address in its last 32 bits, which a
// NAT64 gateway connects to, so that IPv4 address is what is checked.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

// blockedPrefixes are the ranges a metadata fetch never connects to: the
// IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its
// updates) entries that are not globally reachable, plus multicast,
// broadcast and the deprecated IPv6 site-local and IPv4-compatible
// ranges. The first matching entry names the refusal, so narrow entries
// come before the ranges that contain them. IPv4-mapped IPv6 addresses
// (::ffff:0:0/96) are unmapped before the lookup.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified"},                   // RFC 1122 section 3.2.1.3
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},                   // RFC 791, RFC 6890
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},                       // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"}, // RFC 6598
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},                     // RFC 1122 section 3.2.1.3
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},                // RFC 3927
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},                    // RFC 1918
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},    // RFC 6890 section 2.1
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},               // RFC 5737
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},        // RFC 7526
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},                   // RFC 1918
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},               // RFC 2544
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},            // RFC 5737
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},             // RFC 5737
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},                    // RFC 5771
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},             // RFC 919, RFC 8190
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},                     // RFC 1112 section 4
	{netip.MustParsePrefix("::/128"), "unspecified"},                       // RFC 4291 section 2.5.2
	{netip.MustParsePrefix("::1/128"), "loopback"},                         // RFC 4291 section 2.5.3
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},                    // RFC 4291 section 2.5.5.1 (deprecated)
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},           // RFC 8215
	{netip.MustParsePrefix("100::/64"), "discard-only"},                    // RFC 6666
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignment"},       // RFC 2928 (Teredo, ORCHID, AMT...)
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},              // RFC 3849
	{netip.MustParsePrefix("2002::/16"), "6to4"},                           // RFC 3056, RFC 7526
	{netip.MustParsePrefix("3fff::/20"), "documentation"},                  // RFC 9637
	{netip.MustParsePrefix("5f00::/16"), "segment-routing"},                // RFC 9602
	{netip.MustParsePrefix("fc00::/7"), "unique local"},                    // RFC 4193
	{netip.MustParsePrefix("fe80::/10"), "link-local"},                     // RFC 4291 section 2.5.6
	{netip.MustParsePrefix("fec0::/10"), "site-local"},                     // RFC 3879 (deprecated)
	{netip.MustParsePrefix("ff00::/8"), "multicast"},                       // RFC 4291 section 2.7
}

// blockedKind names the blocked range ip is in, or returns "".
func blockedKind(ip netip.Addr) string {
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(ip) {
			return b.kind
		}
	}
	return ""
}

// cimdDialControl guards the fetch of a client ID metadata document
// against server-side request forgery (draft-ietf-oauth-client-id-
// metadata-document, Security Considerations, SSRF): it refuses to
// connect to an address in blockedPrefixes, or to a NAT64 address whose
// embedded IPv4 address is in them, and allows loopback only when
// allowLoopback (the issuer itself is on loopback).
// It runs as a net.Dialer Control func, on each address actually dialled
// after DNS resolution, so a name that resolves, or rebinds between two
// lookups, to an internal address is refused too.
func cimdDialControl(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("cannot check the address %q it resolves to", address)
		}
		ip := ap.Addr().Unmap().WithZone("")
		checked, embedded := ip, netip.Addr{}
		if nat64Prefix.Contains(ip) {
			b := ip.As16()
			embedded = netip.AddrFrom4([4]byte(b[12:]))
			checked = embedded
		}
		kind := blockedKind(checked)
		if kind == "" || kind == "loopback" && allowLoopback {
			return nil
		}
		return &blockedAddressError{addr: ip, kind: kind, embedded: embedded}
	}
}
