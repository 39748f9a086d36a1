package upstream

import (
	"context"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/store"
)

// The broker_call_*.txtar scripts' helpers: signin-browser, a $BROWSER
// that signs the user in at the URL agentauth call opens, and cred-put,
// which stores a token for a resource as a login would.
func init() {
	programs["signin-browser"] = signInBrowserMain
	programs["cred-put"] = credPutMain
}

// signInBrowserMain is a $BROWSER for upstream sign-ins: it GETs URL and
// follows the redirects with a cookie jar (the broker's cookie binds
// /auth/start to /callback; the issuer's session cookie says who the
// browser is), as a user's browser would, submits the broker's
// confirmation page (a bound link: POST /auth/start) as the user clicking
// Continue, and appends each hop and the final page's title to -log FILE
// (call sends the browser's own output to /dev/null). A final status that
// is not 2xx exits 1.
// Usage: signin-browser -log FILE URL
func signInBrowserMain() {
	fs := flag.NewFlagSet("signin-browser", flag.ExitOnError)
	logFile := fs.String("log", "", "append the hops to `FILE`")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 1 || *logFile == "" {
		fmt.Fprintln(os.Stderr, "usage: signin-browser -log FILE URL")
		os.Exit(2)
	}
	log, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	progutil.Check("signin-browser", err)
	defer log.Close()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	next := fs.Arg(0)
	var form url.Values
	for hop := 0; hop < 10; hop++ {
		var resp *http.Response
		if form != nil {
			req, rerr := http.NewRequest(http.MethodPost, next, strings.NewReader(form.Encode()))
			progutil.Check("signin-browser", rerr)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", req.URL.Scheme+"://"+req.URL.Host)
			resp, err = hc.Do(req)
			form = nil
		} else {
			resp, err = hc.Get(next)
		}
		progutil.Check("signin-browser", err)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		fmt.Fprintf(log, "%s %s -> %d\n", resp.Request.URL.Host, resp.Request.URL.Path, resp.StatusCode)
		if loc, err := resp.Location(); err == nil && resp.StatusCode/100 == 3 {
			next = loc.String()
			continue
		}
		if resp.StatusCode == http.StatusOK && confirmFormRE.Match(body) {
			form = url.Values{}
			for _, m := range hiddenInputRE.FindAllSubmatch(body, -1) {
				form.Set(html.UnescapeString(string(m[1])), html.UnescapeString(string(m[2])))
			}
			next = resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/auth/start"
			continue
		}
		if t := regexp.MustCompile(`<h1>(.*?)</h1>`).FindSubmatch(body); t != nil {
			fmt.Fprintf(log, "page: %s\n", html.UnescapeString(string(t[1])))
		}
		if resp.StatusCode/100 != 2 {
			os.Exit(1)
		}
		return
	}
	fmt.Fprintln(log, "too many redirects")
	os.Exit(1)
}

// The broker's confirmation page of a bound sign-in link, and its fields.
var (
	confirmFormRE = regexp.MustCompile(`<form method="post" action="/auth/start">`)
	hiddenInputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// credPutMain stores an access token for a resource in the file store of
// $AGENTAUTH_CONFIG_DIR, as a login would (no refresh token, no expiry).
// Usage: cred-put RESOURCE TOKEN
func credPutMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cred-put RESOURCE TOKEN")
		os.Exit(2)
	}
	dir, err := store.ConfigDir()
	progutil.Check("cred-put", err)
	st, err := store.Open(store.KindFile, dir)
	progutil.Check("cred-put", err)
	progutil.Check("cred-put", st.Put(context.Background(), &store.Credential{Key: store.Key{Resource: os.Args[1], Issuer: "static"},
		AccessToken: os.Args[2], TokenType: "Bearer"}))
}
