package issuer_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// With AutoApprove, a browser that signed in with the development box
// (POST /login) is approved as the name it typed, not as Subject: tests
// choose whom a token names.
func TestAutoApproveAsSignedIn(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Subject: "carol"})
	jar, _ := cookiejar.New(nil)
	s.client.Jar = jar
	if r := s.post("/login", url.Values{"subject": {"dave"}}); r.status != http.StatusOK {
		t.Fatalf("sign-in: %d %s", r.status, r.body)
	}
	dev := s.startDevice(nil)
	wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusOK)
	s.advance(5 * time.Second)
	tok := wantOK(t, s.poll(dev))
	if c := s.verify(tok["access_token"].(string)); c.Subject != "dave" {
		t.Errorf("sub %q, want dave (signed in), not carol (Subject)", c.Subject)
	}
}
