package newcomer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
)

// bareMCP is an MCP server without OAuth metadata, as many in the wild:
// POST /mcp is 401 with a bare Bearer challenge (no resource_metadata),
// /register (the MCP 2025-03-26 default a client guesses) is a 501 HTML
// page, every other path (the well-known documents) 404. It listens on 127.0.0.1:0, writes its address to ADDRFILE
// and exits 0 on SIGINT. Usage: bare-mcp ADDRFILE
func bareMCP() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bare-mcp ADDRFILE")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare-mcp:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprint(w, "<!DOCTYPE html>\n<html><head><title>501 Not Implemented</title></head><body><h1>Not Implemented</h1><p>The server does not support this.</p></body></html>\n")
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	if err := os.WriteFile(os.Args[1], []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "bare-mcp:", err)
		os.Exit(1)
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
	srv.Shutdown(context.Background())
}
