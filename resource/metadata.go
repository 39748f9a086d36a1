package resource

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// WellKnownResourceMetadata is the RFC 9728 §3 well-known path prefix.
const WellKnownResourceMetadata = "/.well-known/oauth-protected-resource"

// MetadataAddress is where resource's RFC 9728 document lives on its own
// origin: the well-known prefix inserted between host and path (§3.1),
// e.g. /.well-known/oauth-protected-resource/mcp/github for
// http://127.0.0.1:7777/mcp/github, with the resource's query. All three
// are empty when resource is not a URL.
func MetadataAddress(resource string) (origin, path, query string) {
	u, err := url.Parse(resource)
	if err != nil {
		return "", "", ""
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host, WellKnownResourceMetadata + p, u.RawQuery
}

// MetadataURL is the address of resource's RFC 9728 document (see
// MetadataAddress), e.g. http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp;
// "" when resource is not a URL.
func MetadataURL(resource string) string {
	origin, path, query := MetadataAddress(resource)
	if origin == "" {
		return ""
	}
	if query != "" {
		path += "?" + query
	}
	return origin + path
}

// ServeMetadata answers an RFC 9728 §3.2 metadata request with doc,
// readable from any origin (CORS).
func ServeMetadata(w http.ResponseWriter, r *http.Request, doc wire.ProtectedResourceMetadata) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		WriteJSON(w, http.StatusOK, doc)
	case http.MethodOptions:
		Preflight(w, r, "GET")
	default:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: GET the protected resource metadata", http.StatusMethodNotAllowed)
	}
}
