package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// What a server says back about a value it was sent: peers' values go into
// error messages, refusals and logs bounded and quoted, never raw.

// Truncate cuts an untrusted value to 64 bytes for a message or a log.
func Truncate(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}

// Clip quotes an untrusted value, truncated, for a message (Go quoting:
// control characters escaped).
func Clip(s string) string { return fmt.Sprintf("%q", Truncate(s)) }

// QuoteValue puts an untrusted value in single quotes for a message,
// truncated, with anything but printable ASCII replaced by '?' (so it fits
// an RFC 6750 error_description as well as a JSON-RPC message).
func QuoteValue(s string) string {
	s = Truncate(s)
	b := make([]byte, 0, len(s)+2)
	b = append(b, '\'')
	for _, r := range s {
		if r < 0x20 || r > 0x7e || r == utf8.RuneError {
			r = '?'
		}
		b = append(b, byte(r))
	}
	return string(append(b, '\''))
}

// JSONString is raw as a string when it is a JSON string.
func JSONString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
