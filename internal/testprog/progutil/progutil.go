// Package progutil is what the test programs of internal/testprog share: a
// loopback listener, a serve loop that publishes its address and ends on
// kill -INT, how a raw HTTP answer is printed, exiting on an error, and
// JSON-RPC messages written one per line (LineWriter).
// It is test support; it imports no agentauth package.
package progutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
)

// What the scripts' programs share: a loopback listener on a port the
// system picks, a serve loop that publishes the address for waitfile and
// addrenv and ends cleanly on kill -INT, and how a raw answer is printed.

// ListenLoopback is a listener on 127.0.0.1:0 for the script program prog;
// when there is none, prog exits 1 saying why.
func ListenLoopback(prog string) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
	return ln
}

// ServeUntilInterrupt writes ln's address (HOST:PORT and a newline) to
// addrFile and serves h on ln until kill -INT, then returns, so that prog
// exits 0 and the script's wait succeeds. It listens for the signal before
// it writes the file, so a script that kills it as soon as the file
// appears still sees it exit 0. Any other failure exits 1.
func ServeUntilInterrupt(prog string, ln net.Listener, addrFile string, h http.Handler) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	srv := &http.Server{Handler: h}
	go func() {
		<-sig
		_ = srv.Close()
	}()
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
}

// PrintAnswer prints, one line each to w, the status of resp, its
// WWW-Authenticate, Allow and Content-Type headers and its body (up to
// 1 MiB). It refuses an answer that echoes tok, the token sent, which is
// never printed.
func PrintAnswer(w io.Writer, resp *http.Response, tok string) error {
	got, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fmt.Fprintf(w, "status: %d\n", resp.StatusCode)
	for _, h := range []string{"WWW-Authenticate", "Allow", "Content-Type", "Retry-After"} {
		for _, v := range resp.Header.Values(h) {
			fmt.Fprintf(w, "%s: %s\n", h, v)
		}
	}
	if tok != "" && bytes.Contains(got, []byte(tok)) {
		return errors.New("the answer echoes the token")
	}
	fmt.Fprintf(w, "body: %s\n", bytes.TrimSpace(got))
	return nil
}

// Check ends prog with exit status 1, printing err, when err is not nil.
func Check(prog string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
}

// TitleRE finds the title (the first h1) of a page of the embedded issuer.
var TitleRE = regexp.MustCompile(`<h1>([^<]*)</h1>`)
