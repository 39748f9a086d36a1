package wire

import (
	"fmt"
	"sort"
	"strings"
)

// AuthChallenge is one challenge of a WWW-Authenticate header
// (RFC 9110 §11.6.1): a scheme and its auth-params (names lowercased).
type AuthChallenge struct {
	Scheme string
	Params map[string]string
}

// Param returns an auth-param by (case-insensitive) name.
func (c AuthChallenge) Param(name string) string { return c.Params[strings.ToLower(name)] }

// FormatBearerChallenge renders a Bearer challenge (RFC 6750 §3) with the
// given params in a stable order, each value a quoted-string with '"' and
// '\' escaped (RFC 9110 §5.6.4). Empty values are left out, and
// error_description is passed through ErrorDescription.
func FormatBearerChallenge(params map[string]string) string {
	if d, ok := params["error_description"]; ok {
		params["error_description"] = ErrorDescription(d)
	}
	order := []string{"realm", "error", "error_description", "resource_metadata", "scope"}
	seen := map[string]bool{}
	var parts []string
	add := func(k string) {
		if v, ok := params[k]; ok && v != "" && !seen[k] {
			seen[k] = true
			parts = append(parts, fmt.Sprintf(`%s="%s"`, k, quoteEscape(v)))
		}
	}
	for _, k := range order {
		add(k)
	}
	var rest []string
	for k := range params {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		add(k)
	}
	if len(parts) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// ErrorDescription limits an error_description to the characters RFC 6749
// §5.2 and RFC 6750 §3 allow (printable ASCII except '"' and '\'): '"'
// becomes an apostrophe, '\' a slash, "§" the word "section", "…" three
// dots, and anything else outside printable ASCII a question mark.
func ErrorDescription(s string) string {
	s = strings.NewReplacer("§", "section ", "…", "...").Replace(s)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case r == '\\':
			return '/'
		case r < 0x20 || r > 0x7e:
			return '?'
		}
		return r
	}, s)
}

func quoteEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// ParseWWWAuthenticate parses one or more WWW-Authenticate header values
// into challenges (RFC 9110 §11.6.1). It accepts quoted and unquoted
// (token) values, escaped quotes, several challenges in one header, and
// irregular spacing. token68 credentials are kept under the "" key.
func ParseWWWAuthenticate(headers []string) []AuthChallenge {
	var out []AuthChallenge
	for _, h := range headers {
		p := &authParser{s: h}
		out = append(out, p.parse()...)
	}
	return out
}

// BearerChallenge returns the first Bearer challenge among headers.
func BearerChallenge(headers []string) (AuthChallenge, bool) {
	for _, c := range ParseWWWAuthenticate(headers) {
		if strings.EqualFold(c.Scheme, "bearer") {
			return c, true
		}
	}
	return AuthChallenge{}, false
}

type authParser struct {
	s   string
	pos int
}

func (p *authParser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *authParser) skipSpaceAndCommas() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == ',') {
		p.pos++
	}
}

// IsTokenChar reports whether c may appear in a token (RFC 9110 §5.6.2
// tchar).
func IsTokenChar(c byte) bool { return tokenChars[c] }

var tokenChars = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// IsToken reports whether s is a token (RFC 9110 §5.6.2): a header
// field name, an auth scheme.
func IsToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !tokenChars[s[i]] {
			return false
		}
	}
	return s != ""
}

func (p *authParser) token() string {
	start := p.pos
	for p.pos < len(p.s) && IsTokenChar(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// bare reads an unquoted value. RFC 9110 wants a token, but servers also
// send unquoted URLs, so it runs to the next comma or whitespace.
func (p *authParser) bare() string {
	start := p.pos
	for p.pos < len(p.s) && strings.IndexByte(", \t\"", p.s[p.pos]) < 0 {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *authParser) quoted() string {
	// p.s[p.pos] == '"'
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.s):
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
		case c == '"':
			p.pos++
			return b.String()
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return b.String()
}

func (p *authParser) parse() []AuthChallenge {
	var out []AuthChallenge
	var cur *AuthChallenge
	for {
		p.skipSpaceAndCommas()
		if p.pos >= len(p.s) {
			break
		}
		name := p.token()
		if name == "" {
			p.pos++ // skip a stray character
			continue
		}
		p.skipSpace()
		if p.pos < len(p.s) && p.s[p.pos] == '=' && cur != nil {
			// Could be an auth-param or a token68 ending in '='.
			p.pos++
			p.skipSpace()
			var val string
			if p.pos < len(p.s) && p.s[p.pos] == '"' {
				val = p.quoted()
			} else {
				val = p.bare()
			}
			cur.Params[strings.ToLower(name)] = val
			continue
		}
		// A new challenge: scheme name, optionally followed by a token68.
		out = append(out, AuthChallenge{Scheme: name, Params: map[string]string{}})
		cur = &out[len(out)-1]
		p.skipSpace()
		// token68: runs to the next comma or end without an '=' followed by a value.
		save := p.pos
		t := p.token68()
		p.skipSpace()
		if t != "" && (p.pos >= len(p.s) || p.s[p.pos] == ',') && !looksLikeParam(p.s, save) {
			cur.Params[""] = t
		} else {
			p.pos = save
		}
	}
	return out
}

func (p *authParser) token68() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if IsTokenChar(c) || c == '/' || c == '=' {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

// looksLikeParam reports whether s at i starts "name =" followed by a value.
func looksLikeParam(s string, i int) bool {
	j := i
	for j < len(s) && IsTokenChar(s[j]) {
		j++
	}
	if j == i {
		return false
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) || s[j] != '=' {
		return false
	}
	j++
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j < len(s) && s[j] != '=' && s[j] != ','
}
