// Package e2e is mcpapp's testscript suite (testdata/script): agentauth's
// programs and commands (agentauthtest/script), mcpclient, and opbrowser,
// which signs in at oidc-provider's development pages.
package e2e

import (
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/agentauthtest/script"

	"example.com/mcpapp/app"
	"example.com/mcpapp/mcpclient"
)

func TestMain(m *testing.M) {
	programs := script.Programs()
	programs["mcpclient"] = func() { os.Exit(mcpclient.Main()) }
	programs["opbrowser"] = opBrowser
	programs["mcpapp"] = serveApp
	testscript.Main(m, programs)
}

// serveApp ADDRFILE serves the app on 127.0.0.1 and a free port, writes
// the address to ADDRFILE, and serves until killed.
func serveApp() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		err = os.WriteFile(os.Args[1], []byte(ln.Addr().String()+"\n"), 0o600)
	}
	if err == nil {
		err = http.Serve(ln, app.Handler())
	}
	fmt.Fprintln(os.Stderr, "mcpapp:", err)
	os.Exit(1)
}

// oidcDir is testdata/oidc of the agentauth checkout, where its run.sh
// (or this module's) installs oidc-provider.
var oidcDir, _ = filepath.Abs(filepath.Join("..", "..", "oidc"))

func TestScripts(t *testing.T) {
	_, err := os.Stat(filepath.Join(oidcDir, "node_modules", "oidc-provider", "package.json"))
	haveOIDC := err == nil
	if !haveOIDC && os.Getenv("MCPAPP_REQUIRE_OIDC") == "1" {
		t.Fatalf("oidc-provider is not installed in %s (MCPAPP_REQUIRE_OIDC=1); run testdata/gomodule/run.sh", oidcDir)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("OIDC", oidcDir)
			return script.Setup(env)
		},
		Cmds: script.Cmds(),
		Condition: func(cond string) (bool, error) {
			if cond == "oidc" {
				return haveOIDC, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// opBrowser URL is a $BROWSER for oidc-provider's development sign-in
// ($OPBROWSER_USER, any password) and consent pages: it follows
// redirects, submits each page's form, and fails unless it ends on a
// 2xx page without a form (the client's loopback callback).
func opBrowser() {
	if err := browse(os.Args[1], os.Getenv("OPBROWSER_USER")); err != nil {
		fmt.Fprintln(os.Stderr, "opbrowser:", err)
		os.Exit(1)
	}
}

var (
	formRE  = regexp.MustCompile(`(?is)<form\b[^>]*action="([^"]*)"[^>]*method="post"[^>]*>(.*?)</form>`)
	inputRE = regexp.MustCompile(`(?is)<input\b[^>]*name="([^"]*)"(?:[^>]*value="([^"]*)")?`)
)

func browse(u, user string) error {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.Get(u)
	for pages := 0; err == nil && pages < 5; pages++ {
		page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		m := formRE.FindSubmatch(page)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s answered %s", resp.Request.URL.Redacted(), resp.Status)
		}
		if m == nil {
			return nil
		}
		form := url.Values{}
		for _, in := range inputRE.FindAllSubmatch(m[2], -1) {
			form.Set(string(in[1]), html.UnescapeString(string(in[2])))
		}
		if form.Has("login") {
			form.Set("login", user)
			form.Set("password", "any password")
		}
		action, perr := resp.Request.URL.Parse(html.UnescapeString(string(m[1])))
		if perr != nil {
			return perr
		}
		resp, err = hc.PostForm(action.String(), form)
	}
	if err != nil {
		return err
	}
	return errors.New("too many pages")
}
