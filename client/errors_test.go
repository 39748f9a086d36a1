package client

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCommandLineThroughSh: a printed command line, run by sh as a pasted
// one would be, gives the program exactly the arguments agentauth meant,
// whatever they hold (spaces, flag-like words, quotes, $, globs, newlines).
func TestCommandLineThroughSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	args := []string{"stdio:qwen --acp", "--method", "", "it's", `a"b`, "$HOME", "`id`", "*", "~", "a\nb", "x;y|z&", "né", "ws://h/?a=1&b=2", "plain-word_1.2:3@4%5+6=7,8/9"}
	line := CommandLine(append([]string{"printf", `%s\0`}, args...)...)
	out, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "\x01") != strings.Join(args, "\x01") {
		t.Errorf("sh -c %q gave %q, want %q", line, got, args)
	}
	if q := ShellQuote("stdio:qwen --acp"); q != "'stdio:qwen --acp'" {
		t.Errorf("ShellQuote = %s", q)
	}
	if q := ShellQuote("http://127.0.0.1:7777/mcp"); q != "http://127.0.0.1:7777/mcp" {
		t.Errorf("a plain URL is quoted: %s", q)
	}
}
