package commands

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// This file holds the terminal things every command uses: the client
// core's UI on stderr, the spinner, the browser openers, safe text and
// the wording of durations (client.RoughDuration).

// termUI is client.UI on a command's stderr.
type termUI struct {
	io  *IOStreams
	now func() time.Time

	mu sync.Mutex
	// waiting is the spinner AuthURL started on a terminal while the
	// browser login runs; the next line written stops it.
	waiting *spinner
}

// stopWaiting stops the spinner AuthURL started, if any.
func (u *termUI) stopWaiting() {
	u.mu.Lock()
	s := u.waiting
	u.waiting = nil
	u.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// above writes a line while the spinner AuthURL started, if any, pauses.
func (u *termUI) above(line string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.waiting != nil {
		u.waiting.stop()
	}
	fmt.Fprintln(u.io.ErrOut, line)
	if u.waiting != nil {
		u.waiting.start(u.waiting.label, u.waiting.until)
	}
}

// Warn writes msg as one warning line: the lines of a message of several
// (an error and the hint under it) are joined with "; ", so that they stay
// apart and no peer's text can start a line that looks like agentauth's.
func (u *termUI) Warn(msg string) {
	u.above(u.io.ErrPainter().Yellow("warning:") + " " + safeText(oneLine(msg)))
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "; ")
}

func (u *termUI) Say(msg string) { u.above(safeText(msg)) }

func (u *termUI) AuthURL(url string, opened, noBrowser bool, timeout time.Duration) {
	u.stopWaiting()
	w, url := u.io.ErrOut, safeText(url)
	switch {
	case opened:
		fmt.Fprintf(w, "Opening %s in your browser.\n", url)
	case noBrowser:
		fmt.Fprintf(w, "Open this URL in a browser to log in:\n  %s\n", url)
	default:
		fmt.Fprintf(w, "No terminal and no $BROWSER, so no browser was opened. Open this URL to log in:\n  %s\n"+
			"(--no-browser says so and skips this note; --device logs in without a browser here.)\n", url)
	}
	if !u.io.StderrTTY {
		fmt.Fprintf(w, "Waiting for the authorization (%s)…\n", u.io.ErrPainter().Bold("times out in "+client.ExactDuration(timeout)))
		return
	}
	s := &spinner{io: u.io, now: u.now}
	s.start("Waiting for the authorization in the browser", u.now().Add(timeout))
	u.mu.Lock()
	u.waiting = s
	u.mu.Unlock()
}

func (u *termUI) DeviceCode(p flows.DeviceCodePrompt) {
	u.stopWaiting()
	w := u.io.ErrOut
	fmt.Fprintf(w, "To log in, open %s and enter the code %s\n", safeText(p.VerificationURI), u.io.ErrPainter().Bold(safeText(p.UserCode)))
	if p.VerificationURIComplete != "" {
		fmt.Fprintf(w, "or open %s\n", safeText(p.VerificationURIComplete))
	}
}

func (u *termUI) Wait(label string, until time.Time) func() {
	u.stopWaiting()
	s := &spinner{io: u.io, now: u.now}
	s.start(label, until)
	return s.stop
}

func (u *termUI) LoggedIn(c *store.Credential) {
	u.stopWaiting()
	fmt.Fprintf(u.io.ErrOut, "%s %s\n", u.io.ErrPainter().Green("✓"), safeText(loggedInLine(c, u.now())))
}

func (u *termUI) StoredInFile(err error, location string) {
	u.stopWaiting()
	w := u.io.ErrOut
	fmt.Fprintf(w, "WARNING: cannot store the credential in the OS keyring: %s\n", safeText(err.Error()))
	fmt.Fprintf(w, "WARNING: it was saved to the file store instead: %s\n", location)
	fmt.Fprintln(w, "WARNING: every command finds it there; to keep using the file store, run agentauth with --store file (or set AGENTAUTH_STORE=file).")
}

// loggedInLine is the success line: "Logged in to RESOURCE as SUB (SCOPES,
// expires in 59m)"; the subject is left out when unknown.
func loggedInLine(c *store.Credential, now time.Time) string {
	s := "Logged in to " + c.Resource
	if c.SchemeID != "" {
		s += " [" + c.SchemeID + "]"
	}
	if c.Subject != "" {
		s += " as " + c.Subject
	}
	scopes := wire.JoinScope(c.Scopes)
	if scopes == "" {
		scopes = "no scope"
	}
	if c.Expiry.IsZero() {
		return s + " (" + scopes + ", no expiry given)"
	}
	return s + " (" + scopes + ", expires in " + client.RoughDuration(c.Expiry.Sub(now)) + ")"
}

// spinner shows progress with the remaining time and "Ctrl-C to cancel" on
// a terminal's stderr; elsewhere it does nothing.
type spinner struct {
	io    *IOStreams
	now   func() time.Time
	label string
	until time.Time
	done  chan struct{}
	quit  chan struct{}
}

func (s *spinner) start(label string, until time.Time) {
	if !s.io.StderrTTY || s.done != nil {
		return
	}
	s.label, s.until = label, until
	s.done, s.quit = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			line := fmt.Sprintf("%c %s (", frames[i%len(frames)], label)
			if !until.IsZero() {
				line += client.RoughDuration(until.Sub(s.now())) + " left, "
			}
			line += "Ctrl-C to cancel)"
			fmt.Fprintf(s.io.ErrOut, "\r\033[K%s", line)
			select {
			case <-s.quit:
				fmt.Fprint(s.io.ErrOut, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
}

func (s *spinner) stop() {
	if s.done == nil {
		return
	}
	close(s.quit)
	<-s.done
	s.done = nil
}

// Browser returns how to open a login URL: $BROWSER when set, even without
// a terminal; else the platform opener when stdout or stderr is a terminal,
// or for a command a desktop application starts (AppChild) when there is a
// desktop (as mcp-remote opens the browser for an MCP client); else nil (the
// caller prints the URL and which flag avoids the wait).
func (f *Factory) Browser() func(url string) error {
	if f.BrowserEnv != "" {
		return func(url string) error { return runBrowser(f.BrowserEnv, url) }
	}
	if (f.IO.StdoutTTY || f.IO.StderrTTY || f.AppChild && desktop()) && f.OpenURL != nil {
		return f.OpenURL
	}
	return nil
}

// desktop reports whether a user's desktop is there for the platform
// opener: always on macOS and Windows (an application started us), else an
// X11 or Wayland display.
func desktop() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// openerGrace is how long an opener may take to fail: xdg-open, open and
// a $BROWSER that hands the URL to a running browser exit at once, with a
// status saying whether it worked; a browser started by $BROWSER keeps
// running, and is then taken to have opened the URL.
const openerGrace = time.Second

// runBrowser runs the $BROWSER command line (split like a shell, no
// expansion) with url as its last argument (startOpener).
func runBrowser(cmdline, url string) error {
	args, err := wire.SplitCommandLine(cmdline)
	if err != nil {
		return fmt.Errorf("cannot use $BROWSER: %w", err)
	}
	if len(args) == 0 {
		return fmt.Errorf("cannot use $BROWSER: it names no command")
	}
	return startOpener("$BROWSER ("+args[0]+")", exec.Command(args[0], append(args[1:], url)...))
}

// startOpener starts cmd, an opener named name, and waits at most
// openerGrace: an opener that exits with a failure in that time (xdg-open
// exits 3 when nothing on the machine opens URLs, BROWSER=false exits 1)
// is reported at once, with the alternatives, instead of leaving the user
// waiting for a browser that never came. Its stdout and stderr go to
// /dev/null: inheriting ours would keep a $(agentauth …) capture open for
// as long as the browser runs.
func startOpener(name string, cmd *exec.Cmd) error {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot open a browser: %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("cannot open a browser: %s failed (%w)", name, err)
		}
	case <-time.After(openerGrace):
	}
	return nil
}

// platformOpenURL opens url with the desktop's handler (startOpener).
func platformOpenURL(url string) error {
	switch runtime.GOOS {
	case "darwin":
		return startOpener("open", exec.Command("open", url))
	case "windows":
		return startOpener("rundll32", exec.Command("rundll32", "url.dll,FileProtocolHandler", url))
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("cannot open a browser: there is no display (neither $DISPLAY nor $WAYLAND_DISPLAY is set, as over SSH)")
	}
	return startOpener("xdg-open", exec.Command("xdg-open", url))
}

// safeText is what a string from a remote peer (a host's labels and
// challenges, metadata, token responses, error descriptions, claims)
// becomes before it reaches a terminal: C0 and C1 control characters, DEL
// and bidirectional-text controls are removed, so a peer can neither send
// escape sequences (set the window title, clear the screen, forge a
// hyperlink, move the cursor over a line agentauth wrote) nor start a new
// line of its own or reorder what is shown. It is the one function for
// that; JSON output needs none (encoding/json escapes control characters).
func safeText(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

// safeLines is safeText for a message of several lines that agentauth
// composed itself: each line is cleaned and the line breaks are kept.
func safeLines(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safeText(l)
	}
	return strings.Join(lines, "\n")
}

func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true // bidirectional-text controls (Unicode UAX #9)
	}
	return false
}
