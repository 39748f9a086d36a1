package gateway

import (
	"encoding/json"
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
