// Command bearerproxy is the conformance run's reverse proxy in front of
// `agentauth serve`: the suite's server scenarios cannot send a token, so
// it adds "Authorization: Bearer TOKEN" to every request that has no
// Authorization header and passes everything else through unchanged, Host
// and Origin included, so that serve's own guard judges them (serve runs
// with --public-origin naming this proxy, as behind any reverse proxy).
//
//	bearerproxy -addr-file FILE -target-file SERVE_ADDR_FILE -token-file TOKEN_FILE
//
// The target (serve's HOST:PORT) and the token are read from their files
// at each request, so the proxy can start before serve and before the
// login that mints the token. It listens on 127.0.0.1 only.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	addrFile := flag.String("addr-file", "", "once listening, write HOST:PORT and a newline to `FILE`")
	targetFile := flag.String("target-file", "", "read serve's HOST:PORT from `FILE`")
	tokenFile := flag.String("token-file", "", "read the bearer token from `FILE`")
	flag.Parse()
	if *addrFile == "" || *targetFile == "" || *tokenFile == "" {
		fmt.Fprintln(os.Stderr, "usage: bearerproxy -addr-file FILE -target-file FILE -token-file FILE")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bearerproxy:", err)
		os.Exit(1)
	}
	proxy := newProxy(*targetFile, *tokenFile)
	if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "bearerproxy:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintln(os.Stderr, "bearerproxy:", srv.Serve(ln))
	os.Exit(1)
}

// newProxy forwards to the HOST:PORT in targetFile, adding the token in
// tokenFile.
//
// Each request is served full duplex: net/http's HTTP/1 server otherwise
// drains and closes a request body once the handler starts its answer, and
// the Transport, still sending that body upstream (it reads it once more
// after Content-Length bytes to check that it ends), then fails with
// "invalid Read on closed Body" and drops the upstream connection in the
// middle of an answer serve has already sent (golang/go#40747): the client
// lost its answer and the suite timed out after 30 s.
func newProxy(targetFile, tokenFile string) http.Handler {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			target, _ := os.ReadFile(targetFile)
			r.SetURL(&url.URL{Scheme: "http", Host: strings.TrimSpace(string(target))})
			r.Out.Host = r.In.Host
			if r.Out.Header.Get("Authorization") == "" {
				token, _ := os.ReadFile(tokenFile)
				r.Out.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			}
		},
		FlushInterval: -1, // pass event streams through as they come
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
}
