package issuer_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/issuer"
)

func (s *testServer) revoke(token string) reply {
	s.t.Helper()
	return s.post("/revoke", url.Values{"token": {token}, "client_id": {issuer.CLIClientID}})
}

func TestIntrospection(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs}})
	tok := s.tokens(url.Values{"resource": {"https://rs.example/mcp"}})
	access := tok["access_token"].(string)
	c := s.verify(access)

	want := map[string]any{
		"active": true, "scope": "agent:use", "client_id": issuer.CLIClientID, "sub": "alice",
		"aud": "https://rs.example/mcp", "iss": s.url, "exp": float64(epoch.Add(time.Hour).Unix()),
		"iat": float64(epoch.Unix()), "jti": c.ID, "token_type": "Bearer",
	}
	if diff := cmp.Diff(want, s.introspect(access)); diff != "" {
		t.Errorf("introspection (-want +got):\n%s", diff)
	}
	inactive := map[string]any{"active": false}
	for name, token := range map[string]string{
		"garbage":       "not-a-token",
		"refresh token": tok["refresh_token"].(string),
		"foreign JWT":   "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln",
	} {
		if diff := cmp.Diff(inactive, s.introspect(token)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}

	// Only a confidential client may introspect (RFC 7662 §2.1).
	wantError(t, s.post("/introspect", url.Values{"token": {access}, "client_id": {issuer.CLIClientID}}), http.StatusUnauthorized, "invalid_client")
	wantError(t, s.post("/introspect", url.Values{"token": {access}}), http.StatusUnauthorized, "invalid_client")
	wantError(t, s.post("/introspect", url.Values{"token": {access}}, "rs", "wrong"), http.StatusUnauthorized, "invalid_client")
	wantError(t, s.post("/introspect", url.Values{}, "rs", "rs-secret"), http.StatusBadRequest, "invalid_request")

	s.advance(time.Hour)
	if diff := cmp.Diff(inactive, s.introspect(access)); diff != "" {
		t.Errorf("expired token (-want +got):\n%s", diff)
	}
}

func TestRevokeAccessToken(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs, web}, AllowedRedirectOrigins: appOrigins})
	tok := s.tokens(nil)
	access := tok["access_token"].(string)

	// Another client may not revoke it.
	wantError(t, s.post("/revoke", url.Values{"token": {access}}, "web", "web-secret"), http.StatusBadRequest, "unauthorized_client")
	if s.introspect(access)["active"] != true || len(s.takeRevoked()) != 0 {
		t.Fatalf("another client's revocation took effect")
	}

	if r := s.revoke(access); r.status != http.StatusOK {
		t.Fatalf("revoke: status %d; body %s", r.status, r.body)
	}
	if got, want := s.takeRevoked(), []string{s.verify(access).ID}; !cmp.Equal(got, want) {
		t.Errorf("OnRevoke got %v, want %v", got, want)
	}
	if s.introspect(access)["active"] != false {
		t.Errorf("a revoked access token is active")
	}
	if r := s.revoke(access); r.status != http.StatusOK || len(s.takeRevoked()) != 0 {
		t.Errorf("revoking twice: status %d, reported again", r.status)
	}
	// The refresh token of the grant survives an access token revocation.
	wantOK(t, s.refresh(issuer.CLIClientID, tok["refresh_token"].(string)))
}

func TestRevokeRefreshTokenRevokesItsFamily(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs}})
	t1 := s.tokens(nil)
	t2 := wantOK(t, s.refresh(issuer.CLIClientID, t1["refresh_token"].(string)))

	if r := s.post("/revoke", url.Values{"token": {t2["refresh_token"].(string)}, "token_type_hint": {"access_token"}, "client_id": {issuer.CLIClientID}}); r.status != http.StatusOK {
		t.Fatalf("revoke: status %d; body %s", r.status, r.body)
	}
	// The family's access tokens share one sid, revoked as one.
	want := []string{s.verify(t1["access_token"].(string)).SID}
	if sid := s.verify(t2["access_token"].(string)).SID; sid != want[0] || sid == "" {
		t.Fatalf("the access tokens of one family have sids %q and %q", want[0], sid)
	}
	if got := s.takeRevoked(); !sameSet(got, want) {
		t.Errorf("OnRevoke got %v, want %v", got, want)
	}
	for _, tok := range []map[string]any{t1, t2} {
		if s.introspect(tok["access_token"].(string))["active"] != false {
			t.Errorf("an access token of the revoked family is active")
		}
	}
	wantError(t, s.refresh(issuer.CLIClientID, t2["refresh_token"].(string)), 400, "invalid_grant")
}

func TestRevokeUnknownAndBadRequests(t *testing.T) {
	s := start(t, issuer.Options{})
	if r := s.revoke("never-issued"); r.status != http.StatusOK || len(s.takeRevoked()) != 0 {
		t.Errorf("unknown token: status %d, want 200 and nothing revoked", r.status)
	}
	wantError(t, s.post("/revoke", url.Values{"client_id": {issuer.CLIClientID}}), 400, "invalid_request")
	wantError(t, s.post("/revoke", url.Values{"token": {"x"}, "client_id": {"nobody"}}), 401, "invalid_client")
}

// TestSessionEnd: OnSessionEnd reports a client's subject once the
// revocation endpoint revoked the last live family it held: not while
// another family of the same client and subject lives, not for an access
// token alone, and not twice.
func TestSessionEnd(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs}})
	var ended []string
	s.iss.OnSessionEnd(func(subject, clientID string) { ended = append(ended, subject+"/"+clientID) })
	one, two := s.tokens(nil), s.tokens(nil)

	s.revoke(one["access_token"].(string))
	s.revoke(one["refresh_token"].(string))
	if len(ended) != 0 {
		t.Fatalf("session ended with a family still live: %v", ended)
	}
	s.revoke(two["refresh_token"].(string))
	s.revoke(two["refresh_token"].(string))
	if want := []string{"alice/" + issuer.CLIClientID}; !cmp.Equal(ended, want) {
		t.Errorf("OnSessionEnd got %v, want %v", ended, want)
	}
}
