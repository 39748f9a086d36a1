package commands

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
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

// The app a command line builds holds the command it names alone, the
// same command as the full app's; every command is found by its name
// (commandTable's names are the commands' own), and a command line that
// names none, or a completion, builds every command.
func TestNewAppBuildsTheCommandRun(t *testing.T) {
	f := newTestFactory(t, "").Factory
	all := NewApp(f)
	if len(all.Commands) != len(commandTable) {
		t.Fatalf("NewApp has %d commands, commandTable %d", len(all.Commands), len(commandTable))
	}
	for i, c := range commandTable {
		if got := all.Commands[i].Name; got != c.name {
			t.Errorf("commandTable[%d] is %q, its command %q", i, c.name, got)
		}
		app := newApp(f, []string{"agentauth", "--store", "file", c.name, "--help"})
		want := 1
		if c.name == "completion" || c.name == "__complete" {
			want = len(commandTable)
		}
		if len(app.Commands) != want || app.Command(c.name) == nil {
			t.Errorf("the app for %q has %d commands, want %d with it", c.name, len(app.Commands), want)
		}
		if got, full := flagsOf(app.Command(c.name)), flagsOf(all.Command(c.name)); got != full {
			t.Errorf("%q alone has flags %s, in the full app %s", c.name, got, full)
		}
	}
	for _, args := range [][]string{{"agentauth"}, {"agentauth", "--help"}, {"agentauth", "statu"}, {"agentauth", "--", "status"}} {
		if app := newApp(f, args); len(app.Commands) != len(commandTable) {
			t.Errorf("the app for %q has %d commands, want all %d", args, len(app.Commands), len(commandTable))
		}
	}
}

// flagsOf lists a command's flags' names.
func flagsOf(c *cli.Command) string {
	var names []string
	for _, fl := range c.Flags {
		names = append(names, fl.Names()...)
	}
	return strings.Join(names, " ")
}
