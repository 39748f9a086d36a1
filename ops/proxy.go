package ops

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses --trusted-proxy values: CIDR prefixes
// (127.0.0.1/32) or single addresses.
func ParseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return nil, fmt.Errorf("%q is neither a CIDR prefix (10.0.0.0/8) nor an IP address", v)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// DefaultAddressHeader is the header a trusted proxy names the client's
// address in unless --trusted-proxy-header says otherwise: HAProxy's
// `option forwardfor` (deploy/haproxy.cfg), nginx's
// $proxy_add_x_forwarded_for and most load balancers set this one.
const DefaultAddressHeader = "X-Forwarded-For"

// ParseAddressHeader checks a --trusted-proxy-header value and returns its
// canonical form: "Forwarded" (RFC 7239) or the name of a header holding
// a comma-separated list of addresses (X-Forwarded-For, X-Real-IP, …).
func ParseAddressHeader(name string) (string, error) {
	if !isToken(name) {
		return "", fmt.Errorf("%q is not a header name", name)
	}
	name = http.CanonicalHeaderKey(name)
	switch name {
	case "Host", "Authorization", "Cookie", "X-Forwarded-Host", "X-Forwarded-Proto":
		return "", fmt.Errorf("%s does not carry a client's address", name)
	}
	return name, nil
}

// isToken reports whether s is an RFC 9110 §5.6.2 token, the form of a
// field name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// forwardedHeaders are the headers a reverse proxy sets: RFC 7239
// Forwarded and the de-facto X-Forwarded-* family.
var forwardedHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// Forwarded applies a trusted reverse proxy's forwarded headers to the
// request before next sees it: the client's address becomes RemoteAddr,
// the host the client asked for becomes Host (which the Host check then
// judges), the scheme becomes URL.Scheme. Only a request whose peer is in
// trusted gets this; from any other peer the headers are removed, so
// nothing downstream can be fooled by them.
//
// The address is read from one header only, addrHeader (the one the proxy
// sets; DefaultAddressHeader when empty), and every other address header
// is removed unread: a proxy that sets X-Forwarded-For passes a
// client-sent Forwarded on untouched, so believing both would let the
// client choose. Within that header each proxy appends the address it
// received the request from (RFC 7239 §4, §5.2), so the entries to the
// left of a trusted proxy's are whatever the client sent; the client is
// the right-most entry that is not itself a trusted proxy (RFC 7239 §7.4:
// values may be forged, believe only the hops you trust). An entry there
// that is no address ("unknown", an obfuscated node, garbage) leaves the
// peer's address in place.
//
// With addrHeader Forwarded, host and proto come from the element that
// named the client; otherwise from the last X-Forwarded-Host and
// X-Forwarded-Proto.
func Forwarded(trusted []netip.Prefix, addrHeader string, next http.Handler) http.Handler {
	if addrHeader == "" {
		addrHeader = DefaultAddressHeader
	}
	addrHeader = http.CanonicalHeaderKey(addrHeader)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(trusted) == 0 || !peerTrusted(trusted, r.RemoteAddr) {
			// The names are canonical, as net/http makes a request's:
			// delete is Header.Del without canonicalizing them again.
			for _, h := range forwardedHeaders {
				delete(r.Header, h)
			}
			delete(r.Header, addrHeader)
			next.ServeHTTP(w, r)
			return
		}
		var client netip.Addr
		var host, proto string
		if addrHeader == "Forwarded" {
			client, host, proto = fromForwarded(trusted, r.Header.Values("Forwarded"))
			r.Header.Del("X-Forwarded-For")
			r.Header.Del("X-Forwarded-Host")
			r.Header.Del("X-Forwarded-Proto")
		} else {
			client = rightmostUntrusted(trusted, splitList(r.Header.Values(addrHeader)), parseNode)
			host = lastValue(r.Header.Values("X-Forwarded-Host"))
			proto = strings.ToLower(lastValue(r.Header.Values("X-Forwarded-Proto")))
			r.Header.Del("Forwarded")
			if addrHeader != "X-Forwarded-For" {
				r.Header.Del("X-Forwarded-For")
			}
		}
		if client.IsValid() {
			r.RemoteAddr = net.JoinHostPort(client.String(), "0")
		}
		if host != "" {
			r.Host = host
		}
		if proto == "http" || proto == "https" {
			r.URL.Scheme = proto
		}
		next.ServeHTTP(w, r)
	})
}

func peerTrusted(trusted []netip.Prefix, remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	return addrTrusted(trusted, ap.Addr())
}

func addrTrusted(trusted []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// rightmostUntrusted walks entries from the right (the nearest hop) and
// returns the first address that is not a trusted proxy; the zero Addr
// when that entry is not an address. When every entry is a trusted
// proxy, the left-most one is the client.
func rightmostUntrusted[T any](trusted []netip.Prefix, entries []T, addr func(T) (netip.Addr, bool)) netip.Addr {
	var last netip.Addr
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := addr(entries[i])
		if !ok {
			return netip.Addr{}
		}
		if !addrTrusted(trusted, a) {
			return a
		}
		last = a
	}
	return last
}

// parseNode reads one node of an address list: an IP address, optionally
// bracketed (IPv6) and with a port, as RFC 7239 §6 and the X-Forwarded-For
// habit of some proxies write it. A zone is refused.
func parseNode(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		s = ap.Addr().String()
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// splitList splits a list-valued header's lines into their
// comma-separated elements, in order (RFC 9110 §5.3: the lines of one
// field combine into one list).
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, e := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(e))
		}
	}
	return out
}

// lastValue is the last comma-separated element of a header's values.
func lastValue(values []string) string {
	elems := splitList(values)
	if len(elems) == 0 {
		return ""
	}
	return elems[len(elems)-1]
}

// forwardedElement is one element of RFC 7239 Forwarded (§4): the
// parameters one proxy added.
type forwardedElement struct{ forNode, host, proto string }

// fromForwarded reads RFC 7239 Forwarded headers: the client is the
// right-most element whose for= is not a trusted proxy (§7.4); host and
// proto are that element's (what the client asked that proxy for).
// Quoted values are unquoted (§4); a quoted comma would split an element,
// which at worst leaves the peer's address in place.
func fromForwarded(trusted []netip.Prefix, values []string) (client netip.Addr, host, proto string) {
	var elems []forwardedElement
	for _, e := range splitList(values) {
		var fe forwardedElement
		for _, pair := range strings.Split(e, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok {
				continue
			}
			v = strings.Trim(v, `"`)
			switch strings.ToLower(k) {
			case "for":
				fe.forNode = v
			case "host":
				fe.host = v
			case "proto":
				fe.proto = strings.ToLower(v)
			}
		}
		elems = append(elems, fe)
	}
	client = rightmostUntrusted(trusted, elems, func(e forwardedElement) (netip.Addr, bool) { return parseNode(e.forNode) })
	if !client.IsValid() {
		return client, "", ""
	}
	for i := len(elems) - 1; i >= 0; i-- {
		if a, ok := parseNode(elems[i].forNode); ok && a == client {
			return client, elems[i].host, elems[i].proto
		}
	}
	return client, "", ""
}
