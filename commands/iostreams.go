package commands

import (
	"io"
	"os"

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

// SystemIO returns the real streams, honouring NO_COLOR, CLICOLOR=0 and
// CLICOLOR_FORCE.
func SystemIO() *IOStreams {
	tty := func(f *os.File) bool { return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()) }
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		StdinTTY: tty(os.Stdin), StdoutTTY: tty(os.Stdout), StderrTTY: tty(os.Stderr)}
	s.ColorOut = colorWanted(s.StdoutTTY)
	s.ColorErr = colorWanted(s.StderrTTY)
	return s
}

func colorWanted(isTTY bool) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
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
