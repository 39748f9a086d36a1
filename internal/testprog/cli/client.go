package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/zalando/go-keyring"

	"github.com/agentauth/agentauth/commands"
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
	cmds["registerclient"] = registerClient
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
