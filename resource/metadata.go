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

// RootMetadata is doc as served at the root well-known URL
// (/.well-known/oauth-protected-resource) of a resource with a path, such
// as http://127.0.0.1:7777/mcp: the same document, its resource the
// origin (http://127.0.0.1:7777), because RFC 9728 §3.3 has a client
// check that the resource equals the identifier the URL was built from,
// and the root URL is built from the origin. For a resource without a
// path the root URL is its own, and doc is returned as is.
//
// The clients that read it:
//   - the MCP Go SDK (auth.AuthorizationCodeHandler) tries the root URL
//     last, after the challenge's resource_metadata and the path-aware
//     URL, and wants the resource exactly equal to the origin with no
//     path ("http://host:port", not "http://host:port/");
//   - Gemini CLI (OAuthUtils.discoverOAuthConfig) fetches it when it
//     falls back to the origin, and throws ResourceMismatchError unless
//     the resource, normalized, is the origin ("/" path); it then asks
//     for tokens for its own server URL (.../mcp), whatever the document
//     says;
//   - the TypeScript SDK (and with it mcp-remote and the Inspector) reads
//     it only when the path-aware URL is missing, and accepts any resource
//     on the same origin whose path is a prefix of the server's
//     (checkResourceAllowed); it would then ask for tokens for the origin,
//     which the resource does not accept: it never gets there, as every
//     challenge names the path-aware document, which is always served.
//
// The document does not make the origin a resource: tokens are still
// accepted only for their resource (RFC 8707), the path.
func RootMetadata(doc wire.ProtectedResourceMetadata) wire.ProtectedResourceMetadata {
	u, err := url.Parse(doc.Resource)
	if err != nil || u.Host == "" || strings.TrimSuffix(u.EscapedPath(), "/") == "" && u.RawQuery == "" {
		return doc
	}
	doc.Resource = u.Scheme + "://" + u.Host
	return doc
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
