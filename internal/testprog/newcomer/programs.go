// Package newcomer holds the programs the newcomer testscripts run
// (testdata/script/newcomer_*.txtar): a browser that keeps the pages it
// saw, and the shells' completion drivers.
package newcomer

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// Programs are the programs testscript puts on PATH.
func Programs() map[string]func() {
	return map[string]func(){
		"browser-page": browserPage,
		"bare-mcp":     bareMCP,
	}
}

var (
	nonceRE       = regexp.MustCompile(`name="nonce" value="([^"]+)"`)
	hiddenInputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// browserPage is a $BROWSER: browser-page FILE [approve|deny] URL. It GETs
// URL following redirects and writes the final page to FILE; when that
// page is a consent form and a decision is given, it posts the decision
// (signing in as alice), follows the redirects (to the callback) and
// writes the page it lands on to FILE.next. A broker link's confirmation
// page on the way is confirmed, as the user would.
func browserPage() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "browser-page: "+format+"\n", args...)
		os.Exit(1)
	}
	args := os.Args[1:]
	if len(args) < 2 || len(args) > 3 {
		fail("usage: browser-page FILE [approve|deny] URL")
	}
	file, decision, target := args[0], "", args[len(args)-1]
	if len(args) == 3 {
		decision = args[1]
	}
	// One browser: cookies kept across the hops (a broker sign-in binds
	// the browser with one).
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err := hc.Get(target)
	if err != nil {
		fail("%v", err)
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	// A bound broker link shows serve's confirmation first: the user
	// clicks Continue (POST /auth/start), on to the upstream.
	if bytes.Contains(page, []byte(`<form method="post" action="/auth/start">`)) {
		form := url.Values{}
		for _, m := range hiddenInputRE.FindAllSubmatch(page, -1) {
			form.Set(html.UnescapeString(string(m[1])), html.UnescapeString(string(m[2])))
		}
		start := resp.Request.URL.ResolveReference(&url.URL{Path: "/auth/start"})
		req, _ := http.NewRequest(http.MethodPost, start.String(), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", start.Scheme+"://"+start.Host)
		if resp, err = hc.Do(req); err != nil {
			fail("%v", err)
		}
		page, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	if err := os.WriteFile(file, page, 0o600); err != nil {
		fail("%v", err)
	}
	m := nonceRE.FindSubmatch(page)
	if decision == "" || m == nil {
		return
	}
	consent := resp.Request.URL.ResolveReference(&url.URL{Path: "/consent"})
	resp, err = hc.PostForm(consent.String(), url.Values{"nonce": {string(m[1])}, "decision": {decision}, "subject": {"alice"}})
	if err != nil {
		fail("%v", err)
	}
	page, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	os.WriteFile(file+".next", page, 0o600)
}
