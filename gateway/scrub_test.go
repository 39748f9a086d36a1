package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlainJSON: what plainJSON calls plain, encoding/json writes
// unchanged; the characters of tokens (base64url, JWT dots, '~', '+', '/',
// '=') are plain.
func TestPlainJSON(t *testing.T) {
	for c := range 256 {
		s := "tok" + string([]byte{byte(c)}) + "en"
		b, _ := json.Marshal(s)
		if plainJSON(s) && string(b[1:len(b)-1]) != s {
			t.Errorf("plainJSON(%q) is true, but encoding/json writes %s", s, b)
		}
	}
	if tok := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln-_~+/="; !plainJSON(tok) {
		t.Errorf("plainJSON(%q) is false", tok)
	}
}

// TestScrubNames: a held token or a pattern printed as a member's name is
// scrubbed like a value, and names that meet once scrubbed both stay.
func TestScrubNames(t *testing.T) {
	s, err := newScrubber(Redact{Presets: []string{"email"}})
	if err != nil {
		t.Fatal(err)
	}
	const tok = "tok-secret-0123456789"
	out, n := s.scrub([]byte(`{"jsonrpc":"2.0","id":1,"result":{"`+tok+`":1,"a@b.example":{"x":"`+tok+`"},"ok":true}}`), []string{tok})
	if n != 3 || strings.Contains(string(out), tok) || strings.Contains(string(out), "a@b.example") {
		t.Fatalf("scrubbed %d: %s", n, out)
	}
	var m struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Result) != 3 || m.Result["ok"] != true {
		t.Errorf("members after scrubbing: %v", m.Result)
	}
}
