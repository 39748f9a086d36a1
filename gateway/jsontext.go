package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/agentauth/agentauth/wire"
)

// What the gateway reads of JSON text as bytes, without decoding it: how
// deep it nests, where its strings are, and names a decoder could confuse.

// depth is how deep a JSON value nests (0 for a scalar), counted over its
// bytes without decoding it (brackets inside strings do not count).
func depth(raw json.RawMessage) int {
	d, most := 0, 0
	outsideStrings(raw, func(i int) int {
		switch raw[i] {
		case '{', '[':
			d++
			most = max(most, d)
		case '}', ']':
			d--
		}
		return i + 1
	})
	return most
}

// outsideStrings calls f with the index of each byte of the JSON text raw
// that is outside its strings (a string's quotes included), and goes on
// from the index f returns, which is past the one it was given.
func outsideStrings(raw []byte, f func(i int) int) {
	inString, escaped := false, false
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		default:
			i = f(i)
			continue
		}
		i++
	}
}

// ambiguousMember finds, anywhere in the JSON value raw, an object with
// two members whose names are the same once case-folded: a backend that
// decodes arguments into Go structs matches names case-insensitively
// (encoding/json, whose folding is bytes.EqualFold's) and takes either,
// while the schema checked them as two ("path" valid, "PATH" unchecked
// without additionalProperties: false); an exact repeat is read
// first-wins by some decoders, last-wins by others. It returns the second
// name. raw is valid JSON (the message was decoded already) and nests at
// most MaxArgumentDepth deep.
func ambiguousMember(raw []byte) (string, bool) {
	found := ""
	v := bytes.TrimLeft(raw, " \t\r\n")
	switch {
	case len(v) > 0 && v[0] == '{':
		// A repeated name first, then each member's value, in order: the
		// first found is the one returned.
		name, dup := duplicateMember(v, func(_, value []byte) {
			if found == "" {
				found, _ = ambiguousMember(value)
			}
		})
		if found == "" && dup {
			found = name
		}
	case len(v) > 0 && v[0] == '[':
		wire.Elements(v, func(value []byte) {
			if found == "" {
				found, _ = ambiguousMember(value)
			}
		})
	}
	return found, found != ""
}

// foldName is a key equal for two names exactly when bytes.EqualFold
// says they are: each rune as the smallest rune of its Unicode
// simple-folding orbit (so "k", "K" and the Kelvin sign share one).
func foldName(name []byte) string {
	var b strings.Builder
	for _, r := range string(name) {
		for {
			f := unicode.SimpleFold(r)
			if f <= r {
				r = f
				break
			}
			r = f
		}
		b.WriteRune(r)
	}
	return b.String()
}
