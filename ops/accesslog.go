package ops

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxLoggedPath bounds the path an access log record repeats.
const maxLoggedPath = 256

// accessLog writes one debug record (msg "http") for a request of serve's
// listener: method, path, the names of its query parameters (never their
// values: a code, a state or a connection token travel there), the status
// (0 for a WebSocket upgrade, logged as it starts, with upgrade=websocket),
// the duration and the client's address (the forwarded one when a trusted
// proxy sent it, see Forwarded). Nothing else of the request is read: no
// header (Authorization, DPoP, cookies) and no body (forms with codes,
// refresh tokens, client secrets), so no token, code or secret can reach
// the log. Debug: it shows with --log-level debug or --verbose.
func (r *Recorder) accessLog(req *http.Request, status int, d time.Duration) {
	if r.audit == nil || !r.audit.Enabled(req.Context(), slog.LevelDebug) {
		return
	}
	path := req.URL.EscapedPath()
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "…"
	}
	attrs := []slog.Attr{slog.String("method", req.Method), slog.String("path", path)}
	if q := queryNames(req.URL.RawQuery); q != "" {
		attrs = append(attrs, slog.String("query", q))
	}
	if status == 0 {
		attrs = append(attrs, slog.String("upgrade", strings.ToLower(req.Header.Get("Upgrade"))))
	} else {
		attrs = append(attrs, slog.Int("status", status), slog.Duration("duration", d))
	}
	attrs = append(attrs, slog.String("client", req.RemoteAddr))
	r.audit.LogAttrs(context.Background(), slog.LevelDebug, "http", attrs...)
}

// queryNames lists the parameter names of a raw query, in order, joined by
// "&" (code&state&iss), each at most 64 bytes and at most 16 of them.
func queryNames(raw string) string {
	if raw == "" {
		return ""
	}
	var names []string
	for part := range strings.SplitSeq(raw, "&") {
		if len(names) == 16 {
			names = append(names, "…")
			break
		}
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if len(name) > 64 {
			name = name[:64] + "…"
		}
		names = append(names, name)
	}
	return strings.Join(names, "&")
}
