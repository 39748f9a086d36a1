package issuer_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// FuzzLoginCallback: whatever a /login/callback carries (the owner's
// state or another, the provider's code or another, any iss and error,
// more query of any form, the owner's binding cookie, none or a forged
// one), it signs in at most the owner, and then the owner's own callback
// completes the sign-in exactly when the fuzzed one did not: a refused
// callback never spends the owner's pending sign-in, and none completes
// twice.
func FuzzLoginCallback(f *testing.F) {
	op := newFakeOP(f, time.Now)
	srv := httptest.NewUnstartedServer(nil)
	iss, err := issuer.New(issuer.Options{Issuer: "http://" + srv.Listener.Addr().String(),
		Login: &issuer.LoginOptions{Issuer: op.srv.URL, ClientID: "serve", ClientSecret: "s3cret"}})
	if err != nil {
		f.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range iss.Paths() {
		mux.Handle(p, iss.Handler())
	}
	srv.Config.Handler = mux
	srv.Start()
	f.Cleanup(srv.Close)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(t *testing.T, target string, jar []*http.Cookie) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range jar {
			req.AddCookie(c)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", target, err) // serve crashed or hung up
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// signedIn is the subject a callback's answer signed the browser in as.
	signedIn := func(resp *http.Response) string {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, c := range resp.Cookies() {
			if c.Name == issuer.BrowserSessionCookie && c.Value != "" {
				req.AddCookie(c)
			}
		}
		sub, _ := iss.SignedIn(req)
		return sub
	}

	f.Add(true, true, true, uint8(1), "", "", "", "", "")
	f.Add(true, true, false, uint8(1), "", "", "https://evil.example/", "", "")
	f.Add(true, false, true, uint8(1), "", "forged", "", "", "")
	f.Add(true, true, true, uint8(0), "", "", "", "", "")
	f.Add(true, true, true, uint8(2), "", "", "", "", "")
	f.Add(true, true, true, uint8(1), "", "", "", "access_denied", "")
	f.Add(true, true, true, uint8(1), "", "", "", "", "iss=http://x&iss=y")
	f.Add(false, true, true, uint8(1), "state", "", "", "", "state=%zz;code=")
	f.Add(true, false, false, uint8(1), "", "", "", "", "\x00&&=&%%")
	f.Fuzz(func(t *testing.T, realState, realCode, realIss bool, cookieMode uint8, state, code, issParam, errParam, extra string) {
		// The owner begins a sign-in and the provider approves it.
		start := get(t, "/login?return_to=/device", nil)
		jar := start.Cookies()
		owner := op.approve(t, start.Header.Get("Location"), "alice", nil)

		q := url.Values{}
		pick := func(key string, real bool, fuzzed string) {
			switch {
			case real:
				q.Set(key, owner.Get(key))
			case fuzzed != "":
				q.Set(key, fuzzed)
			}
		}
		pick("state", realState, state)
		pick("code", realCode, code)
		pick("iss", realIss, issParam)
		if errParam != "" {
			q.Set("error", errParam)
		}
		raw := q.Encode()
		if extra != "" {
			raw += "&" + rawQuery(extra)
		}
		var cookies []*http.Cookie
		switch cookieMode % 3 {
		case 1:
			cookies = jar
		case 2:
			for _, c := range jar {
				cookies = append(cookies, &http.Cookie{Name: c.Name, Value: state})
			}
		}
		fuzzed := signedIn(get(t, "/login/callback?"+raw, cookies))
		real := signedIn(get(t, "/login/callback?"+owner.Encode(), jar))
		want := op.srv.URL + "/#alice"
		switch {
		case fuzzed != "" && fuzzed != want, real != "" && real != want:
			t.Fatalf("signed in as %q then %q; only %q may be", fuzzed, real, want)
		case (fuzzed == "") == (real == ""):
			t.Fatalf("callback %q signed in %q, then the owner's %q: want exactly one sign-in", raw, fuzzed, real)
		}
	})
}

// rawQuery keeps s as query text, "&", "=", ";" and stray "%" included,
// escaping only the bytes a request line cannot carry.
func rawQuery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
