package issuer

import (
	"net/url"
	"strings"
)

// maxReturnToBytes bounds the page a login returns to: an authorization
// request with every parameter at its bound fits.
const maxReturnToBytes = 16 << 10

// localPath decides on a return_to (the page a sign-in sends the browser
// back to) and returns its canonical form, or "" when it is refused. The
// value serve redirects to is exactly the one returned: nothing cleans it
// afterwards (http.Redirect would, and its path.Clean turned a checked
// "/a/../\evil.example" into "/\evil.example").
//
// The canonical form is what a browser makes of the value (WHATWG URL
// parsing of a special scheme's path), so the check judges what the
// browser will fetch:
//   - no byte below 0x21, no DEL, nothing outside ASCII: browsers drop
//     tabs and newlines anywhere and trim spaces, so "/\t/evil" is
//     "//evil" to them; serve's own return_to values are always
//     percent-encoded, so these are refused rather than rewritten;
//   - in the path (before "?" or "#"), "\" is "/";
//   - a percent-encoded "/", "\", ".", "%" or control byte in the path is
//     refused: browsers leave them encoded, but a server that decodes
//     before routing or redirecting would not;
//   - dot segments are removed (RFC 3986 §5.2.4);
//   - what is left must be an absolute path that does not begin with
//     "//" (a network-path reference, RFC 3986 §4.2: another host).
func localPath(s string) string {
	if s == "" || len(s) > maxReturnToBytes {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return ""
		}
	}
	end := strings.IndexAny(s, "?#")
	if end < 0 {
		end = len(s)
	}
	p, rest := strings.ReplaceAll(s[:end], `\`, "/"), s[end:]
	if !strings.HasPrefix(p, "/") || !plainEscapes(p) {
		return ""
	}
	p = removeDotSegments(p)
	if strings.HasPrefix(p, "//") {
		return ""
	}
	u, err := url.Parse(p + rest)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return ""
	}
	return p + rest
}

// plainEscapes reports whether every percent-encoding in path is
// well-formed and encodes none of "/", "\", ".", "%" or a control byte
// or space.
func plainEscapes(path string) bool {
	for i := 0; i < len(path); i++ {
		if path[i] != '%' {
			continue
		}
		if i+2 >= len(path) {
			return false
		}
		b, ok := unhex(path[i+1], path[i+2])
		if !ok || b <= ' ' || b == 0x7f || b == '/' || b == '\\' || b == '.' || b == '%' {
			return false
		}
		i += 2
	}
	return true
}

func unhex(hi, lo byte) (byte, bool) {
	h, ok1 := hexDigit(hi)
	l, ok2 := hexDigit(lo)
	return h<<4 | l, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// removeDotSegments is RFC 3986 §5.2.4 for an absolute path: "." and ".."
// segments are resolved as a browser resolves them, keeping a trailing
// "/" where the last segment was one of them and every empty segment
// (so "/a/..//x" stays "//x", which localPath then refuses).
func removeDotSegments(p string) string {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "")
		}
	}
	return "/" + strings.Join(out, "/")
}
