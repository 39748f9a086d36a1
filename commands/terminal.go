package commands

import (
	"strings"
	"unicode"
)

// safeText is what a string from a remote peer (a host's labels and
// challenges, metadata, token responses, error descriptions, claims)
// becomes before it reaches a terminal: C0 and C1 control characters, DEL
// and bidirectional-text controls are removed, so a peer can neither send
// escape sequences (set the window title, clear the screen, forge a
// hyperlink, move the cursor over a line agentauth wrote) nor start a new
// line of its own or reorder what is shown. It is the one function for
// that; JSON output needs none (encoding/json escapes control characters).
func safeText(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

// safeLines is safeText for a message of several lines that agentauth
// composed itself: each line is cleaned and the line breaks are kept.
func safeLines(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safeText(l)
	}
	return strings.Join(lines, "\n")
}

func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true // bidirectional-text controls (Unicode UAX #9)
	}
	return false
}
