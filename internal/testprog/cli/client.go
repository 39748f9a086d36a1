package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/zalando/go-keyring"

	"github.com/agentauth/agentauth/commands"
	"github.com/agentauth/agentauth/store"
)

// Programs and commands for the client scripts (discover_*, login_*, token_*).
func init() {
	// agentauth-nokeyring is agentauth with an OS keyring that fails every
	// call, as on a headless Linux without a secret service.
	programs["agentauth-nokeyring"] = func() {
		keyring.MockInitWithError(errors.New("no secret service on this machine"))
		os.Exit(commands.Main())
	}
	// browser-consent DECISION URL is a $BROWSER that answers the embedded
	// issuer's consent page with Approve or Deny and follows the redirect
	// to the loopback callback; with $BROWSER_PAGE set, it writes the text
	// of the page it ends on there.
	programs["browser-consent"] = browserConsent

	cmds["portenv"] = portEnv
	cmds["jwtpayload"] = jwtPayload
	cmds["registerclient"] = registerClient
	cmds["nosecrets"] = noSecrets
}

var consentNonceRE = regexp.MustCompile(`name="nonce" value="([^"]+)"`)

func browserConsent() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "browser-consent: "+format+"\n", args...)
		os.Exit(1)
	}
	if len(os.Args) != 3 || (os.Args[1] != "approve" && os.Args[1] != "deny") {
		fail("usage: browser-consent approve|deny URL")
	}
	resp, err := http.Get(os.Args[2])
	if err != nil {
		fail("%v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := consentNonceRE.FindSubmatch(page)
	if m == nil {
		fail("no consent form at the authorization URL (status %s)", resp.Status)
	}
	consent := resp.Request.URL.ResolveReference(&url.URL{Path: "/consent"})
	resp, err = http.PostForm(consent.String(), url.Values{"nonce": {string(m[1])}, "decision": {os.Args[1]}, "subject": {"alice"}})
	if err != nil {
		fail("%v", err)
	}
	page, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	fmt.Fprintf(os.Stderr, "browser-consent: %s answered, the callback said %s\n", os.Args[1], resp.Status)
	// What a person reads there, the heading and the paragraph, goes to
	// $BROWSER_PAGE when set (whole, by a rename: a script waits for it).
	if name := os.Getenv("BROWSER_PAGE"); name != "" {
		var text strings.Builder
		for _, m := range pageTextRE.FindAllSubmatch(page, -1) {
			text.WriteString(html.UnescapeString(string(m[1])) + "\n")
		}
		if err := os.WriteFile(name+".tmp", []byte(text.String()), 0o600); err != nil {
			fail("%v", err)
		}
		if err := os.Rename(name+".tmp", name); err != nil {
			fail("%v", err)
		}
	}
}

var pageTextRE = regexp.MustCompile(`<(?:h1|p)>([^<]*)</(?:h1|p)>`)

// portEnv sets VAR to the port of the HOST:PORT in FILE (an address
// file), to name a server by another host name. Usage: portenv VAR FILE
func portEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: portenv VAR FILE")
	}
	_, port, err := net.SplitHostPort(strings.TrimSpace(ts.ReadFile(args[1])))
	ts.Check(err)
	ts.Setenv(args[0], port)
}

// jwtPayload writes the decoded payload (claims) of the JWT in IN to OUT,
// for grep. Usage: jwtpayload IN OUT
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

// fileStore opens the script's file store.
func fileStore(ts *testscript.TestScript) store.Store {
	st, err := store.Open(store.KindFile, ts.Getenv(store.EnvConfigDir))
	ts.Check(err)
	return st
}

// registerClient registers a confidential client (client_secret_basic) at
// the issuer by RFC 7591 and writes its id and secret to two files.
// Usage: registerclient ISSUER IDFILE SECRETFILE
func registerClient(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: registerclient ISSUER IDFILE SECRETFILE")
	}
	body, _ := json.Marshal(map[string]any{
		"client_name": "script confidential client", "redirect_uris": []string{"http://127.0.0.1/callback"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "client_secret_basic",
	})
	resp, err := http.Post(args[0]+"/register", "application/json", bytes.NewReader(body))
	ts.Check(err)
	defer resp.Body.Close()
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	ts.Check(json.NewDecoder(resp.Body).Decode(&reg))
	if resp.StatusCode != http.StatusCreated || reg.ClientSecret == "" {
		ts.Fatalf("registration answered %s without a secret", resp.Status)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(reg.ClientID+"\n"), 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(reg.ClientSecret+"\n"), 0o600))
}

// noSecrets fails when one of the FILEs holds a secret: a token or client
// secret now in the store, or the content of any *.tok file in $WORK
// (tokens printed by earlier `token` runs). Usage: nosecrets FILE...
func noSecrets(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: nosecrets FILE...")
	}
	var secrets []string
	creds, err := fileStore(ts).List(context.Background())
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
