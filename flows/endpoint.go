package flows

import (
	"context"
	"net/http"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// ResourceAtOrigin is the protected resource that target's origin
// points at, when it lies on target's origin and is not target itself;
// "" otherwise. It answers "where is the MCP endpoint?" for a target that
// was answered 404, such as an origin written without /mcp. The origin's
// root metadata (GET {origin}/.well-known/oauth-protected-resource, RFC
// 9728 §3.1) names it; where that names the origin itself (as serve's
// does, RFC 9728 §3.3), the metadata of the conventional endpoint /mcp
// (RFC 9728 §3.1's path form) is asked, and counts only when it names
// exactly that endpoint. A document is only a pointer for a hint: it is
// not used as target's metadata, and a call to the resource it names runs
// every check again.
func ResourceAtOrigin(ctx context.Context, hc *http.Client, target string, opts ...FetchOption) string {
	tu, err := checkURL("target", target)
	if err != nil {
		return ""
	}
	hc, o := guard(hc), origin(tu)
	resource := func(path string) string {
		var md wire.ProtectedResourceMetadata
		if getJSON(ctx, hc, o+"/.well-known/oauth-protected-resource"+path, newFetchOptions(opts), &md) != nil {
			return ""
		}
		ru, err := checkURL("resource", md.Resource)
		if err != nil || ru.Fragment != "" || !wire.SameOrigin(md.Resource, target) {
			return ""
		}
		return md.Resource
	}
	r := resource("")
	if r == strings.TrimSuffix(o, "/") || r == o+"/" {
		if r = resource("/mcp"); r != o+"/mcp" {
			return ""
		}
	}
	if r == target {
		return ""
	}
	return r
}
