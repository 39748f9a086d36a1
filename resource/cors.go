package resource

import (
	"net/http"
	"strings"
)

// The CORS protocol (https://fetch.spec.whatwg.org/#http-cors-protocol)
// for the MCP endpoints: which origins may call them is the guard's
// decision (host.NewGuard, from --allowed-origin and the server's own
// origins); these only write the headers.

// mcpRequestHeaders are the request headers an MCP client sends on
// Streamable HTTP (MCP 2025-11-25 "Transports"; Mcp-Method and Mcp-Name
// from 2026-07-28, Last-Event-ID to resume a stream).
const mcpRequestHeaders = "Authorization, Content-Type, Mcp-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID"

// mcpParamPrefix starts the headers MCP 2026-07-28 derives from a tool's
// parameters (Mcp-Param-NAME): a preflight that asks for them is allowed
// them by name, since their names cannot be listed in advance.
const mcpParamPrefix = "mcp-param-"

// AllowOrigin lets pages of origin, which a guard vetted, read the
// answer: it names that origin, never "*", exposes the headers expose
// lists (a comma-separated list, e.g. "WWW-Authenticate, Mcp-Session-Id")
// and varies on Origin, so that no cache gives the answer to another
// origin.
func AllowOrigin(w http.ResponseWriter, origin, expose string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	if expose != "" {
		h.Set("Access-Control-Expose-Headers", expose)
	}
	h.Add("Vary", "Origin")
}

// Preflight answers a CORS preflight request r for methods (a
// comma-separated list), allowing the headers an MCP client sends and
// the Mcp-Param-* headers r asks for.
func Preflight(w http.ResponseWriter, r *http.Request, methods string) {
	allow := mcpRequestHeaders
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if len(name) > len(mcpParamPrefix) && strings.EqualFold(name[:len(mcpParamPrefix)], mcpParamPrefix) &&
				plainHeaderName(name) && len(allow) < 4096 {
				allow += ", " + name
			}
		}
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", allow)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// plainHeaderName reports whether name has only letters, digits and
// hyphens: the Mcp-Param-* names MCP derives, and nothing that could
// end or split a header line.
func plainHeaderName(name string) bool {
	for _, c := range name {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}
