package mcp

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/wire"
)

// Helpers of the mcpclient_* scripts (issue 11's interop defects).
func init() {
	programs["interop-as"] = interopASMain
	cmds["freeport"] = freePort
}

// freePort sets VAR to a loopback TCP port that was free a moment ago,
// for --callback-port.
//
//	freeport VAR
func freePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	// The system may hand a closed port out again: never give one script
	// the same port twice (its scripts need distinct ones).
	used := strings.Fields(ts.Getenv("FREEPORTS_GIVEN"))
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ts.Check(ln.Close())
		if !slices.Contains(used, port) {
			ts.Setenv("FREEPORTS_GIVEN", strings.Join(append(used, port), " "))
			ts.Setenv(args[0], port)
			return
		}
	}
	ts.Fatalf("freeport: the system keeps handing out ports this script has")
}

// interopASMain is an MCP server (POST /mcp: 401 with a Bearer challenge
// without a token it issued, else MCP 2026-07-28 answers) and its
// authorization server on one listener, with the quirks of real servers
// that issue 11 met, each behind a flag:
//
//   - -lifetime N: access tokens live N seconds (expires_in), with a
//     refresh token;
//   - -no-access-revocation: /revoke revokes refresh tokens but answers
//     unsupported_token_type for access tokens (oidc-provider with JWT
//     access tokens);
//   - -problem: the token endpoint refuses the code grant with an RFC 9457
//     application/problem+json body, not RFC 6749 JSON;
//   - -issuer-suffix S: the metadata names the issuer http://H:P + S
//     ("/": a trailing slash, the same issuer; "/other": another one);
//   - -exact-redirect: /authorize accepts only a redirect_uri registered
//     exactly (the TypeScript SDK's demo server); a refused one is sent
//     back as error=invalid_request, "Unregistered redirect_uri", so that
//     the client sees it at once.
//
// Each token, revocation and registration request appends a line to
// LOGFILE ("token grant_type=…", "revoke hint=… answer=…", "register
// redirect_uris=…"). It listens on 127.0.0.1:0, writes its address to
// ADDRFILE, and exits 0 on kill -INT.
//
//	interop-as [flags] -log LOGFILE ADDRFILE
func interopASMain() {
	fs := flag.NewFlagSet("interop-as", flag.ExitOnError)
	logFile := fs.String("log", "", "where to log requests")
	lifetime := fs.Int("lifetime", 3600, "access token lifetime in seconds")
	noAccessRevocation := fs.Bool("no-access-revocation", false, "answer unsupported_token_type to access token revocation")
	problem := fs.Bool("problem", false, "refuse the code grant with application/problem+json")
	exactRedirect := fs.Bool("exact-redirect", false, "accept only exactly registered redirect URIs")
	issuerSuffix := fs.String("issuer-suffix", "", "name the issuer http://H:P`SUFFIX` in the metadata (the resource's metadata says http://H:P)")
	_ = fs.Parse(os.Args[1:])
	if *logFile == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: interop-as [flags] -log LOGFILE ADDRFILE")
		os.Exit(2)
	}
	ln := progutil.ListenLoopback("interop-as")
	base := "http://" + ln.Addr().String()
	var (
		mu        sync.Mutex
		n         int
		access    = map[string]bool{} // access tokens issued and not revoked
		redirects = map[string][]string{}
	)
	logf := func(format string, args ...any) {
		if f, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, format+"\n", args...)
			f.Close()
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		ok := access[tok]
		mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", wire.FormatBearerChallenge(map[string]string{
				"resource_metadata": base + "/.well-known/oauth-protected-resource/mcp"}))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		result := map[string]any{"tools": []any{}, "resultType": "complete"}
		if m.Method == "server/discover" {
			result = map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}}
		}
		oauthfake.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		oauthfake.WriteJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{base}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		issuer := base + *issuerSuffix
		oauthfake.WriteJSON(w, http.StatusOK, wire.AuthServerMetadata{
			Issuer: issuer, AuthorizationEndpoint: base + "/authorize", TokenEndpoint: base + "/token",
			RegistrationEndpoint: base + "/register", RevocationEndpoint: base + "/revoke",
			GrantTypesSupported:               []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken},
			TokenEndpointAuthMethodsSupported: []string{"none"},
			CodeChallengeMethodsSupported:     []string{"S256"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		n++
		id := fmt.Sprintf("client-%d", n)
		redirects[id] = req.RedirectURIs
		mu.Unlock()
		logf("register redirect_uris=%s", strings.Join(req.RedirectURIs, ","))
		oauthfake.WriteJSON(w, http.StatusCreated, map[string]any{"client_id": id, "token_endpoint_auth_method": "none", "redirect_uris": req.RedirectURIs})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		registered := slices.Contains(redirects[q.Get("client_id")], q.Get("redirect_uri"))
		mu.Unlock()
		answer := url.Values{"code": {"interop-code"}, "state": {q.Get("state")}}
		if *exactRedirect && !registered {
			answer = url.Values{"error": {"invalid_request"}, "error_description": {"Unregistered redirect_uri"}, "state": {q.Get("state")}}
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+answer.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		grant := r.PostFormValue("grant_type")
		if grant == wire.GrantAuthorizationCode && r.PostFormValue("code") != "interop-code" {
			// A code it never issued: login's client check.
			logf("token grant_type=%s answer=invalid_grant", grant)
			oauthfake.WriteOAuthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		logf("token grant_type=%s", grant)
		if *problem && grant == wire.GrantAuthorizationCode {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Invalid Grant","status":400,"detail":"the code was issued to another client\u001b[31m"}`))
			return
		}
		mu.Lock()
		n++
		at, rt := fmt.Sprintf("at-%d", n), fmt.Sprintf("rt-%d", n)
		access[at] = true
		mu.Unlock()
		oauthfake.WriteJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": *lifetime, "refresh_token": rt})
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		tok, hint := r.PostFormValue("token"), r.PostFormValue("token_type_hint")
		mu.Lock()
		isAccess := access[tok]
		mu.Unlock()
		if isAccess && *noAccessRevocation {
			logf("revoke hint=%s answer=unsupported_token_type", hint)
			oauthfake.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_token_type"})
			return
		}
		mu.Lock()
		delete(access, tok)
		mu.Unlock()
		logf("revoke hint=%s answer=200", hint)
		w.WriteHeader(http.StatusOK)
	})
	progutil.ServeUntilInterrupt("interop-as", ln, fs.Arg(0), mux)
}
