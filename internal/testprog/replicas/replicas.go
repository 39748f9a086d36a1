package replicas

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/state/statetest"
)

func init() {
	programs["loginburst"] = loginBurst
	programs["lbproxy"] = lbProxy
	cmds["filemode"] = fileMode
	cmds["nosecretsin"] = noSecretsIn
	cmds["waitlines"] = waitLines
	cmds["pgstart"] = pgStart
	cmds["pgstop"] = pgStop
	cmds["pgrestart"] = pgRestart
	cmds["grantsvalid"] = grantsValid
	cmds["schemaversion"] = schemaVersion
	cmds["samekid"] = sameKid
	cmds["jwkskids"] = jwksKids
}

// fileMode checks a file's permission bits. Usage: filemode FILE MODE
func fileMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: filemode FILE MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode().Perm(); uint64(got) != want {
		ts.Fatalf("%s has mode %#o, want %#o", args[0], got, want)
	}
}

// noSecretsIn checks that no file under DIR holds one of the secrets in
// FILEs: a token file's content, or a registration's client_secret.
// Usage: nosecretsin DIR FILE...
func noSecretsIn(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: nosecretsin DIR FILE...")
	}
	var secrets []string
	for _, f := range args[1:] {
		content := strings.TrimSpace(ts.ReadFile(f))
		var reg struct {
			ClientSecret string `json:"client_secret"`
		}
		if json.Unmarshal([]byte(content), &reg) == nil {
			content = reg.ClientSecret
		}
		if content == "" {
			ts.Fatalf("%s holds no secret", f)
		}
		secrets = append(secrets, content)
	}
	n := 0
	err := filepath.WalkDir(ts.MkAbs(args[0]), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for k, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				ts.Fatalf("%s holds the secret of %s in the clear", path, args[1+k])
			}
		}
		return nil
	})
	ts.Check(err)
	if n == 0 {
		ts.Fatalf("no file under %s", args[0])
	}
}

// waitLines waits until FILE has at least N complete lines.
// Usage: waitlines FILE N
func waitLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitlines FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && bytes.Count(b, []byte("\n")) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("timed out waiting for %d lines in %s", n, args[0])
}

// The PostgreSQL commands, for every script that needs a real database
// (state, replicas, ops): pgstart starts a server, pgstop and pgrestart
// take it down and bring it back (a database outage).

// pgStart starts a PostgreSQL server for the script and sets VAR to its
// URL; it stops, and its data is removed, when the script ends. A script
// guards it with [!exec:initdb] skip; the state package's tests fail when
// PostgreSQL is missing and statetest.EnvRequirePostgres is 1.
// Usage: pgstart VAR
func pgStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgstart VAR")
	}
	srv, err := statetest.StartServer()
	ts.Check(err)
	pgServers.Store(srv.URL, srv)
	ts.Defer(func() { pgServers.Delete(srv.URL); srv.Stop() })
	ts.Setenv(args[0], srv.URL)
}

// pgServers are the servers pgstart started and the scripts still run, by
// URL.
var pgServers sync.Map // string → *statetest.Server

func pgServer(ts *testscript.TestScript, usage string, neg bool, args []string) *statetest.Server {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: %s VAR", usage)
	}
	srv, ok := pgServers.Load(ts.Getenv(args[0]))
	if !ok {
		ts.Fatalf("%s: $%s is not a server pgstart started", usage, args[0])
	}
	return srv.(*statetest.Server)
}

// pgStop stops the server pgstart started at once (immediate shutdown),
// keeping its data: a database outage. Usage: pgstop VAR
func pgStop(ts *testscript.TestScript, neg bool, args []string) {
	ts.Check(pgServer(ts, "pgstop", neg, args).Halt())
}

// pgRestart starts the server pgstop stopped again, on the same URL and
// data, and waits until it accepts connections. Usage: pgrestart VAR
func pgRestart(ts *testscript.TestScript, neg bool, args []string) {
	ts.Check(pgServer(ts, "pgrestart", neg, args).Start())
}

// burstPKCE is the one verifier every burst login uses (the challenge is
// its S256).
const burstVerifier = "burst-verifier-burst-verifier-burst-verifier-0123456789"

// loginBurst logs in again and again through the embedded issuer's
// authorization code grant (serve --auto-approve), from -workers
// goroutines, and appends each refresh token it receives, one a line, to
// -out, synced: a line is a grant the issuer committed. It stops at the
// first failure (the server killed) and exits 0 once it logged in at
// least once. Usage: loginburst -out FILE [-workers N] ISSUER
func loginBurst() {
	fs := flag.NewFlagSet("loginburst", flag.ExitOnError)
	out := fs.String("out", "", "append the refresh tokens to `FILE`")
	workers := fs.Int("workers", 4, "concurrent logins")
	fs.Parse(os.Args[1:])
	if *out == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: loginburst -out FILE [-workers N] ISSUER")
		os.Exit(2)
	}
	iss := fs.Arg(0)
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loginburst:", err)
		os.Exit(1)
	}
	sum := sha256.Sum256([]byte(burstVerifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var mu sync.Mutex
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *workers)
	for range *workers {
		wg.Go(func() {
			for {
				rt, err := burstLogin(hc, iss, challenge)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				_, err = f.WriteString(rt + "\n")
				if err == nil {
					err = f.Sync()
				}
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "loginburst: %d logins, then: %v\n", done.Load(), <-errs)
	if done.Load() == 0 {
		os.Exit(1)
	}
}

// burstLogin runs one auto-approved authorization code grant for
// agentauth-cli and returns the refresh token.
func burstLogin(hc *http.Client, iss, challenge string) (string, error) {
	b := make([]byte, 8)
	rand.Read(b)
	state := base64.RawURLEncoding.EncodeToString(b)
	q := url.Values{"client_id": {"agentauth-cli"}, "redirect_uri": {"http://127.0.0.1:1/callback"}, "response_type": {"code"},
		"state": {state}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	resp, err := hc.Get(iss + "/authorize?" + q.Encode())
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("authorize: %s, no code", resp.Status)
	}
	return burstToken(hc, iss, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {"http://127.0.0.1:1/callback"}, "code_verifier": {burstVerifier}, "client_id": {"agentauth-cli"}})
}

func burstToken(hc *http.Client, iss string, form url.Values) (string, error) {
	resp, err := hc.PostForm(iss+"/token", form)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var tok struct {
		RefreshToken string `json:"refresh_token"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tok); err != nil {
		return "", fmt.Errorf("token: %s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || tok.RefreshToken == "" {
		return "", fmt.Errorf("token: %s %s: %s", resp.Status, tok.Error, tok.Description)
	}
	return tok.RefreshToken, nil
}

// grantsValid refreshes every refresh token in FILE (written by
// loginburst) at ISSUER: each must be known and unused. It prints how
// many it checked. Usage: grantsvalid FILE ISSUER
func grantsValid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: grantsvalid FILE ISSUER")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	lines := strings.Fields(ts.ReadFile(args[0]))
	for k, rt := range lines {
		if _, err := burstToken(hc, args[1], url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"agentauth-cli"}}); err != nil {
			ts.Fatalf("grant %d of %d, committed before the crash, is lost: %v", k+1, len(lines), err)
		}
	}
	fmt.Fprintf(ts.Stdout(), "%d grants valid\n", len(lines))
}

// lbProxy is a load balancer in front of serve replicas, on 127.0.0.1:0:
// it forwards each HTTP request, and each WebSocket connection for its
// whole life, to the replica whose address (HOST:PORT) is in
// -backend-file when it arrives, keeping the Host header. It writes its
// address to -addr-file and runs until SIGINT.
// Usage: lbproxy -addr-file FILE -backend-file FILE
func lbProxy() {
	fs := flag.NewFlagSet("lbproxy", flag.ExitOnError)
	addrFile := fs.String("addr-file", "", "write the address to `FILE`")
	backendFile := fs.String("backend-file", "", "read the replica's address from `FILE`")
	fs.Parse(os.Args[1:])
	if *addrFile == "" || *backendFile == "" {
		fmt.Fprintln(os.Stderr, "usage: lbproxy -addr-file FILE -backend-file FILE")
		os.Exit(2)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		b, err := os.ReadFile(*backendFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lbproxy:", err)
		}
		r.SetURL(&url.URL{Scheme: "http", Host: strings.TrimSpace(string(b))})
		r.Out.Host = r.In.Host
	}}
	// Full duplex: net/http closes a request body once the handler starts
	// its answer, and the proxy's client, still sending that body, would
	// then drop the connection mid-answer (golang/go#40747).
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
	progutil.ServeUntilInterrupt("lbproxy", progutil.ListenLoopback("lbproxy"), *addrFile, h)
}

// schemaVersion sets the schema version recorded in the SQLite state
// database in DIR, as a newer agentauth would leave it.
// Usage: schemaversion DIR N
func schemaVersion(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: schemaversion DIR N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	db, err := sql.Open("sqlite", filepath.Join(ts.MkAbs(args[0]), state.SQLiteFile))
	ts.Check(err)
	defer db.Close()
	_, err = db.Exec(`UPDATE agentauth_schema SET version = ?`, n)
	ts.Check(err)
}

// sameKid checks that two JWTs (in files) name the same kid; negated, that
// they name different ones. Usage: samekid FILE FILE
func sameKid(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: samekid FILE FILE")
	}
	kid := func(file string) string {
		header, _, _ := strings.Cut(strings.TrimSpace(ts.ReadFile(file)), ".")
		b, err := base64.RawURLEncoding.DecodeString(header)
		ts.Check(err)
		var h struct {
			Kid string `json:"kid"`
		}
		ts.Check(json.Unmarshal(b, &h))
		if h.Kid == "" {
			ts.Fatalf("%s names no kid", file)
		}
		return h.Kid
	}
	a, b := kid(args[0]), kid(args[1])
	if (a == b) == neg {
		ts.Fatalf("%s names kid %s, %s names %s", args[0], a, args[1], b)
	}
}

// jwksKids checks that the JWKS at URL publishes N keys.
// Usage: jwkskids N URL
func jwksKids(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jwkskids N URL")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	resp, err := http.Get(args[1])
	ts.Check(err)
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	ts.Check(json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set))
	if len(set.Keys) != n {
		ts.Fatalf("the JWKS publishes %d keys, want %d", len(set.Keys), n)
	}
}
