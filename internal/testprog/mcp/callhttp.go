package mcp

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/wire"
)

// The call_http_* scripts' helpers.
func init() {
	programs["mcp-always-401"] = mcpAlways401Main
}

// mcpAlways401Main is an MCP server that refuses every token: each POST
// /mcp is a 401 invalid_token whose resource_metadata names a protected
// resource metadata document pointing at a real authorization server, so
// that a client can log in, and is refused again. It listens on
// 127.0.0.1:0, writes its address to ADDRFILE, prints one line on stderr
// per request that carried a token, and exits 0 on kill -INT.
//
//	mcp-always-401 -issuer URL ADDRFILE
func mcpAlways401Main() {
	fs := flag.NewFlagSet("mcp-always-401", flag.ExitOnError)
	issuer := fs.String("issuer", "", "the authorization server to name")
	_ = fs.Parse(os.Args[1:])
	if *issuer == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mcp-always-401 -issuer URL ADDRFILE")
		os.Exit(2)
	}
	ln := progutil.ListenLoopback("mcp-always-401")
	base := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.ProtectedResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{*issuer},
			ScopesSupported: []string{"agent:use"}})
	})
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			fmt.Fprintln(os.Stderr, "mcp-always-401: refused a token")
		}
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(map[string]string{
			"error": wire.ErrInvalidToken, "error_description": "this server accepts no token",
			"resource_metadata": base + "/.well-known/oauth-protected-resource/mcp"}))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	progutil.ServeUntilInterrupt("mcp-always-401", ln, fs.Arg(0), mux)
}
