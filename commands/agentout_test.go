package commands

import (
	"strings"
	"testing"
)

// TestAgentOutput: what an agent prints reaches the terminal line by line,
// without escape sequences or control characters, blank lines dropped —
// as gemini-cli prints its sign-in URL inside an alternate-screen switch.
func TestAgentOutput(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\x1b[?1049h\x1b[2J\x1b[HPlease visit the following URL:\n", "Please visit the following URL:\n"},
		{"https://accounts.google.com/o/oauth2/v2/auth?x=1\r\n\n", "https://accounts.google.com/o/oauth2/v2/auth?x=1\n"},
		{"\x1b]0;title\x07plain \x07bell\n", "plain bell\n"},
		{"no newline yet", ""},
		{"a\nb\n", "a\nb\n"},
	} {
		var b strings.Builder
		w := agentOutput(&b)
		for _, part := range strings.SplitAfter(tc.in, "x") { // arbitrary write boundaries
			w.Write([]byte(part))
		}
		if b.String() != tc.want {
			t.Errorf("agentOutput(%q) = %q, want %q", tc.in, b.String(), tc.want)
		}
	}
	var p strings.Builder
	w := agentOutput(&p)
	w.Write([]byte("Enter the authorization code: "))
	w.Flush()
	if p.String() != "Enter the authorization code: \n" {
		t.Errorf("Flush printed %q", p.String())
	}
	var b strings.Builder
	agentOutput(&b).Write([]byte(strings.Repeat("y", maxAgentLine+10)))
	if got := len(strings.TrimSpace(b.String())); got != maxAgentLine+10 {
		t.Errorf("a line past the bound is printed when it passes it: got %d bytes", got)
	}
}
