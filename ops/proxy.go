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

// forwardedHeaders are the headers a reverse proxy sets: RFC 7239
// Forwarded and the de-facto X-Forwarded-* family.
var forwardedHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// Forwarded applies a trusted reverse proxy's forwarded headers to the
// request before next sees it: the client's address becomes RemoteAddr,
// the host the client asked for becomes Host (which the Host check then
// judges), the scheme becomes URL.Scheme. Only a request whose peer is in
// trusted gets this; from any other peer the headers are removed, so
// nothing downstream can be fooled by them. The proxy's own entry is the
// last one of each header (RFC 7239 §4, a proxy appends): that is the
// one taken.
func Forwarded(trusted []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !peerTrusted(trusted, r.RemoteAddr) {
			for _, h := range forwardedHeaders {
				r.Header.Del(h)
			}
			next.ServeHTTP(w, r)
			return
		}
		forAddr, host, proto := fromForwarded(r.Header.Values("Forwarded"))
		if forAddr == "" {
			forAddr = lastValue(r.Header.Values("X-Forwarded-For"))
		}
		if host == "" {
			host = lastValue(r.Header.Values("X-Forwarded-Host"))
		}
		if proto == "" {
			proto = lastValue(r.Header.Values("X-Forwarded-Proto"))
		}
		if a, err := netip.ParseAddr(strings.Trim(forAddr, "[]")); err == nil {
			r.RemoteAddr = net.JoinHostPort(a.String(), "0")
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
	if len(trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// lastValue is the last comma-separated element of a header's values.
func lastValue(values []string) string {
	if len(values) == 0 {
		return ""
	}
	parts := strings.Split(values[len(values)-1], ",")
	return strings.TrimSpace(parts[len(parts)-1])
}

// fromForwarded reads the last element of RFC 7239 Forwarded headers
// (§4: for, host, proto parameters; quoted values unquoted).
func fromForwarded(values []string) (forAddr, host, proto string) {
	elem := lastValue(values)
	for _, pair := range strings.Split(elem, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		switch strings.ToLower(k) {
		case "for":
			// A quoted IPv6 node carries brackets and may carry a port.
			if h, _, err := net.SplitHostPort(v); err == nil {
				v = h
			}
			forAddr = v
		case "host":
			host = v
		case "proto":
			proto = strings.ToLower(v)
		}
	}
	return forAddr, host, proto
}
