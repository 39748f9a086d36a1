package commands

import "testing"

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
