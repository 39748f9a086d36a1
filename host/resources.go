package host

import (
	"net/http"
	"net/url"
	"strings"
)

// metadataAddress is where resource's RFC 9728 document lives on its own
// origin: the well-known prefix inserted between host and path (§3.1),
// e.g. /.well-known/oauth-protected-resource/mcp/github for
// http://127.0.0.1:7777/mcp/github, with the resource's query.
func metadataAddress(resource string) (origin, path, query string) {
	u, err := url.Parse(resource)
	if err != nil { // checked by Config.checkResolved
		return "", "", ""
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host, WellKnownResourceMetadata + p, u.RawQuery
}

// SchemeMetadataHandler serves, at its path-aware well-known address on the
// host's origin (RFC 9728 §3.1), the RFC 9728 document of every scheme
// whose resource is not the host's own but shares its origin (by default
// every scheme but schemes[0], see Config.Resolve), and passes every other
// request to next, the HTTP face (which serves the host's own document).
// It follows reloads: the schemes in force answer.
func (h *Host) SchemeMetadataHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostOrigin, _, _ := metadataAddress(h.cfg.Resource)
		for _, sc := range h.r().schemes {
			if sc.Resource == h.cfg.Resource {
				continue
			}
			origin, path, query := metadataAddress(sc.Resource)
			if origin != hostOrigin || path != r.URL.EscapedPath() || query != r.URL.RawQuery {
				continue
			}
			w.Header().Set("Access-Control-Allow-Origin", "*")
			switch r.Method {
			case http.MethodGet, http.MethodHead:
				writeHTTPJSON(w, http.StatusOK, h.metadata(sc))
			case http.MethodOptions:
				preflight(w, "GET")
			default:
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed: GET the protected resource metadata", http.StatusMethodNotAllowed)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}
