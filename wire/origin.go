package wire

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Origin is the web origin (RFC 6454 §4) of a ws, wss, http or https URL,
// as "scheme://host[:port]" with the scheme and host lowercased and the
// default port left out, and with ws mapped to http and wss to https: an
// agent host's WebSocket face and the HTTP resource it declares on the same
// host and port are one server. It is "" for anything else (a stdio:
// target, a URN, a malformed URL), which is the origin of nothing.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "ws":
		scheme = "http"
	case "wss":
		scheme = "https"
	case "http", "https":
	default:
		return ""
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return ""
	}
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

// SameOrigin reports whether a and b have the same non-empty Origin.
func SameOrigin(a, b string) bool {
	o := Origin(a)
	return o != "" && o == Origin(b)
}

// maxRedirects is how many redirects CheckRedirect follows.
const maxRedirects = 10

// CheckRedirect is an http.Client CheckRedirect for clients that send
// bearer tokens: it follows at most maxRedirects redirects and drops the
// Authorization header on a redirect to another origin, as the Fetch
// standard does (§4.4 HTTP-redirect fetch). Go's own rule compares host
// names only, so a redirect to another port of the same host would carry
// the token to a server it was not issued for (RFC 6750 §5.3, RFC 8707).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !SameOrigin(req.URL.String(), via[0].URL.String()) {
		req.Header.Del("Authorization")
	}
	return nil
}
