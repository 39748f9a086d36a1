package broker

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/state"
)

// TestPages walks the broker's pages as a browser does and checks what a
// user sees: the shared layout (lang, viewport, stylesheet), the success
// page naming the account, the upstream and the session, a reused link
// said once, and a declined sign-in in words with a next step.
func TestPages(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	b := newBroker(t, as, state.NewMemory(), nil, &clock{t: time.Now()})
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	get := func(t *testing.T, hc *http.Client, u string) (int, string, http.Header) {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, html.UnescapeString(string(body)), resp.Header
	}
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	// signIn opens a new link and returns the browser and the callback
	// query the upstream would send.
	signIn := func(t *testing.T, clientID string) (*http.Client, string, url.Values) {
		a, err := b.Ask(ctx, Principal{Subject: "alice", ClientID: clientID}, "rally")
		if err != nil {
			t.Fatal(err)
		}
		hc := browser()
		link := srv.URL + "/auth/start?id=" + a.ElicitationID
		status, _, h := get(t, hc, link)
		if status != http.StatusFound {
			t.Fatalf("/auth/start: %d", status)
		}
		return hc, link, as.authorize(t, h.Get("Location"))
	}
	layout := func(t *testing.T, body string, h http.Header) {
		t.Helper()
		for _, want := range []string{`<html lang="en">`, `<meta name="viewport" content="width=device-width, initial-scale=1">`, `<style>`, `font-family: system-ui`} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %s:\n%s", want, body)
			}
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
	}

	t.Run("signed in, then the link reused", func(t *testing.T) {
		hc, link, q := signIn(t, "client-one")
		status, body, h := get(t, hc, srv.URL+"/callback?"+q.Encode())
		if status != http.StatusOK {
			t.Fatalf("/callback: %d\n%s", status, body)
		}
		layout(t, body, h)
		for _, want := range []string{"<h1>Signed in to RALLY</h1>", "<dt>Account</dt>\n<dd>alice</dd>",
			"<dt>Session</dt>\n<dd><code>" + b.Session("alice", "client-one") + "</code></dd>", "return to the agent"} {
			if !strings.Contains(body, want) {
				t.Errorf("the success page lacks %q:\n%s", want, body)
			}
		}
		status, body, h = get(t, hc, link)
		if status != http.StatusBadRequest {
			t.Fatalf("reused link: %d", status)
		}
		layout(t, body, h)
		text := body[strings.Index(body, "</h1>"):]
		if n := strings.Count(strings.ToLower(text), "sign-in link"); n != 1 {
			t.Errorf("the reused-link page says \"sign-in link\" %d times under its title (once is enough):\n%s", n, body)
		}
		if !regexp.MustCompile(`class="next">Run the agent's command again`).MatchString(body) {
			t.Errorf("the reused-link page names no next step:\n%s", body)
		}
	})

	t.Run("declined", func(t *testing.T) {
		hc, _, q := signIn(t, "client-two")
		q.Del("code")
		q.Set("error", "access_denied")
		q.Set("error_description", "The user denied the request")
		status, body, h := get(t, hc, srv.URL+"/callback?"+q.Encode())
		if status != http.StatusBadRequest {
			t.Fatalf("/callback: %d", status)
		}
		layout(t, body, h)
		if strings.Contains(body, "access_denied") {
			t.Errorf("the denied page shows the raw error code:\n%s", body)
		}
		for _, want := range []string{"declined the sign-in", `class="next">To try again, run the agent's command again`} {
			if !strings.Contains(body, want) {
				t.Errorf("the denied page lacks %q:\n%s", want, body)
			}
		}
	})
}
