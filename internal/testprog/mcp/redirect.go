package mcp

import (
	"fmt"
	"net/http"
	"os"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// The sec_* scripts' helpers (issue 9: tokens go only where they belong).
func init() {
	programs["redirect-mcp"] = redirectMCPMain
}

// redirectMCPMain is an MCP endpoint that redirects every POST /mcp (307,
// method and body kept) to /mcp on another origin: a second listener on
// another port of 127.0.0.1, which prints on stderr whether each request
// it receives carries an Authorization header, and answers 401. It writes
// the first listener's address to ADDRFILE and exits 0 on kill -INT.
//
//	redirect-mcp ADDRFILE
func redirectMCPMain() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: redirect-mcp ADDRFILE")
		os.Exit(2)
	}
	front, other := progutil.ListenLoopback("redirect-mcp"), progutil.ListenLoopback("redirect-mcp")
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+other.Addr().String()+"/mcp", http.StatusTemporaryRedirect)
	})
	elsewhere := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			fmt.Fprintln(os.Stderr, "redirect-mcp: the other origin received a token")
		} else {
			fmt.Fprintln(os.Stderr, "redirect-mcp: the other origin received a request without a token")
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})}
	go func() { _ = elsewhere.Serve(other) }()
	progutil.ServeUntilInterrupt("redirect-mcp", front, os.Args[1], redirect)
}
