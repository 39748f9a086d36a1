package commands

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// IOStreams are the process's streams plus what we know about them. Colour
// is decided per stream (fatih/color only looks at stdout).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	StdinTTY, StdoutTTY, StderrTTY bool
	// ColorOut / ColorErr say whether to colour each stream.
	ColorOut, ColorErr bool
}

// SystemIO returns the real streams, with colour decided per stream by
// colorWanted.
func SystemIO() *IOStreams {
	tty := func(f *os.File) bool { return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()) }
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		StdinTTY: tty(os.Stdin), StdoutTTY: tty(os.Stdout), StderrTTY: tty(os.Stderr)}
	s.ColorOut = colorWanted(s.StdoutTTY)
	s.ColorErr = colorWanted(s.StderrTTY)
	return s
}

// colorWanted decides colour for one stream, in order: never when NO_COLOR
// is set and not empty (no-color.org); always when CLICOLOR_FORCE is set and
// not 0; never when CLICOLOR is 0 (bixense.com/clicolors); else only on a
// terminal.
func colorWanted(isTTY bool) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	if v := os.Getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		return true
	}
	if os.Getenv("CLICOLOR") == "0" {
		return false
	}
	return isTTY
}

// maxStdinSecret bounds what --token-stdin and --client-secret-stdin read.
const maxStdinSecret = 64 << 10

// readStdinSecret reads the secret (what: "token", "client secret") that
// flag passes on stdin: at most maxStdinSecret bytes, surrounding
// whitespace removed. An empty one is a usage error.
func readStdinSecret(in io.Reader, flag, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(in, maxStdinSecret))
	if err != nil {
		return "", fmt.Errorf("cannot read the %s from stdin: %w", what, err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", usageErrorf("%s: stdin holds no %s", flag, what)
	}
	return secret, nil
}

// Painter colours text for one stream, or leaves it plain.
type Painter struct{ enabled bool }

func (p Painter) paint(attr color.Attribute, s string) string {
	if !p.enabled {
		return s
	}
	c := color.New(attr)
	c.EnableColor()
	return c.Sprint(s)
}

// Green, Yellow, Red and Bold colour s when the stream wants colour.
func (p Painter) Green(s string) string  { return p.paint(color.FgGreen, s) }
func (p Painter) Yellow(s string) string { return p.paint(color.FgYellow, s) }
func (p Painter) Red(s string) string    { return p.paint(color.FgRed, s) }
func (p Painter) Bold(s string) string   { return p.paint(color.Bold, s) }

// ErrPainter colours text written to stderr.
func (s *IOStreams) ErrPainter() Painter { return Painter{enabled: s.ColorErr} }

// OutPainter colours text written to stdout.
func (s *IOStreams) OutPainter() Painter { return Painter{enabled: s.ColorOut} }
