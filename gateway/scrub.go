package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// redacted replaces what the scrubber removes.
const redacted = "[redacted]"

// minSecret is the shortest held token the scrubber looks for: shorter
// values would redact ordinary words.
const minSecret = 8

// scrubber replaces, in every string of a backend's message, the tokens
// serve holds for the call (the caller's, the upstream token it gave the
// backend) and the configured patterns (ContextSanitizer).
type scrubber struct {
	// pattern is the configured patterns as one alternation, so that a
	// message is scanned once however many there are; nil for none.
	pattern *regexp.Regexp
}

func newScrubber(r Redact) (*scrubber, error) {
	var alts []string
	for _, p := range r.Presets {
		if Presets[p] == "" {
			return nil, fmt.Errorf("redact.presets: no preset %q", p)
		}
		alts = append(alts, "(?:"+Presets[p]+")")
	}
	for _, p := range r.Patterns {
		if _, err := regexp.Compile(p); err != nil {
			return nil, err
		}
		// A group scopes the pattern's flags ((?i) …) to it (RE2 syntax).
		alts = append(alts, "(?:"+p+")")
	}
	s := &scrubber{}
	if len(alts) > 0 {
		re, err := regexp.Compile(strings.Join(alts, "|"))
		if err != nil {
			return nil, err
		}
		s.pattern = re
	}
	return s, nil
}

// scrub returns data with every match replaced and the number of
// replacements. Strings are scrubbed after JSON decoding, so an escaped
// token is found too; data is decoded and re-encoded only when the raw
// bytes may hold a match, and re-encoded only when something matched.
func (s *scrubber) scrub(data []byte, secrets []string) ([]byte, int) {
	var held []string
	for _, t := range secrets {
		if len(t) >= minSecret {
			held = append(held, t)
		}
	}
	if !s.mayMatch(data, held) {
		return data, 0
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return data, 0
	}
	n := 0
	v = s.walk(v, held, &n)
	if n == 0 {
		return data, 0
	}
	out, err := json.Marshal(v)
	if err != nil {
		return data, 0
	}
	return out, n
}

// mayMatch is the fast path: whether the raw message could hold a match.
// A held token is looked for in its JSON-escaped form too.
func (s *scrubber) mayMatch(data []byte, held []string) bool {
	for _, t := range held {
		if len(t) > len(data) {
			continue // nor can its escaped form, which is no shorter
		}
		if bytes.Contains(data, []byte(t)) {
			return true
		}
		if plainJSON(t) {
			continue // its escaped form is itself
		}
		if e, _ := json.Marshal(t); bytes.Contains(data, e[1:len(e)-1]) {
			return true
		}
	}
	if len(held) > 0 && bytes.Contains(data, []byte(`\u`)) {
		return true
	}
	return s.pattern != nil && s.pattern.Match(data)
}

// plainJSON reports whether json.Marshal writes t unchanged between its
// quotes: printable ASCII without the characters it escapes. It runs on
// every held token of every message, hence the table.
func plainJSON(t string) bool {
	for i := 0; i < len(t); i++ {
		if !plainByte[t[i]] {
			return false
		}
	}
	return true
}

var plainByte = func() (p [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		p[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return p
}()

func (s *scrubber) walk(v any, held []string, n *int) any {
	switch x := v.(type) {
	case string:
		return s.scrubString(x, held, n)
	case []any:
		for i := range x {
			x[i] = s.walk(x[i], held, n)
		}
	case map[string]any:
		// A member's name is scrubbed like its value: a backend can
		// print a secret as either. Names that meet once scrubbed are
		// told apart by a number ("[redacted] (2)").
		for _, k := range slices.Collect(maps.Keys(x)) {
			e := s.walk(x[k], held, n)
			sk := s.scrubString(k, held, n)
			if sk == k {
				x[k] = e
				continue
			}
			delete(x, k)
			name := sk
			for i := 2; ; i++ {
				if _, taken := x[name]; !taken {
					break
				}
				name = fmt.Sprintf("%s (%d)", sk, i)
			}
			x[name] = e
		}
	}
	return v
}

func (s *scrubber) scrubString(x string, held []string, n *int) string {
	for _, t := range held {
		if c := strings.Count(x, t); c > 0 {
			*n += c
			x = strings.ReplaceAll(x, t, redacted)
		}
	}
	if s.pattern != nil {
		x = s.pattern.ReplaceAllStringFunc(x, func(string) string { *n++; return redacted })
	}
	return x
}
