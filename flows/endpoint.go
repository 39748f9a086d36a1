package flows

import (
	"context"
	"net/http"

	"github.com/agentauth/agentauth/wire"
)

// ResourceAtOrigin is the protected resource that the root metadata of
// target's origin names (GET {origin}/.well-known/oauth-protected-resource,
// RFC 9728 §3.1), when it lies on target's origin and is not target
// itself; "" otherwise. It answers "where is the MCP endpoint?" for a
// target that was answered 404, such as an origin written without /mcp.
// The document is only a pointer for a hint: it is not used as target's
// metadata (RFC 9728 §3.3 refuses that), and a call to the resource it
// names runs every check again.
func ResourceAtOrigin(ctx context.Context, hc *http.Client, target string, opts ...FetchOption) string {
	tu, err := checkURL("target", target)
	if err != nil {
		return ""
	}
	var md wire.ProtectedResourceMetadata
	if getJSON(ctx, guard(hc), origin(tu)+"/.well-known/oauth-protected-resource", newFetchOptions(opts), &md) != nil {
		return ""
	}
	ru, err := checkURL("resource", md.Resource)
	if err != nil || ru.Fragment != "" || md.Resource == target || !wire.SameOrigin(md.Resource, target) {
		return ""
	}
	return md.Resource
}
