// Package signin holds the test programs and script commands of the
// oidc_*.txtar scripts: sign-in at a real OpenID Provider (oidc-provider
// from npm, testdata/oidc) and bound broker sign-in links.
//
//   - oidcbrowser: a browser with a cookie jar kept in a file, which
//     follows redirects and submits the pages' forms as a user would;
//   - the condition [oidc]: testdata/oidc's npm packages are installed
//     (with AGENTAUTH_REQUIRE_OIDC=1, an error when they are not), and
//     needoidc, which sets $OIDC to that folder.
//
// The scripts also use portenv VAR FILE (the port of an address file),
// which internal/testprog/cli registers.
package signin

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Programs are the test programs of this package, by name.
func Programs() map[string]func() {
	return map[string]func(){"oidcbrowser": browserMain}
}

// Cmds are the script commands of this package, by name.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){"needoidc": needOIDC}
}

// oidcDir is testdata/oidc, where run.sh installs oidc-provider.
func oidcDir() (string, bool) {
	dir, err := filepath.Abs(filepath.Join("testdata", "oidc"))
	if err != nil {
		return "", false
	}
	_, err = os.Stat(filepath.Join(dir, "node_modules", "oidc-provider", "package.json"))
	return dir, err == nil
}

// Condition answers the script condition [oidc]: oidc-provider is
// installed in testdata/oidc/node_modules (testdata/oidc/run.sh installs
// it with npm ci). With AGENTAUTH_REQUIRE_OIDC=1 its absence is an error
// rather than a skip.
func Condition(cond string) (bool, error) {
	if cond != "oidc" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, ok := oidcDir()
	if !ok && os.Getenv("AGENTAUTH_REQUIRE_OIDC") == "1" {
		return false, fmt.Errorf("oidc-provider is not installed: run npm ci in testdata/oidc (AGENTAUTH_REQUIRE_OIDC=1)")
	}
	return ok, nil
}

// needOIDC sets $OIDC to testdata/oidc, failing when oidc-provider is not
// installed there. Usage (after [!oidc] skip): needoidc
func needOIDC(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: needoidc")
	}
	dir, ok := oidcDir()
	if !ok {
		ts.Fatalf("oidc-provider is not installed: run npm ci in testdata/oidc")
	}
	ts.Setenv("OIDC", dir)
}

// signInLinkRE finds a broker sign-in link in an agent's answer.
var signInLinkRE = regexp.MustCompile(`http://[0-9.:]+/auth/start\?id=[A-Z0-9]+`)

// savedCookie is a cookie of the jar file.
type savedCookie struct{ URL, Name, Value, Path string }

// browserMain is oidcbrowser: a browser for one user. Usage:
//
//	oidcbrowser URL|FILE
//
// It opens URL (or the first broker sign-in link in FILE), follows
// redirects, and on a page with a form submits it as the user
// $OIDCBROWSER_USER would: its name in a login form (oidc-provider's
// "login", the development box's "subject"; any password), Approve on a
// consent page, the continue button elsewhere. Cookies live in the file
// $OIDCBROWSER_JAR across runs. It prints each request ("HOST PATH ->
// STATUS"), each form it submits ("form: TITLE" then "field: TERM = VALUE"
// for the page's terms), and the last page ("page: TITLE", "text: FIRST
// PARAGRAPH"), also appended to $OIDCBROWSER_LOG when set (as $BROWSER
// its output is not shown); it exits 1 when that page is not a 2xx answer.
func browserMain() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "oidcbrowser: "+format+"\n", args...)
		os.Exit(1)
	}
	if len(os.Args) != 2 {
		fail("usage: oidcbrowser URL|FILE")
	}
	next := os.Args[1]
	if b, err := os.ReadFile(next); err == nil {
		m := signInLinkRE.Find(b)
		if m == nil {
			fail("no sign-in link in %s", next)
		}
		next = string(m)
	}
	user, jarFile := os.Getenv("OIDCBROWSER_USER"), os.Getenv("OIDCBROWSER_JAR")
	out := io.Writer(os.Stdout)
	if f := os.Getenv("OIDCBROWSER_LOG"); f != "" {
		lf, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fail("%v", err)
		}
		defer lf.Close()
		out = io.MultiWriter(os.Stdout, lf)
	}
	jar, _ := cookiejar.New(nil)
	var saved []savedCookie
	if jarFile != "" {
		if b, err := os.ReadFile(jarFile); err == nil {
			json.Unmarshal(b, &saved)
			for _, c := range saved {
				u, _ := url.Parse(c.URL)
				jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: c.Path}})
			}
		}
	}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	method, form, origin := http.MethodGet, url.Values(nil), ""
	status := 0
	for hop := 0; hop < 30; hop++ {
		u, err := url.Parse(next)
		if err != nil {
			fail("%v", err)
		}
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, next, body)
		if err != nil {
			fail("%v", err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", origin)
		}
		resp, err := hc.Do(req)
		if err != nil {
			fail("%v", err)
		}
		page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		status = resp.StatusCode
		fmt.Fprintf(out, "%s %s %s -> %d\n", method, u.Host, u.Path, status)
		for _, c := range resp.Cookies() {
			path := c.Path
			if path == "" {
				path = "/"
			}
			saved = append(saved, savedCookie{URL: u.Scheme + "://" + u.Host + "/", Name: c.Name, Value: c.Value, Path: path})
		}
		method, form = http.MethodGet, nil
		if loc := resp.Header.Get("Location"); status/100 == 3 && loc != "" {
			l, err := u.Parse(loc)
			if err != nil {
				fail("%v", err)
			}
			next = l.String()
			continue
		}
		title := firstMatch(`(?s)<h1[^>]*>(.*?)</h1>`, page)
		if f := findForm(page); f != nil && status/100 == 2 {
			fmt.Fprintf(out, "form: %s\n", title)
			for _, m := range regexp.MustCompile(`(?s)<dt>(.*?)</dt>\s*<dd>(.*?)</dd>`).FindAllSubmatch(page, -1) {
				fmt.Fprintf(out, "field: %s = %s\n", text(m[1]), text(m[2]))
			}
			action, err := u.Parse(html.UnescapeString(f.action))
			if err != nil {
				fail("%v", err)
			}
			for _, k := range []string{"login", "subject"} {
				if f.values.Has(k) {
					f.values.Set(k, user)
				}
			}
			if f.values.Has("password") {
				f.values.Set("password", "any password")
			}
			next, method, form, origin = action.String(), http.MethodPost, f.values, u.Scheme+"://"+u.Host
			continue
		}
		fmt.Fprintf(out, "page: %s\n", title)
		fmt.Fprintf(out, "text: %s\n", text([]byte(firstMatch(`(?s)<p[^>]*>(.*?)</p>`, page))))
		break
	}
	if jarFile != "" {
		b, _ := json.Marshal(saved)
		os.WriteFile(jarFile, b, 0o600)
	}
	if status/100 != 2 {
		os.Exit(1)
	}
}

// htmlForm is a page's first POST form: its action and the values a
// submission sends (inputs, and the approving button).
type htmlForm struct {
	action string
	values url.Values
}

var (
	formRE   = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`)
	inputRE  = regexp.MustCompile(`(?is)<input\b([^>]*)>`)
	buttonRE = regexp.MustCompile(`(?is)<button\b([^>]*)>`)
)

func findForm(page []byte) *htmlForm {
	for _, m := range formRE.FindAllSubmatch(page, -1) {
		if !strings.EqualFold(attr(m[1], "method"), "post") {
			continue
		}
		f := &htmlForm{action: attr(m[1], "action"), values: url.Values{}}
		for _, in := range inputRE.FindAllSubmatch(m[2], -1) {
			if name := attr(in[1], "name"); name != "" {
				f.values.Set(name, html.UnescapeString(attr(in[1], "value")))
			}
		}
		for _, b := range buttonRE.FindAllSubmatch(m[2], -1) {
			if name, v := attr(b[1], "name"), attr(b[1], "value"); name != "" && v == "approve" {
				f.values.Set(name, v)
			}
		}
		return f
	}
	return nil
}

// attr reads an attribute of a tag's attribute text.
func attr(tag []byte, name string) string {
	m := regexp.MustCompile(`(?i)\b` + name + `="([^"]*)"`).FindSubmatch(tag)
	if m == nil {
		return ""
	}
	return string(m[1])
}

func firstMatch(re string, b []byte) string {
	m := regexp.MustCompile(re).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// text is an HTML fragment as text: tags dropped, entities decoded,
// spaces collapsed.
func text(b []byte) string {
	s := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(b), "")
	return strings.Join(strings.Fields(html.UnescapeString(s)), " ")
}
