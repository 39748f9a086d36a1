package commands

import (
	"runtime"
	"testing"
)

func TestSafeText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain label", "plain label"},
		{"title\x1b]0;pwned\x07!", "title]0;pwned!"},
		{"clear\x1b[2Jscreen", "clear[2Jscreen"},
		{"csi\u009b31mred", "csi31mred"},
		{"two\nlines\r\tand\x7fdel", "twolinesanddel"},
		{"rtl\u202eevil\u2066", "rtlevil"},
		{"café ✓", "café ✓"},
	} {
		if got := safeText(tc.in); got != tc.want {
			t.Errorf("safeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := safeText(oneLine("cannot log in\nTo store credentials in a file instead, use --store file.\n")); got != "cannot log in; To store credentials in a file instead, use --store file." {
		t.Errorf("a warning of two lines is %q", got)
	}
	if got := safeLines("a\x1b[2J\nb"); got != "a[2J\nb" {
		t.Errorf("safeLines kept %q", got)
	}
}

// TestBrowserChoice: without $BROWSER and a terminal, only a command a
// desktop application starts (the proxy) opens the platform opener, and
// only where there is a desktop; $BROWSER wins everywhere.
func TestBrowserChoice(t *testing.T) {
	opened := ""
	f := &Factory{IO: &IOStreams{}, OpenURL: func(u string) error { opened = u; return nil }}
	open := func(appChild bool) bool {
		f.AppChild, opened = appChild, ""
		if b := f.Browser(); b != nil {
			b("http://127.0.0.1/authorize")
		}
		return opened != ""
	}
	onDesktop := runtime.GOOS == "darwin" || runtime.GOOS == "windows"
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	if open(false) {
		t.Error("a command without a terminal opened the platform opener")
	}
	if open(true) != onDesktop {
		t.Errorf("the proxy without a display: opened = %v, want %v", !onDesktop, onDesktop)
	}
	t.Setenv("WAYLAND_DISPLAY", "wayland-0")
	if !open(true) {
		t.Error("the proxy on a Wayland desktop did not open the platform opener")
	}
	if open(false) {
		t.Error("a command without a terminal opened the platform opener on a desktop")
	}
	f.IO.StderrTTY = true
	if !open(false) {
		t.Error("a command on a terminal did not open the platform opener")
	}
	f.BrowserEnv = "true"
	if open(true) {
		t.Error("$BROWSER set, yet the platform opener was used")
	}
}
