package commands

import (
	"strings"
	"testing"
	"time"
)

func TestColorWanted(t *testing.T) {
	tests := []struct {
		name                          string
		noColor, clicolor, clicolorFo string
		tty                           bool
		want                          bool
	}{
		{name: "terminal", tty: true, want: true},
		{name: "pipe", tty: false, want: false},
		{name: "NO_COLOR on a terminal", noColor: "1", tty: true, want: false},
		{name: "empty NO_COLOR is not set", noColor: "", tty: true, want: true},
		{name: "CLICOLOR=0 on a terminal", clicolor: "0", tty: true, want: false},
		{name: "CLICOLOR=1 in a pipe", clicolor: "1", tty: false, want: false},
		{name: "CLICOLOR_FORCE in a pipe", clicolorFo: "1", tty: false, want: true},
		{name: "CLICOLOR_FORCE=0 in a pipe", clicolorFo: "0", tty: false, want: false},
		{name: "CLICOLOR_FORCE beats CLICOLOR=0", clicolor: "0", clicolorFo: "1", tty: false, want: true},
		{name: "NO_COLOR beats CLICOLOR_FORCE", noColor: "1", clicolorFo: "1", tty: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tt.noColor)
			t.Setenv("CLICOLOR", tt.clicolor)
			t.Setenv("CLICOLOR_FORCE", tt.clicolorFo)
			if got := colorWanted(tt.tty); got != tt.want {
				t.Errorf("colorWanted(%v) = %v, want %v", tt.tty, got, tt.want)
			}
		})
	}
}

// Colour is decided per stream: a report on stdout piped to a file stays
// plain while the terminal's stderr is coloured, and the other way round.
func TestColorPerStream(t *testing.T) {
	for _, tt := range []struct{ out, err bool }{{false, true}, {true, false}} {
		fx := newAuthFixture(t, "")
		fx.seed("at-1", -time.Minute, nil) // "!" in the report: refreshable
		fx.next = []string{"at-2"}
		r := fx.factory("")
		r.f.IO.ColorOut, r.f.IO.ColorErr = tt.out, tt.err
		if code := Run(r.f, fx.args([]string{"status"})); code != 0 {
			t.Fatalf("status: exit %d", code)
		}
		if got := strings.Contains(r.out.String(), "\x1b["); got != tt.out {
			t.Errorf("ColorOut %v: stdout coloured %v:\n%q", tt.out, got, r.out.String())
		}
		r = fx.factory("")
		r.f.IO.ColorOut, r.f.IO.ColorErr = tt.out, tt.err
		if code := Run(r.f, fx.args([]string{"authenticate", "--json", "{TARGET}"})); code != 0 {
			t.Fatalf("authenticate: exit %d; stderr:\n%s", code, r.err.String())
		}
		if got := strings.Contains(r.err.String(), "\x1b["); got != tt.err {
			t.Errorf("ColorErr %v: stderr coloured %v:\n%q", tt.err, got, r.err.String())
		}
		if strings.Contains(r.out.String(), "\x1b[") {
			t.Errorf("--json output coloured:\n%q", r.out.String())
		}
	}
}
