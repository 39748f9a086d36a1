package broker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/state"
)

// fakeLogin is serve's browser login as the broker sees it: the test
// browser says who it is with a "user" cookie.
type fakeLogin struct{}

func (fakeLogin) Origin() string { return "http://issuer.test" }
func (fakeLogin) SignedIn(r *http.Request) (string, bool) {
	c, err := r.Cookie("user")
	if err != nil {
		return "", false
	}
	return c.Value, true
}
func (fakeLogin) SignInURL(returnTo string) string {
	return "http://issuer.test/login?" + url.Values{"return_to": {returnTo}}.Encode()
}

// browse sends one request to the broker's handler as a browser signed
// in as user ("" for none).
func browse(t *testing.T, h http.Handler, method, target, user string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if user != "" {
		r.AddCookie(&http.Cookie{Name: "user", Value: user})
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result(), w.Body.String()
}

func TestBoundLinkOpensOnlyForItsUser(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	b.opts.Browser = fakeLogin{}
	b.opts.ClientName = func(_ context.Context, id string) string { return "Copilot" }
	b.upstreams["rally"].Scopes = []string{"read", "write"}
	h := b.Handler()
	alice := Principal{Issuer: "http://issuer.test", Subject: "alice", ClientID: "cli"}
	a, err := b.Ask(ctx, alice, "rally")
	if err != nil {
		t.Fatal(err)
	}
	link := "/auth/start?id=" + a.ElicitationID
	sid := b.Session("alice", "cli")

	// Not signed in: through the issuer's login, back to the link.
	resp, _ := browse(t, h, "GET", link, "", nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != (fakeLogin{}).SignInURL(link) {
		t.Fatalf("not signed in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Another user: refused with a page saying why; nothing changes.
	resp, body := browse(t, h, "GET", link, "bob", nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Not your sign-in link") || !strings.Contains(body, "another user") {
		t.Fatalf("bob's GET: %d %s", resp.StatusCode, body)
	}
	if _, err := b.Start(ctx, a.ElicitationID, "bob"); !errors.Is(err, ErrNotYours) {
		t.Fatalf("Start as bob: %v, want ErrNotYours", err)
	}
	// The user: the confirmation page names client, session, upstream, scopes.
	resp, body = browse(t, h, "GET", link, "alice", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("alice's GET: %d %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	for _, want := range []string{"signed in as <strong>alice</strong>", "Copilot (client cli)", sid, "RALLY", "<code>read</code> <code>write</code>", `action="/auth/start"`} {
		if !strings.Contains(body, want) {
			t.Errorf("confirmation page lacks %q:\n%s", want, body)
		}
	}
	token := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(body)
	if token == nil {
		t.Fatalf("no token in the page:\n%s", body)
	}
	// bob cannot post alice's confirmation, nor alice without the token.
	form := url.Values{"id": {a.ElicitationID}, "token": {token[1]}}
	if resp, _ := browse(t, h, "POST", "/auth/start", "bob", form); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob's POST: %d", resp.StatusCode)
	}
	if resp, _ := browse(t, h, "POST", "/auth/start", "alice", url.Values{"id": {a.ElicitationID}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without token: %d", resp.StatusCode)
	}
	if ok, _, _ := b.Status(ctx, sid, "rally"); ok {
		t.Fatal("signed in before the user confirmed")
	}
	// alice confirms: to the upstream, and the callback completes.
	resp, _ = browse(t, h, "POST", "/auth/start", "alice", form)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), as.srv.URL+"/authorize?") {
		t.Fatalf("alice's POST: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, "agentauth_signin_") {
			cookie = ck
		}
	}
	q := as.authorize(t, resp.Header.Get("Location"))
	if _, err := b.Callback(ctx, q, func(name string) string {
		if cookie != nil && name == cookie.Name {
			return cookie.Value
		}
		return ""
	}); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := b.Status(ctx, sid, "rally"); !ok {
		t.Fatal("not signed in after the callback")
	}
}

// A session whose token another authorization server issued cannot be
// vouched for by serve's login: its link opens at once, as before.
func TestUnboundLinkStartsAtOnce(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	b := newBroker(t, as, state.NewMemory(), nil, &clock{t: time.Now()})
	b.opts.Browser = fakeLogin{}
	a, err := b.Ask(ctx, Principal{Issuer: "https://other.example", Subject: "alice", ClientID: "cli"}, "rally")
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := browse(t, b.Handler(), "GET", "/auth/start?id="+a.ElicitationID, "", nil)
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), as.srv.URL+"/authorize?") {
		t.Fatalf("unbound GET: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// With AutoConfirm (serve --auto-approve) the user's browser goes to the
// upstream at once; another user is still refused.
func TestAutoConfirmSkipsOnlyThePage(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	b := newBroker(t, as, state.NewMemory(), nil, &clock{t: time.Now()})
	b.opts.Browser, b.opts.AutoConfirm = fakeLogin{}, true
	a, err := b.Ask(ctx, Principal{Issuer: "http://issuer.test", Subject: "alice", ClientID: "cli"}, "rally")
	if err != nil {
		t.Fatal(err)
	}
	link := "/auth/start?id=" + a.ElicitationID
	if resp, _ := browse(t, b.Handler(), "GET", link, "bob", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob: %d", resp.StatusCode)
	}
	resp, _ := browse(t, b.Handler(), "GET", link, "alice", nil)
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), as.srv.URL+"/authorize?") {
		t.Fatalf("alice: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
