package host

import (
	"net/http"

	"github.com/agentauth/agentauth/resource"
)

// SchemeMetadataHandler serves, at its path-aware well-known address on the
// host's origin (RFC 9728 §3.1), the RFC 9728 document of every scheme
// whose resource is not the host's own but shares its origin (by default
// every scheme but schemes[0], see Config.Resolve), and passes every other
// request to next, the HTTP face (which serves the host's own document).
// It follows reloads: the schemes in force answer.
func (h *Host) SchemeMetadataHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostOrigin, _, _ := resource.MetadataAddress(h.cfg.Resource)
		for _, sc := range h.r().schemes {
			if sc.Resource == h.cfg.Resource {
				continue
			}
			origin, path, query := resource.MetadataAddress(sc.Resource)
			if origin != hostOrigin || path != r.URL.EscapedPath() || query != r.URL.RawQuery {
				continue
			}
			resource.ServeMetadata(w, r, h.metadata(sc))
			return
		}
		next.ServeHTTP(w, r)
	})
}
