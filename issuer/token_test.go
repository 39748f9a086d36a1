package issuer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
)

// poster is a confidential client that authenticates in the body.
var poster = issuer.Client{ID: "poster", Secret: "poster-secret", AuthMethod: "client_secret_post", RedirectURIs: []string{"https://post.example/cb"}}

func TestTokenEndpointErrors(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{web, poster}, AllowedRedirectOrigins: appOrigins})
	cli := func() (*authz, string) {
		a := newAuthz(issuer.CLIClientID, cliRedirect)
		return a, s.code(a)
	}
	webCode := func() (*authz, string) {
		a := newAuthz("web", "https://app.example:8443/cb")
		return a, s.code(a)
	}
	for _, tc := range []struct {
		name   string
		send   func() reply
		status int
		want   string
	}{
		{"wrong verifier", func() reply {
			a, code := cli()
			a.verifier = oauth2.GenerateVerifier()
			return s.exchange(a, code)
		}, 400, "invalid_grant"},
		{"verifier too short", func() reply {
			a, code := cli()
			a.verifier = "abc"
			return s.exchange(a, code)
		}, 400, "invalid_grant"},
		{"no verifier", func() reply {
			a, code := cli()
			a.verifier = ""
			return s.exchange(a, code)
		}, 400, "invalid_request"},
		{"redirect_uri differs", func() reply {
			a, code := cli()
			a.query.Set("redirect_uri", "http://127.0.0.1:1/callback")
			return s.exchange(a, code)
		}, 400, "invalid_grant"},
		{"redirect_uri left out", func() reply {
			a, code := cli()
			a.query.Del("redirect_uri")
			a.query.Set("client_id", issuer.CLIClientID)
			return s.exchange(a, code)
		}, 400, "invalid_grant"},
		{"resource not authorized", func() reply {
			a, code := cli()
			return s.post("/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cliRedirect},
				"code_verifier": {a.verifier}, "client_id": {issuer.CLIClientID}, "resource": {"https://other.example/"}})
		}, 400, "invalid_target"},
		{"code of another client", func() reply {
			a, code := webCode()
			a.query.Set("client_id", issuer.CLIClientID)
			return s.exchange(a, code)
		}, 400, "invalid_grant"},
		{"unknown code", func() reply {
			a, _ := cli()
			return s.exchange(a, "made-up")
		}, 400, "invalid_grant"},
		{"unknown client", func() reply {
			a, code := cli()
			a.query.Set("client_id", "nobody")
			return s.exchange(a, code)
		}, 401, "invalid_client"},
		{"no client", func() reply {
			return s.post("/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "code_verifier": {"y"}})
		}, 401, "invalid_client"},
		{"wrong secret, Basic", func() reply {
			a, code := webCode()
			return s.exchange(a, code, "web", "not-the-secret")
		}, 401, "invalid_client"},
		{"wrong secret, post", func() reply {
			return s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {"poster"}, "client_secret": {"nope"}})
		}, 401, "invalid_client"},
		{"confidential client without secret", func() reply {
			a, code := webCode()
			return s.exchange(a, code)
		}, 401, "invalid_client"},
		{"registered method not used, Basic", func() reply {
			return s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, "poster", "poster-secret")
		}, 401, "invalid_client"},
		{"public client with a Basic secret", func() reply {
			a, code := cli()
			return s.exchange(a, code, issuer.CLIClientID, "")
		}, 401, "invalid_client"},
		{"two authentication methods", func() reply {
			return s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_secret": {"web-secret"}}, "web", "web-secret")
		}, 400, "invalid_request"},
		{"no grant_type", func() reply {
			return s.post("/token", url.Values{"client_id": {issuer.CLIClientID}})
		}, 400, "invalid_request"},
		{"password grant", func() reply {
			return s.post("/token", url.Values{"grant_type": {"password"}, "client_id": {issuer.CLIClientID}})
		}, 400, "unsupported_grant_type"},
		{"repeated parameter", func() reply {
			a, code := cli()
			return s.post("/token", url.Values{"grant_type": {"authorization_code"}, "code": {code, code}, "redirect_uri": {cliRedirect},
				"code_verifier": {a.verifier}, "client_id": {issuer.CLIClientID}})
		}, 400, "invalid_request"},
		{"JSON body", func() reply {
			return s.postJSON("/token", `{"grant_type":"authorization_code","client_id":"agentauth-cli"}`)
		}, 400, "invalid_request"},
		{"oversized body", func() reply {
			return s.post("/token", url.Values{"grant_type": {"refresh_token"}, "pad": {strings.Repeat("x", 100<<10)}})
		}, 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			wantError(t, r, tc.status, tc.want)
			if basic := r.header.Get("WWW-Authenticate"); (basic != "") != strings.Contains(tc.name, "Basic") {
				t.Errorf("WWW-Authenticate %q; a Basic challenge belongs to failed Basic authentication only", basic)
			}
		})
	}
	if r := s.get("/token"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /token: status %d, want 405", r.status)
	}
}

func TestFailedVerifierVoidsTheCode(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	right := a.verifier
	a.verifier = oauth2.GenerateVerifier()
	wantError(t, s.exchange(a, code), 400, "invalid_grant")
	a.verifier = right
	wantError(t, s.exchange(a, code), 400, "invalid_grant")
}

func TestMissingVerifierLeavesTheCodeUsable(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	right := a.verifier
	a.verifier = ""
	wantError(t, s.exchange(a, code), 400, "invalid_request")
	a.verifier = right
	wantOK(t, s.exchange(a, code))
}

func TestExpiredCode(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, CodeTTL: 30 * time.Second})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	s.advance(31 * time.Second)
	wantError(t, s.exchange(a, code), 400, "invalid_grant")
}

func TestReplayedCodeRevokesItsTokens(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs}})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	first := wantOK(t, s.exchange(a, code))
	second := wantOK(t, s.refresh(issuer.CLIClientID, first["refresh_token"].(string)))
	other := s.tokens(nil) // another grant, untouched
	if got := s.takeRevoked(); len(got) != 0 {
		t.Fatalf("revoked before any replay: %v", got)
	}

	wantError(t, s.exchange(a, code), 400, "invalid_grant")

	jtis := []string{s.verify(first["access_token"].(string)).SID}
	if got := s.takeRevoked(); !sameSet(got, jtis) {
		t.Errorf("OnRevoke got %v, want the grant's family id (sid) %v", got, jtis)
	}
	for _, tok := range []string{first["access_token"].(string), second["access_token"].(string)} {
		if s.introspect(tok)["active"] != false {
			t.Errorf("an access token of the replayed code is still active")
		}
	}
	wantError(t, s.refresh(issuer.CLIClientID, second["refresh_token"].(string)), 400, "invalid_grant")
	if s.introspect(other["access_token"].(string))["active"] != true {
		t.Errorf("a replay revoked a token of another grant")
	}
	wantOK(t, s.refresh(issuer.CLIClientID, other["refresh_token"].(string)))
}

func TestRefreshRotationAndReuse(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs, web}, AllowedRedirectOrigins: appOrigins})
	t1 := s.tokens(url.Values{"scope": {"agent:use extra"}, "resource": {"https://rs.example/mcp"}})
	r1 := t1["refresh_token"].(string)

	t2 := wantOK(t, s.refresh(issuer.CLIClientID, r1))
	r2 := t2["refresh_token"].(string)
	if r2 == "" || r2 == r1 || t2["access_token"] == t1["access_token"] {
		t.Fatalf("refresh did not rotate: %v", t2)
	}
	if c := s.verify(t2["access_token"].(string)); c.Audience[0] != "https://rs.example/mcp" || c.Scope != "agent:use extra" {
		t.Errorf("refreshed token aud %v scope %q, want the granted ones", c.Audience, c.Scope)
	}

	// Narrowing works; widening, another resource or another client do not.
	narrow := wantOK(t, s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r2}, "client_id": {issuer.CLIClientID}, "scope": {"extra"}}))
	if narrow["scope"] != "extra" {
		t.Errorf("narrowed scope %v, want extra", narrow["scope"])
	}
	r3 := narrow["refresh_token"].(string)
	wantError(t, s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r3}, "client_id": {issuer.CLIClientID}, "scope": {"admin"}}), 400, "invalid_scope")
	wantError(t, s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r3}, "client_id": {issuer.CLIClientID}, "resource": {"https://other.example/"}}), 400, "invalid_target")
	wantError(t, s.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r3}}, "web", "web-secret"), 400, "invalid_grant")
	if got := s.takeRevoked(); len(got) != 0 {
		t.Fatalf("revoked before any reuse: %v", got)
	}

	// Reusing r1, rotated long ago, revokes the whole family.
	wantError(t, s.refresh(issuer.CLIClientID, r1), 400, "invalid_grant")
	jtis := []string{s.verify(t1["access_token"].(string)).SID}
	for _, tok := range []map[string]any{t1, t2, narrow} {
		if s.introspect(tok["access_token"].(string))["active"] != false {
			t.Errorf("an access token of the family is still active")
		}
	}
	if got := s.takeRevoked(); !sameSet(got, jtis) {
		t.Errorf("OnRevoke got %v, want %v", got, jtis)
	}
	wantError(t, s.refresh(issuer.CLIClientID, r3), 400, "invalid_grant")
}

func TestRefreshTokenExpires(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, RefreshTTL: 2 * time.Hour})
	tok := s.tokens(nil)
	s.advance(2*time.Hour + time.Second)
	wantError(t, s.refresh(issuer.CLIClientID, tok["refresh_token"].(string)), 400, "invalid_grant")
}

func TestNoRefreshTokenWithoutTheGrantType(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{{
		ID: "once", RedirectURIs: []string{"https://app.example/cb"}, GrantTypes: []string{"authorization_code"},
	}}, AllowedRedirectOrigins: appOrigins})
	a := newAuthz("once", "https://app.example/cb")
	tok := wantOK(t, s.exchange(a, s.code(a)))
	if _, ok := tok["refresh_token"]; ok {
		t.Errorf("a client without the refresh_token grant got a refresh token")
	}
	wantError(t, s.refresh("once", "anything"), 400, "unauthorized_client")
}

// TestClientCredentials: a registered confidential client gets a token for
// itself with the client credentials grant (RFC 6749 §4.4), without a
// refresh token; a public client is refused.
func TestClientCredentials(t *testing.T) {
	s := start(t, issuer.Options{})
	reg := s.postJSON("/register", `{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}`)
	id, secret := reg.str(t, "client_id"), reg.str(t, "client_secret")
	tok := wantOK(t, s.post("/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"agent:use"}}))
	if tok["refresh_token"] != nil || tok["access_token"] == nil {
		t.Errorf("client credentials answer %v, want an access token and no refresh token", tok)
	}
	wantError(t, s.post("/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {issuer.CLIClientID}}), 400, "unauthorized_client")
}

// refreshKeyPrefix is the issue time a refresh token begins with and its
// record's key too: sixteen hexadecimal digits of Unix nanoseconds.
func refreshKeyPrefix(t *testing.T, token string) string {
	t.Helper()
	issued, secret, ok := strings.Cut(token, ".")
	if !ok || len(issued) != 16 || strings.Trim(issued, "0123456789abcdef") != "" || len(secret) != 43 {
		t.Fatalf("refresh token %q is not <16 hex digits>.<43 base64url characters>", token)
	}
	return issued
}

// TestRefreshTokensSortByIssue: the record keys of a chain's refresh
// tokens sort in the order they were issued, so a database adds and finds
// the tokens in use in its index's last pages; and the key is the issue
// time and the token's hash, never the token.
func TestRefreshTokensSortByIssue(t *testing.T) {
	store := state.NewMemory()
	s := start(t, issuer.Options{AutoApprove: true, Store: store})
	tok := s.tokens(nil)["refresh_token"].(string)
	var keys []string
	for range 3 {
		s.advance(time.Minute)
		next := wantOK(t, s.refresh(issuer.CLIClientID, tok))["refresh_token"].(string)
		sum := sha256.Sum256([]byte(next))
		key := refreshKeyPrefix(t, next) + "." + hex.EncodeToString(sum[:])
		keys = append(keys, key)
		if err := store.View(context.Background(), func(tx state.Tx) error {
			_, err := tx.Get("refresh", key)
			return err
		}); err != nil {
			t.Fatalf("refresh record under %s: %v", key, err)
		}
		tok = next
	}
	if !slices.IsSorted(keys) || keys[0] == keys[1] {
		t.Errorf("keys of successive refresh tokens %v do not sort by issue", keys)
	}
	if got := refreshKeyPrefix(t, tok); got != fmt.Sprintf("%016x", epoch.Add(3*time.Minute).UnixNano()) {
		t.Errorf("issue time %s, want the issuer's clock %v", got, epoch.Add(3*time.Minute))
	}
}

// TestRefreshTokenOfAnEarlierVersion: a refresh token issued before tokens
// carried their issue time (a bare random string, its record keyed by its
// hash alone) still refreshes once, and its reuse still revokes the family.
// The records are rewritten here as an earlier agentauth left them.
func TestRefreshTokenOfAnEarlierVersion(t *testing.T) {
	store := state.NewMemory()
	s := start(t, issuer.Options{AutoApprove: true, Store: store, Clients: []issuer.Client{rs}})
	tokens := s.tokens(nil)
	current := tokens["refresh_token"].(string)
	sum := sha256.Sum256([]byte(current))
	newKey := refreshKeyPrefix(t, current) + "." + hex.EncodeToString(sum[:])
	_, legacy, _ := strings.Cut(current, ".") // 43 base64url characters, as tokens were
	sum = sha256.Sum256([]byte(legacy))
	legacyKey := hex.EncodeToString(sum[:])
	err := store.Update(context.Background(), func(tx state.Tx) error {
		rec, err := tx.Get("refresh", newKey)
		if err != nil {
			return err
		}
		var rt struct {
			GrantID string `json:"grant_id"`
		}
		if err := json.Unmarshal(rec, &rt); err != nil || rt.GrantID == "" {
			return fmt.Errorf("refresh record %s: %v", rec, err)
		}
		grant, err := tx.Get("grant", rt.GrantID)
		if err != nil {
			return err
		}
		if !strings.Contains(string(grant), `"refresh":"`+newKey+`"`) {
			return fmt.Errorf("grant %s does not name its refresh token's key", grant)
		}
		grant = []byte(strings.Replace(string(grant), newKey, legacyKey, 1))
		far := epoch.Add(24 * time.Hour)
		if err := tx.Delete("refresh", newKey); err != nil {
			return err
		}
		if err := tx.Put("refresh", legacyKey, rec, far); err != nil {
			return err
		}
		return tx.Put("grant", rt.GrantID, grant, far)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, s.refresh(issuer.CLIClientID, current), 400, "invalid_grant") // its new form is not stored
	next := wantOK(t, s.refresh(issuer.CLIClientID, legacy))
	refreshKeyPrefix(t, next["refresh_token"].(string))
	wantError(t, s.refresh(issuer.CLIClientID, legacy), 400, "invalid_grant")
	if s.introspect(next["access_token"].(string))["active"] != false {
		t.Errorf("reusing the earlier version's token did not revoke its family")
	}
}
