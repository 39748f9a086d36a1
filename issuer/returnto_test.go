package issuer_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/issuer"
)

// A sign-in sends the browser back only to a path of this origin, in the
// form a browser would resolve it to, and to exactly the value checked:
// every attack value is refused (the "Signed in" page, no Location) after
// the development sign-in form, with --auto-approve and after an OpenID
// Provider's sign-in; a benign one comes back canonical.
func TestReturnToStaysOnThisOrigin(t *testing.T) {
	refused := []string{
		`/a/../\evil.example`,
		`/./\evil.example`,
		`/a/b/../..//evil.example`,
		`/..//evil.example`,
		`/.//evil.example`,
		`//evil.example`,
		`/\evil.example`,
		`\\evil.example`,
		`\/evil.example`,
		`%2F%2Fevil.example`,
		`/%2F%2Fevil.example`,
		`/%2f/evil.example`,
		`/%5Cevil.example`,
		`/%5cevil.example`,
		`/a/%2e%2e//evil.example`,
		`/%2e/%2e%2e//evil.example`,
		`/%252F/evil.example`,
		`/%0a/evil.example`,
		`/%`,
		`/%zz`,
		"/\t/evil.example",
		"/\n/evil.example",
		"/\r\n/evil.example",
		" //evil.example",
		"/ /evil.example",
		"/\x00/evil.example",
		"/\x7f",
		"/caf\u00e9",
		`https://evil.example/`,
		`http:evil.example`,
		`javascript:alert(1)`,
		`evil.example`,
		`./x`,
		"/" + strings.Repeat("a", 16<<10),
	}
	accepted := map[string]string{
		"/device":          "/device",
		"/auth/start?id=X": "/auth/start?id=X",
		"/a/./b/../c":      "/a/c",
		"/x/..":            "/",
		`/a\b?x=\y`:        `/a/b?x=\y`,
		"/%E2%9C%93#top":   "/%E2%9C%93#top",
		"/authorize?redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb&state=%2F%2F": "/authorize?redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb&state=%2F%2F",
	}
	cases := map[string]string{}
	for _, v := range refused {
		cases[v] = ""
	}
	for v, want := range accepted {
		cases[v] = want
	}

	op := newFakeOP(t, nil)
	places := []struct {
		name string
		opts issuer.Options
		// signIn returns the answer that ends the sign-in begun with returnTo.
		signIn func(t *testing.T, s *testServer, returnTo string) reply
	}{
		{"development sign-in form", issuer.Options{}, func(t *testing.T, s *testServer, returnTo string) reply {
			page := s.get("/login?return_to=" + url.QueryEscape(returnTo))
			if page.status != http.StatusOK {
				t.Fatalf("GET /login: %d", page.status)
			}
			if cases[returnTo] == "" && strings.Contains(string(page.body), "evil.example") {
				t.Errorf("the form carries the refused return_to %q", returnTo)
			}
			return s.post("/login", url.Values{"subject": {"bob"}, "return_to": {returnTo}})
		}},
		{"--auto-approve", issuer.Options{AutoApprove: true}, func(t *testing.T, s *testServer, returnTo string) reply {
			return s.get("/login?return_to=" + url.QueryEscape(returnTo))
		}},
		{"OpenID Provider", issuer.Options{Login: &issuer.LoginOptions{Issuer: op.srv.URL, ClientID: "serve", ClientSecret: "s3cret"}},
			func(t *testing.T, s *testServer, returnTo string) reply {
				op.now = s.clock.Now
				r := s.get("/login?return_to=" + url.QueryEscape(returnTo))
				q := op.approve(t, r.header.Get("Location"), "alice", nil)
				req, _ := http.NewRequest(http.MethodGet, s.url+"/login/callback?"+q.Encode(), nil)
				for _, c := range cookies(r) {
					req.AddCookie(c)
				}
				return s.do(req)
			}},
	}
	for _, p := range places {
		t.Run(p.name, func(t *testing.T) {
			s := start(t, p.opts)
			base, _ := url.Parse(s.url + "/login")
			for in, want := range cases {
				r := p.signIn(t, s, in)
				loc := r.header.Get("Location")
				if want == "" {
					if r.status != http.StatusOK || loc != "" || !strings.Contains(string(r.body), "You are signed in") {
						t.Errorf("return_to %q: %d, Location %q; want the signed-in page", in, r.status, loc)
					}
					continue
				}
				if (r.status != http.StatusFound && r.status != http.StatusSeeOther) || loc != want {
					t.Errorf("return_to %q: %d, Location %q; want %q", in, r.status, loc, want)
					continue
				}
				// As a browser reads it: no backslash (a browser's "/"), this host.
				u, err := base.Parse(loc)
				if err != nil || u.Host != base.Host || strings.Contains(u.Path, `\`) {
					t.Errorf("return_to %q: Location %q leaves this origin", in, loc)
				}
			}
		})
	}
}
