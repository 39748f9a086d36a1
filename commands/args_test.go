package commands

import (
	"strings"
	"testing"
)

func TestReorderArgs(t *testing.T) {
	app := NewApp(newTestFactory(t, "").Factory)
	for _, tt := range []struct {
		in, want, cmd string
	}{
		{"login ws://h --device", "login --device ws://h", "login"},
		{"login ws://h --scope a --scope=b --json", "login --scope a --scope=b --json ws://h", "login"},
		{"login --timeout 1s ws://h --store file", "--store file login --timeout 1s ws://h", "login"},
		{"--verbose token ws://h --scheme dev", "--verbose token --scheme dev ws://h", "token"},
		{"token ws://h --verbose", "--verbose token ws://h", "token"},
		{"token -- --scheme", "token -- --scheme", "token"},
		{"call ws://h tools/call {} --json -- -x", "call --json -- ws://h tools/call {} -x", "call"},
		{"call ws://h m --max-notifications 3 --watch", "call --max-notifications 3 --watch ws://h m", "call"},
		{"serve --listen 127.0.0.1:0 --auto-approve", "serve --listen 127.0.0.1:0 --auto-approve", "serve"},
		{"logout ws://h --scheme dev --json", "logout --scheme dev --json ws://h", "logout"},
		{"status ws://h --help", "status --help ws://h", "status"},
		{"login ws://h --bogus x", "login --bogus ws://h x", "login"},
		{"logni ws://h --device", "logni ws://h --device", ""},
		{"--store file", "--store file", ""},
	} {
		got, cmd := reorderArgs(app, append([]string{"agentauth"}, strings.Fields(tt.in)...))
		if g := strings.Join(got[1:], " "); g != tt.want || cmd != tt.cmd {
			t.Errorf("reorderArgs(%s) = %q, %q; want %q, %q", tt.in, g, cmd, tt.want, tt.cmd)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"login", "login", 0}, {"logni", "login", 2}, {"stat", "status", 2}, {"", "ab", 2}, {"kitten", "sitting", 3}} {
		if d := editDistance(tt.a, tt.b); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
	}
}
