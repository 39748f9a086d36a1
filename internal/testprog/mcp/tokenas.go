package mcp

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/wire"
)

// The wire_*, flows_* and store_* scripts' helpers.
func init() {
	programs["token-as"] = tokenASMain
}

// tokenASMain is an MCP server (POST /mcp answers 401 with a Bearer
// challenge, RFC 9728 metadata) and its authorization server (RFC 8414
// metadata, open dynamic registration, an /authorize that approves at once)
// on one listener, whose token endpoint answers, for every grant, with the
// content of REPLYFILE read at each request: a script makes it answer what
// no honest server would (expires_in 1e12, token_type mac) by copying a
// file over it, except to a code it did not issue (invalid_grant). Each
// token request appends "token grant_type=GRANT" to LOGFILE (with
// " answer=invalid_grant" for such a code). It listens on 127.0.0.1:0, writes its address to ADDRFILE, and
// exits 0 on kill -INT.
//
//	token-as -reply REPLYFILE -log LOGFILE ADDRFILE
func tokenASMain() {
	fs := flag.NewFlagSet("token-as", flag.ExitOnError)
	reply := fs.String("reply", "", "the token endpoint's answer, read at each request")
	logFile := fs.String("log", "", "where to log token requests")
	_ = fs.Parse(os.Args[1:])
	if *reply == "" || *logFile == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: token-as -reply REPLYFILE -log LOGFILE ADDRFILE")
		os.Exit(2)
	}
	ln := progutil.ListenLoopback("token-as")
	base := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(map[string]string{
			"resource_metadata": base + "/.well-known/oauth-protected-resource/mcp"}))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		oauthfake.WriteJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{base},
			ScopesSupported: []string{"agent:use"}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		oauthfake.WriteJSON(w, http.StatusOK, wire.AuthServerMetadata{
			Issuer: base, AuthorizationEndpoint: base + "/authorize", TokenEndpoint: base + "/token",
			RegistrationEndpoint:              base + "/register",
			GrantTypesSupported:               []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken},
			TokenEndpointAuthMethodsSupported: []string{"none"},
			CodeChallengeMethodsSupported:     []string{"S256"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		oauthfake.WriteJSON(w, http.StatusCreated, map[string]any{"client_id": "token-as-client", "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {"token-as-code"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		grant := r.PostFormValue("grant_type")
		unknownCode := grant == wire.GrantAuthorizationCode && r.PostFormValue("code") != "token-as-code"
		if f, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			if unknownCode {
				fmt.Fprintf(f, "token grant_type=%s answer=invalid_grant\n", grant)
			} else {
				fmt.Fprintf(f, "token grant_type=%s\n", grant)
			}
			f.Close()
		}
		if unknownCode {
			// A code it never issued (login's client check).
			oauthfake.WriteOAuthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		body, err := os.ReadFile(*reply)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	progutil.ServeUntilInterrupt("token-as", ln, fs.Arg(0), mux)
}
