package hostile

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// Header modes: what the backend takes from the MCP 2026-07-28 standard
// headers instead of the body.
func init() {
	// header-routing: a tools/call runs the tool Mcp-Name names when the
	// request has one (as a router in front of several servers would).
	modes["header-routing"] = func(b *backend) {
		body := b.name
		b.name = func(r *http.Request, req request) string {
			if v := r.Header.Get("Mcp-Name"); v != "" {
				return decodeHeader(v)
			}
			return body(r, req)
		}
	}
}

func decodeHeader(v string) string {
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			if d, err := base64.StdEncoding.DecodeString(inner); err == nil {
				return string(d)
			}
		}
	}
	return v
}
