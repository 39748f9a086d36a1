package issuer_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
)

// A client asking for client credentials tokens in a loop reaches its
// bound of live tokens and is refused with 429 and a Retry-After, while
// another client is still served; once its oldest tokens have expired it
// is served again. The grants keep no record in the store, yet a revoked
// token is reported inactive.
func TestClientCredentialsBoundPerClient(t *testing.T) {
	const bound = 5
	for name, open := range withMemory(stores(t)) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			s := start(t, issuer.Options{Store: st, Clients: []issuer.Client{rs},
				Limits: issuer.Limits{ClientTokens: bounded.Limits{PerOwner: bound}}})
			grant := func(id, secret string) reply {
				return s.post("/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}})
			}
			register := func() (string, string) {
				reg := s.postJSON("/register", `{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}`)
				return reg.str(t, "client_id"), reg.str(t, "client_secret")
			}
			a, aSecret := register()
			b, bSecret := register()
			var first string
			issued := 0
			for range 10 * bound {
				r := grant(a, aSecret)
				if r.status != http.StatusOK {
					wantFull(t, r, http.StatusTooManyRequests)
					break
				}
				tok := wantOK(t, r)
				if first == "" {
					first = tok["access_token"].(string)
				}
				issued++
			}
			if issued != bound {
				t.Fatalf("client a was issued %d tokens before a refusal, want %d", issued, bound)
			}
			wantFull(t, grant(a, aSecret), http.StatusTooManyRequests)
			wantOK(t, grant(b, bSecret))

			if n := records(t, st, "grant"); n != 0 {
				t.Errorf("%d grant records after %d client credentials grants, want 0", n, bound+1)
			}
			if !s.introspect(first)["active"].(bool) {
				t.Fatal("the first token is not active")
			}
			if r := s.post("/revoke", url.Values{"token": {first}, "client_id": {a}, "client_secret": {aSecret}}); r.status != http.StatusOK {
				t.Fatalf("revoke: status %d, body %s", r.status, r.body)
			}
			if s.introspect(first)["active"].(bool) {
				t.Error("the revoked token is still active")
			}

			r := grant(a, aSecret)
			retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
			s.advance(issuer.DefaultTokenTTL + issuer.DefaultTokenTTL/16)
			if retry > int((issuer.DefaultTokenTTL + issuer.DefaultTokenTTL/16).Seconds()) {
				t.Errorf("Retry-After %d s, longer than a token lives", retry)
			}
			wantOK(t, grant(a, aSecret))
		})
	}
}

// A grant refused for another reason (a resource that is not an absolute
// URI)
// does not count against the client's live tokens.
func TestClientCredentialsRefusedGrantNotCounted(t *testing.T) {
	s := start(t, issuer.Options{Limits: issuer.Limits{ClientTokens: bounded.Limits{PerOwner: 2}}})
	reg := s.postJSON("/register", `{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}`)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {reg.str(t, "client_id")}, "client_secret": {reg.str(t, "client_secret")}}
	bad := url.Values{"resource": {"not-a-uri"}}
	for k, v := range form {
		bad[k] = v
	}
	for range 5 {
		wantError(t, s.post("/token", bad), http.StatusBadRequest, "invalid_target")
	}
	wantOK(t, s.post("/token", form))
	wantOK(t, s.post("/token", form))
	wantFull(t, s.post("/token", form), http.StatusTooManyRequests)
}

// withMemory adds the in-memory store to stores.
func withMemory(m map[string]func(t *testing.T) state.Store) map[string]func(t *testing.T) state.Store {
	m["memory"] = func(*testing.T) state.Store { return state.NewMemory() }
	return m
}

// records counts the records of kind in st.
func records(t *testing.T, st state.Store, kind state.Kind) int {
	t.Helper()
	var n int
	err := st.View(context.Background(), func(tx state.Tx) error {
		recs, err := tx.List(kind)
		n = len(recs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
