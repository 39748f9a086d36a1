package issuer_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/issuer"
)

func TestRegisterPublicNativeClient(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	r := s.postJSON("/register", `{"client_name":"My Agent","redirect_uris":["http://127.0.0.1/cb"],
		"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"logo_uri":"ignored"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", r.status, r.body)
	}
	m := r.json(t)
	id, _ := m["client_id"].(string)
	if id == "" || m["client_secret"] != nil || m["client_id_issued_at"] != float64(epoch.Unix()) {
		t.Errorf("registration response: %v", m)
	}
	delete(m, "client_id")
	delete(m, "client_id_issued_at")
	want := map[string]any{
		"client_name": "My Agent", "redirect_uris": []any{"http://127.0.0.1/cb"}, "token_endpoint_auth_method": "none",
		"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("registered metadata (-want +got):\n%s", diff)
	}

	a := newAuthz(id, "http://127.0.0.1:61000/cb")
	tok := wantOK(t, s.exchange(a, s.code(a)))
	if c := s.verify(tok["access_token"].(string)); c.ClientID != id {
		t.Errorf("client_id claim %q, want %q", c.ClientID, id)
	}
	wantOK(t, s.refresh(id, tok["refresh_token"].(string)))
}

func TestRegisterConfidentialClient(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, AllowedRedirectOrigins: appOrigins})
	r := s.postJSON("/register", `{"redirect_uris":["https://app.example/cb"],"client_name":"server app"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", r.status, r.body)
	}
	m := r.json(t)
	id, secret := m["client_id"].(string), m["client_secret"].(string)
	if secret == "" || m["client_secret_expires_at"] != 0.0 || m["token_endpoint_auth_method"] != "client_secret_basic" {
		t.Errorf("registration response: %v", m)
	}
	if diff := cmp.Diff([]any{"authorization_code"}, m["grant_types"]); diff != "" {
		t.Errorf("default grant_types (-want +got):\n%s", diff)
	}

	a := newAuthz(id, "https://app.example/cb")
	code := s.code(a)
	wantError(t, s.exchange(a, code, id, "guess"), http.StatusUnauthorized, "invalid_client")
	tok := wantOK(t, s.exchange(a, code, id, secret))
	if tok["refresh_token"] != nil {
		t.Errorf("a client registered for authorization_code only got a refresh token")
	}
	if c := s.verify(tok["access_token"].(string)); c.ClientID != id {
		t.Errorf("client_id claim %q, want %q", c.ClientID, id)
	}
	// The other port of the registered host is not the registered redirect.
	wantPage(t, s.authorize(newAuthz(id, "https://app.example:8443/cb")), http.StatusBadRequest)
}

func TestRegisterDeviceOnlyClient(t *testing.T) {
	s := start(t, issuer.Options{})
	r := s.postJSON("/register", `{"token_endpoint_auth_method":"none","grant_types":["urn:ietf:params:oauth:grant-type:device_code"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", r.status, r.body)
	}
	id := r.str(t, "client_id")
	wantOK(t, s.post("/device_authorization", url.Values{"client_id": {id}}))
}

// mcp-remote registers its device-code client with response_types
// ["code"] and only the device grant: the issuer registers it with the
// response types its grants imply (RFC 7591 §2) instead of refusing.
func TestRegisterFixesUpResponseTypes(t *testing.T) {
	s := start(t, issuer.Options{})
	r := s.postJSON("/register", `{"client_name":"mcp-remote","redirect_uris":["http://127.0.0.1:3334/oauth/callback"],"token_endpoint_auth_method":"none",
		"grant_types":["urn:ietf:params:oauth:grant-type:device_code"],"response_types":["code"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", r.status, r.body)
	}
	if diff := cmp.Diff([]any{}, r.json(t)["response_types"]); diff != "" {
		t.Errorf("response_types (-want +got):\n%s", diff)
	}
	wantOK(t, s.post("/device_authorization", url.Values{"client_id": {r.str(t, "client_id")}}))

	r = s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":[]}`)
	if diff := cmp.Diff([]any{"code"}, r.json(t)["response_types"]); r.status != http.StatusCreated || diff != "" {
		t.Errorf("%d response_types (-want +got):\n%s", r.status, diff)
	}
}

func TestRegisterRefusesBadMetadata(t *testing.T) {
	s := start(t, issuer.Options{})
	for _, tc := range []struct{ name, body, want string }{
		{"javascript redirect", `{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri"},
		{"data redirect", `{"redirect_uris":["data:text/html,<script>alert(1)</script>"]}`, "invalid_redirect_uri"},
		{"http non-loopback redirect", `{"redirect_uris":["http://app.example/cb"]}`, "invalid_redirect_uri"},
		{"custom scheme redirect", `{"redirect_uris":["com.example.app:/cb"]}`, "invalid_redirect_uri"},
		{"redirect with fragment", `{"redirect_uris":["https://app.example/cb#x"]}`, "invalid_redirect_uri"},
		{"relative redirect", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri"},
		{"redirect with user info", `{"redirect_uris":["https://u:p@app.example/cb"]}`, "invalid_redirect_uri"},
		{"no redirect for the code grant", `{"token_endpoint_auth_method":"none"}`, "invalid_redirect_uri"},
		{"unknown auth method", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, "invalid_client_metadata"},
		{"password grant", `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["password"]}`, "invalid_client_metadata"},
		{"implicit", `{"redirect_uris":["https://app.example/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
		{"redirect_uris not a list", `{"redirect_uris":"https://app.example/cb"}`, "invalid_client_metadata"},
		{"malformed JSON", `{"redirect_uris":`, "invalid_client_metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, s.postJSON("/register", tc.body), http.StatusBadRequest, tc.want)
		})
	}
	wantError(t, s.post("/register", url.Values{"redirect_uris": {"https://app.example/cb"}}), http.StatusBadRequest, "invalid_client_metadata")
}
