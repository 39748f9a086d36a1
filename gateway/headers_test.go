package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestCheckHeader: a standard header must say what the body says, after
// Base64 decoding and as a number for numbers; it is missing only where
// required, and never sent for a value the body lacks.
func TestCheckHeader(t *testing.T) {
	for _, c := range []struct {
		sent          []string
		want          string
		has, required bool
		problem       string // "" or a part of it
	}{
		{[]string{"echo"}, "echo", true, true, ""},
		{[]string{" echo "}, "echo", true, true, ""},
		{[]string{"=?base64?w6ljaG8=?="}, "écho", true, true, ""},
		{[]string{"=?base64?not base64?="}, "x", true, true, "not valid Base64"},
		{[]string{"42.0"}, "42", true, true, ""},
		{[]string{"42"}, "43", true, true, "body says '43'"},
		{[]string{"Echo"}, "echo", true, true, "but the body says 'echo'"},
		{[]string{"echo", "echo"}, "echo", true, true, "2 Mcp-Name headers"},
		{nil, "echo", true, true, "missing"},
		{nil, "echo", true, false, ""},
		{[]string{"admin"}, "", false, false, "the body has no such value"},
	} {
		h := http.Header{}
		for _, v := range c.sent {
			h.Add("Mcp-Name", v)
		}
		got := checkHeader(h, "Mcp-Name", c.want, c.has, c.required)
		if (got == "") != (c.problem == "") || !strings.Contains(got, c.problem) {
			t.Errorf("%q against %q: %q; want %q", c.sent, c.want, got, c.problem)
		}
	}
}
