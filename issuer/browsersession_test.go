package issuer_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// The development box's /login signs the browser in with the session
// cookie (sealed, HttpOnly, SameSite=Lax, Path=/), which SignedIn reads
// back until it expires or is tampered with; return_to stays on this
// origin; /logout clears it.
func TestDevLoginSetsBrowserSession(t *testing.T) {
	s := start(t, issuer.Options{})
	signedIn := func(c *http.Cookie) (string, bool) {
		r := httptest.NewRequest(http.MethodGet, "/auth/start", nil)
		if c != nil {
			r.AddCookie(c)
		}
		return s.iss.SignedIn(r)
	}
	page := s.get("/login?return_to=" + url.QueryEscape("/auth/start?id=X"))
	if page.status != http.StatusOK || !strings.Contains(string(page.body), `name="return_to" value="/auth/start?id=X"`) {
		t.Fatalf("GET /login: %d %s", page.status, page.body)
	}
	r := s.post("/login", url.Values{"subject": {"bob"}, "return_to": {"/auth/start?id=X"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/auth/start?id=X" {
		t.Fatalf("POST /login: %d %q", r.status, r.header.Get("Location"))
	}
	resp := http.Response{Header: r.header}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == issuer.BrowserSessionCookie {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || strings.Contains(c.Value, "bob") {
		t.Fatalf("session cookie %+v", c)
	}
	if sub, ok := signedIn(c); !ok || sub != "bob" {
		t.Fatalf("SignedIn = %q, %v", sub, ok)
	}
	if _, ok := signedIn(nil); ok {
		t.Fatal("signed in without a cookie")
	}
	forged := *c
	forged.Value = c.Value[:len(c.Value)-2] + "AA"
	if _, ok := signedIn(&forged); ok {
		t.Fatal("a tampered cookie is accepted")
	}
	// Another host than this origin is not a place to return to.
	for _, to := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example"} {
		r := s.post("/login", url.Values{"subject": {"bob"}, "return_to": {to}})
		if r.status != http.StatusOK || r.header.Get("Location") != "" {
			t.Fatalf("return_to %q: %d %q", to, r.status, r.header.Get("Location"))
		}
	}
	s.advance(issuer.BrowserSessionTTL + time.Second)
	if _, ok := signedIn(c); ok {
		t.Fatal("an expired session is accepted")
	}
	out := s.post("/logout", url.Values{})
	if out.status != http.StatusOK || !strings.Contains(out.header.Get("Set-Cookie"), issuer.BrowserSessionCookie+"=;") {
		t.Fatalf("POST /logout: %d %q", out.status, out.header.Get("Set-Cookie"))
	}
}

// Behind TLS (an https issuer) the session cookie is Secure.
func TestBrowserSessionSecureOnHTTPS(t *testing.T) {
	iss, err := issuer.New(issuer.Options{Issuer: "https://agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "https://agents.example/login", strings.NewReader(url.Values{"subject": {"bob"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	iss.Handler().ServeHTTP(w, r)
	cs := w.Result().Cookies()
	if len(cs) != 1 || cs[0].Name != issuer.BrowserSessionCookie || !cs[0].Secure || !cs[0].HttpOnly {
		t.Fatalf("cookies %+v", cs)
	}
}
