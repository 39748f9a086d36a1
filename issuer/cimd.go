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

// cimdError says why a client ID metadata document cannot be used: the
// client's fault (400), unlike a failing state store.
type cimdError struct{ msg string }

func (e *cimdError) Error() string { return e.msg }

// cimdClient is lookupClient for a client_id that is a document URL
// (isCIMDClientID) and no registered client: the public client its
// document describes, fetched, or from the cache while it is fresh.
func (i *Issuer) cimdClient(ctx context.Context, id string) (*client, error) {
	if c := i.cachedCIMD(id); c != nil {
		return c, nil
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

// cachedCIMD is the client of a fresh cached document, or nil.
func (i *Issuer) cachedCIMD(id string) *client {
	now := i.now()
	i.mu.Lock()
	defer i.mu.Unlock()
	if e, ok := i.cimd[id]; ok && now.Before(e.expires) {
		return e.client
	}
	return nil
}

// fetchCIMD fetches and checks a document: 200 application/json within
// maxCIMDBytes and cimdFetchTimeout, no redirect, client_id equal to the
// URL, a public client (token_endpoint_auth_method none: the document
// cannot carry a shared secret), and the registration checks of
// checkRegistration (redirect URIs on loopback or an allowed origin).
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
	var doc struct {
		ClientID string `json:"client_id"`
		registration
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, errors.New("it is not a JSON client metadata object")
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
// the issuer must not fetch from.
type blockedAddressError struct {
	addr netip.Addr
	kind string
}

func (e *blockedAddressError) Error() string {
	fix := "serve the document from a public https URL"
	if e.kind == "loopback" {
		fix = "loopback documents are fetched only when the issuer itself is on loopback (a dev setup); " + fix
	}
	return fmt.Sprintf("its host resolves to the %s address %s, which the issuer does not fetch from: %s", e.kind, e.addr, fix)
}

// cimdDialControl guards the fetch of a client ID metadata document
// against server-side request forgery (draft-ietf-oauth-client-id-
// metadata-document, Security Considerations, SSRF): it refuses to
// connect to a private, link-local, multicast or unspecified address, and
// to loopback unless allowLoopback (the issuer itself is on loopback).
// It runs as a net.Dialer Control func, on each address actually dialled
// after DNS resolution, so a name that resolves, or rebinds between two
// lookups, to an internal address is refused too.
func cimdDialControl(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("cannot check the address %q it resolves to", address)
		}
		ip := ap.Addr().Unmap()
		kind := ""
		switch {
		case ip.IsLoopback():
			if allowLoopback {
				return nil
			}
			kind = "loopback"
		case ip.IsPrivate():
			kind = "private"
		case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
			kind = "link-local"
		case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
			kind = "multicast"
		case ip.IsUnspecified():
			kind = "unspecified"
		default:
			return nil
		}
		return &blockedAddressError{addr: ip, kind: kind}
	}
}
