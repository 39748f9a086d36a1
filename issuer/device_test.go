package issuer_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/wire"
)

var userCodeRE = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// startDevice begins a device authorization for agentauth-cli.
func (s *testServer) startDevice(extra url.Values) map[string]any {
	s.t.Helper()
	form := url.Values{"client_id": {issuer.CLIClientID}}
	for k, v := range extra {
		form[k] = v
	}
	return wantOK(s.t, s.post("/device_authorization", form))
}

func (s *testServer) poll(dev map[string]any) reply {
	s.t.Helper()
	return s.post("/token", url.Values{"grant_type": {wire.GrantDeviceCode}, "device_code": {dev["device_code"].(string)}, "client_id": {issuer.CLIClientID}})
}

func TestDeviceFlow(t *testing.T) {
	s := start(t, issuer.Options{})
	dev := s.startDevice(url.Values{"resource": {"https://rs.example/mcp"}})
	userCode := dev["user_code"].(string)
	if !userCodeRE.MatchString(userCode) {
		t.Errorf("user_code %q, want XXXX-XXXX from the RFC 8628 §6.1 base-20 set", userCode)
	}
	if dev["verification_uri"] != s.url+"/device" ||
		dev["verification_uri_complete"] != s.url+"/device?user_code="+userCode ||
		dev["expires_in"] != 600.0 || dev["interval"] != 5.0 {
		t.Errorf("device authorization response: %v", dev)
	}

	wantError(t, s.poll(dev), 400, "authorization_pending")
	wantError(t, s.poll(dev), 400, "slow_down")
	s.advance(5 * time.Second)
	wantError(t, s.poll(dev), 400, "slow_down") // the interval grew to 10s, then 15s
	s.advance(15 * time.Second)
	wantError(t, s.poll(dev), 400, "authorization_pending")

	// The user types the code in another case and without the dash.
	typed := strings.ToLower(strings.ReplaceAll(userCode, "-", ""))
	page := s.get("/device?user_code=" + typed)
	body := wantPage(t, page, http.StatusOK)
	for _, want := range []string{userCode, "agentauth CLI", "https://rs.example/mcp", "agent:use"} {
		if !strings.Contains(body, want) {
			t.Errorf("the device page lacks %q:\n%s", want, body)
		}
	}
	r := s.post("/device", url.Values{"nonce": {pageNonce(t, page)}, "decision": {"approve"}, "subject": {"bob"}})
	if body := wantPage(t, r, http.StatusOK); !strings.Contains(body, "approved") {
		t.Errorf("approval page:\n%s", body)
	}

	s.advance(15 * time.Second)
	tok := wantOK(t, s.poll(dev))
	c := s.verify(tok["access_token"].(string))
	if c.Subject != "bob" || c.Audience[0] != "https://rs.example/mcp" || c.ClientID != issuer.CLIClientID {
		t.Errorf("claims: %+v", c)
	}
	if tok["refresh_token"] == nil {
		t.Errorf("no refresh token for agentauth-cli")
	}
	s.advance(15 * time.Second)
	wantError(t, s.poll(dev), 400, "invalid_grant")
	wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusBadRequest)
}

func TestDeviceDenied(t *testing.T) {
	s := start(t, issuer.Options{})
	dev := s.startDevice(nil)
	page := s.get(dev["verification_uri_complete"].(string))
	wantPage(t, s.post("/device", url.Values{"nonce": {pageNonce(t, page)}, "decision": {"deny"}}), http.StatusOK)
	wantError(t, s.poll(dev), 400, "access_denied")
}

func TestDeviceCodeExpires(t *testing.T) {
	s := start(t, issuer.Options{DeviceCodeTTL: 2 * time.Minute})
	dev := s.startDevice(nil)
	if dev["expires_in"] != 120.0 {
		t.Errorf("expires_in %v, want 120", dev["expires_in"])
	}
	page := s.get(dev["verification_uri_complete"].(string))
	s.advance(2*time.Minute + time.Second)
	wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusBadRequest)
	wantPage(t, s.post("/device", url.Values{"nonce": {pageNonce(t, page)}, "decision": {"approve"}, "subject": {"bob"}}), http.StatusBadRequest)
	wantError(t, s.poll(dev), 400, "expired_token")
}

func TestDeviceAutoApprove(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Subject: "carol"})
	dev := s.startDevice(nil)
	body := wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusOK)
	if !strings.Contains(body, "approved") || strings.Contains(body, "<form") {
		t.Errorf("auto-approve page:\n%s", body)
	}
	s.advance(5 * time.Second)
	tok := wantOK(t, s.poll(dev))
	if c := s.verify(tok["access_token"].(string)); c.Subject != "carol" || c.Audience[0] != s.url+"/mcp" {
		t.Errorf("sub %q aud %v, want carol and the default resource", c.Subject, c.Audience)
	}
}

func TestDeviceAuthorizationErrors(t *testing.T) {
	s := start(t, issuer.Options{Clients: []issuer.Client{{ID: "codeonly", RedirectURIs: []string{cliRedirect}, GrantTypes: []string{"authorization_code"}}}})
	wantError(t, s.post("/device_authorization", url.Values{"client_id": {"nobody"}}), 401, "invalid_client")
	wantError(t, s.post("/device_authorization", url.Values{"client_id": {"codeonly"}}), 400, "unauthorized_client")
	wantError(t, s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}, "resource": {"rs.example"}}), 400, "invalid_target")
	wantError(t, s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}, "scope": {`"`}}), 400, "invalid_scope")

	dev := s.startDevice(nil)
	s.post("/device", url.Values{"nonce": {pageNonce(t, s.get(dev["verification_uri_complete"].(string)))}, "decision": {"approve"}, "subject": {"bob"}})
	form := url.Values{"grant_type": {wire.GrantDeviceCode}, "device_code": {dev["device_code"].(string)}, "client_id": {issuer.CLIClientID}, "resource": {"https://other.example/"}}
	wantError(t, s.post("/token", form), 400, "invalid_target")
	wantError(t, s.post("/token", url.Values{"grant_type": {wire.GrantDeviceCode}, "device_code": {"made-up"}, "client_id": {issuer.CLIClientID}}), 400, "invalid_grant")
}

func TestDevicePagesEscape(t *testing.T) {
	s := start(t, issuer.Options{Clients: []issuer.Client{{ID: "evil", Name: "<script>name</script>"}}})
	body := wantPage(t, s.get("/device?user_code="+url.QueryEscape("<script>code</script>")), http.StatusBadRequest)
	if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;code&lt;/script&gt;") {
		t.Errorf("unknown-code page:\n%s", body)
	}
	if body := wantPage(t, s.get("/device"), http.StatusOK); !strings.Contains(body, `name="user_code"`) {
		t.Errorf("entry page has no code field:\n%s", body)
	}

	dev := wantOK(t, s.post("/device_authorization", url.Values{"client_id": {"evil"}, "scope": {"<script>scope</script>"}}))
	body = wantPage(t, s.get(dev["verification_uri_complete"].(string)), http.StatusOK)
	if strings.Contains(body, "<script>") ||
		!strings.Contains(body, "&lt;script&gt;name&lt;/script&gt;") || !strings.Contains(body, "&lt;script&gt;scope&lt;/script&gt;") {
		t.Errorf("device page:\n%s", body)
	}
}
