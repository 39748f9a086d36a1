package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/store"
)

func init() {
	programs["ptyrun"] = ptyRunMain
	programs["cred-set"] = credSetMain
}

// credSetMain changes every credential of the file store in
// $AGENTAUTH_CONFIG_DIR, as time or a server would:
//
//	cred-set [-expire-in DURATION] [-refresh-token TOKEN]
//
// -expire-in sets each access token's expiry that far ahead (negative: in
// the past), as the passing of time would: the token keeps its lifetime
// (Obtained moves with Expiry); -refresh-token replaces each refresh token
// (one the server never issued gets invalid_grant).
func credSetMain() {
	fs := flag.NewFlagSet("cred-set", flag.ExitOnError)
	in := fs.Duration("expire-in", 0, "set each access token's expiry this far ahead")
	refresh := fs.String("refresh-token", "", "replace each refresh token")
	fs.Parse(os.Args[1:])
	dir, err := store.ConfigDir()
	progutil.Check("ptyrun", err)
	st, err := store.Open(store.KindFile, dir)
	progutil.Check("ptyrun", err)
	ctx := context.Background()
	creds, err := st.List(ctx)
	progutil.Check("ptyrun", err)
	if len(creds) == 0 {
		progutil.Check("ptyrun", fmt.Errorf("no credentials in %s", st.Location()))
	}
	for _, c := range creds {
		if *in != 0 {
			lifetime := c.Expiry.Sub(c.Obtained)
			c.Expiry = time.Now().Add(*in)
			if !c.Obtained.IsZero() {
				c.Obtained = c.Expiry.Add(-lifetime)
			}
		}
		if *refresh != "" {
			c.RefreshToken = *refresh
		}
		progutil.Check("ptyrun", st.Put(ctx, c))
	}
}

// ptyRunMain runs a command on a pseudo-terminal (its stdin, stdout and
// stderr, as in a real terminal), or with -nopty on plain pipes, and
// reacts to what it prints, the way a person would:
//
//	ptyrun [-nopty] [-ctrlc MARKER] [-answer MARKER=TEXT] COMMAND [ARG...]
//
// -ctrlc presses Ctrl-C (SIGINT without a terminal) once the output holds
// MARKER; -answer types TEXT and Enter once it holds MARKER. It prints the
// output on stdout, each carriage return made a newline and erase-line
// sequences removed, then "exit status N" (N is -1 for a signal), and
// exits 0. It gives up after 60 s.
func ptyRunMain() {
	fs := flag.NewFlagSet("ptyrun", flag.ExitOnError)
	noPTY := fs.Bool("nopty", false, "use pipes instead of a terminal")
	ctrlc := fs.String("ctrlc", "", "press Ctrl-C once the output holds this")
	answer := fs.String("answer", "", "MARKER=TEXT: type TEXT once the output holds MARKER")
	fs.Parse(os.Args[1:])
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: ptyrun [-nopty] [-ctrlc MARKER] [-answer MARKER=TEXT] COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	var out io.Reader
	var in io.Writer
	if *noPTY {
		r, w, err := os.Pipe()
		progutil.Check("ptyrun", err)
		cmd.Stdout, cmd.Stderr = w, w
		stdin, err := cmd.StdinPipe()
		progutil.Check("ptyrun", err)
		progutil.Check("ptyrun", cmd.Start())
		w.Close()
		out, in = r, stdin
	} else {
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
		progutil.Check("ptyrun", err)
		out, in = tty, tty
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	answerMarker, answerText, _ := strings.Cut(*answer, "=")
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := make([]byte, 4096)
		for {
			n, err := out.Read(p)
			mu.Lock()
			buf.Write(p[:n])
			seen := buf.String()
			mu.Unlock()
			if *ctrlc != "" && strings.Contains(seen, *ctrlc) {
				*ctrlc = ""
				if *noPTY {
					cmd.Process.Signal(syscall.SIGINT)
				} else {
					in.Write([]byte{3})
				}
			}
			if answerMarker != "" && strings.Contains(seen, answerMarker) {
				answerMarker = ""
				in.Write([]byte(answerText + "\r"))
			}
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		err = <-waited
		fmt.Println("ptyrun: timed out")
	}
	select { // the terminal's last bytes
	case <-done:
	case <-time.After(2 * time.Second):
	}
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		progutil.Check("ptyrun", err)
	}
	mu.Lock()
	text := strings.NewReplacer("\r\n", "\n", "\r", "\n", "\x1b[K", "").Replace(buf.String())
	mu.Unlock()
	fmt.Print(text)
	fmt.Printf("\nexit status %d\n", code)
}
