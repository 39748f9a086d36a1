// Package script lets another module's testscript suite
// (github.com/rogpeppe/go-internal/testscript) run agentauth end to end:
// the agentauth command line as a program, a stand-in browser, and the
// script commands agentauth's own suite uses.
//
// Wire it into a test file:
//
//	func TestMain(m *testing.M) {
//		testscript.Main(m, script.Programs())
//	}
//
//	func TestScripts(t *testing.T) {
//		testscript.Run(t, testscript.Params{
//			Dir:   "testdata/script",
//			Setup: script.Setup,
//			Cmds:  script.Cmds(),
//		})
//	}
//
// and a script then runs serve in the background, waits for its address,
// logs in without a browser, and uses the token:
//
//	exec agentauth serve --listen 127.0.0.1:0 --addr-file addr --auto-approve --ephemeral &srv&
//	waitfile addr
//	addrenv ADDR addr
//	env BROWSER=browser-fetch
//	exec agentauth login http://$ADDR/mcp
//	exec agentauth token http://$ADDR/mcp
//	cp stdout my.tok
//	exec agentauth call http://$ADDR/mcp tools/call '{"name":"whoami","arguments":{}}'
//	stdout alice
//	kill -INT srv
//	wait srv
//	nosecrets stderr
//
// serve --auto-approve approves every authorization at once, as its dev
// user (--dev-user, default alice); browser-fetch, as $BROWSER, opens the
// authorization URL by following its redirects to login's loopback
// callback, so the whole authorization code flow with PKCE (or, with
// login --device, the device flow) runs with no person and no browser.
// Put serve in front of your MCP server with --backend URL, or give it
// a --config file.
//
// # What it promises
//
// Programs, Cmds and Setup, and the names and usage of the programs and
// commands below, are the API, kept compatible; the agentauth program is
// the agentauth command line of this module's version, with its
// documented flags and exit codes (agentauth help).
//
// Programs:
//   - agentauth ARGS…: the agentauth command line.
//   - browser-fetch URL: a $BROWSER that GETs URL and follows redirects,
//     failing unless the last answer is a 2xx.
//
// Commands:
//   - waitfile FILE: waits until FILE exists and ends with a newline (an
//     address file), polling; fails after 30 seconds.
//   - addrenv VAR FILE: sets $VAR to FILE's content, trimmed.
//   - expandenv IN OUT: writes IN to OUT with $VAR and ${VAR} replaced
//     by the script's environment (a config naming $ADDR).
//   - jwtpayload IN OUT: writes the JSON payload of the JWT in IN to OUT
//     (not verified: to assert claims such as aud and sub).
//   - [!] nosecrets FILE…: fails if a FILE holds a secret of the file
//     credential store (an access or refresh token, a client secret) or
//     of a $WORK/*.tok file; with !, fails if none holds one.
package script

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/commands"
	"github.com/agentauth/agentauth/store"
)

// Programs are the programs a suite runs with exec, for testscript.Main.
func Programs() map[string]func() {
	return map[string]func(){
		"agentauth":     func() { os.Exit(commands.Main()) },
		"browser-fetch": browserFetch,
	}
}

// Cmds are the script commands, for testscript.Params.Cmds.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"waitfile":   waitFile,
		"addrenv":    addrEnv,
		"expandenv":  expandEnv,
		"jwtpayload": jwtPayload,
		"nosecrets":  noSecrets,
	}
}

// Setup gives each script a home of its own: HOME and agentauth's config
// directory ($AGENTAUTH_CONFIG_DIR) under $WORK, the file credential
// store (no OS keyring is touched), and NO_COLOR. It sets no $BROWSER:
// a script that logs in sets BROWSER=browser-fetch, so one that checks
// what happens without a browser can.
func Setup(env *testscript.Env) error {
	env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
	env.Setenv(store.EnvConfigDir, filepath.Join(env.WorkDir, "config"))
	env.Setenv("AGENTAUTH_STORE", store.KindFile)
	env.Setenv("NO_COLOR", "1")
	return nil
}

func browserFetch() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browser-fetch URL")
		os.Exit(2)
	}
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser-fetch:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintln(os.Stderr, "browser-fetch: final status", resp.Status)
		os.Exit(1)
	}
}

// waitFile waits until a file exists and ends with a newline (a
// server's address file), polling; it fails after 30 s.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("timed out waiting for %s", args[0])
}

// addrEnv sets an environment variable to a file's content without
// surrounding whitespace (a server's address file).
func addrEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: addrenv VAR FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}

// expandEnv writes a file with the script's environment variables
// expanded.
func expandEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expandenv IN OUT")
	}
	out := os.Expand(ts.ReadFile(args[0]), ts.Getenv)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o600))
}

// jwtPayload writes the payload of the JWT in a file to another.
func jwtPayload(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jwtpayload IN OUT")
	}
	parts := strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), ".")
	if len(parts) != 3 {
		ts.Fatalf("%s does not hold a JWT", args[0])
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), append(payload, '\n'), 0o600))
}

// noSecrets checks that files hold none of the stored secrets.
func noSecrets(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: nosecrets FILE...")
	}
	var secrets []string
	st, err := store.Open(store.KindFile, ts.Getenv(store.EnvConfigDir))
	ts.Check(err)
	creds, err := st.List(context.Background())
	ts.Check(err)
	for _, c := range creds {
		secrets = append(secrets, c.AccessToken, c.RefreshToken, c.Client.ClientSecret)
	}
	toks, _ := filepath.Glob(filepath.Join(ts.Getenv("WORK"), "*.tok"))
	for _, f := range toks {
		secrets = append(secrets, strings.TrimSpace(ts.ReadFile(f)))
	}
	var found []string
	for _, f := range args {
		text := ts.ReadFile(f)
		for _, s := range secrets {
			if len(s) >= 8 && strings.Contains(text, s) {
				found = append(found, fmt.Sprintf("%s holds a secret (%s…)", f, s[:4]))
			}
		}
	}
	switch {
	case neg && len(found) == 0:
		ts.Fatalf("no secret found in %s", strings.Join(args, " "))
	case !neg && len(found) > 0:
		ts.Fatalf("%s", strings.Join(found, "\n"))
	}
}
