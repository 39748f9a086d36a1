package issuer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/state/statetest"
)

// replica is one issuer process on a shared PostgreSQL store.
type replica struct {
	iss     *issuer.Issuer
	revoked chan []string
}

func newReplica(t *testing.T, db string) *replica {
	t.Helper()
	st, err := state.OpenPostgres(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	iss, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:1", AutoApprove: true, Store: st, Clients: []issuer.Client{rs}})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{iss: iss, revoked: make(chan []string, 10)}
	iss.OnRevoke(func(jtis []string) { r.revoked <- jtis })
	return r
}

func (r *replica) post(path string, form url.Values, basic ...string) (int, map[string]any) {
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	r.iss.Handler().ServeHTTP(w, req)
	var m map[string]any
	json.Unmarshal(w.Body.Bytes(), &m)
	return w.Code, m
}

// login runs an authorization code grant on r.
func (r *replica) login(t *testing.T) map[string]any {
	t.Helper()
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	w := httptest.NewRecorder()
	r.iss.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/authorize?"+a.query.Encode(), nil))
	loc, _ := url.Parse(w.Header().Get("Location"))
	status, tok := r.post("/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {cliRedirect}, "code_verifier": {a.verifier}, "client_id": {issuer.CLIClientID}})
	if status != http.StatusOK {
		t.Fatalf("login: %d %v", status, tok)
	}
	return tok
}

// TestReplicasSharePostgres: two issuers on one PostgreSQL database (two
// serve replicas) share signing keys, tokens and refresh families; of two
// concurrent uses of one refresh token on the two replicas exactly one
// rotates and the other is reuse, which revokes the family; and a
// revocation on one reaches the other's OnRevoke.
func TestReplicasSharePostgres(t *testing.T) {
	db := statetest.Postgres(t)
	a, b := newReplica(t, db), newReplica(t, db)
	tok := a.login(t)
	if status, in := b.post("/introspect", url.Values{"token": {tok["access_token"].(string)}}, "rs", "rs-secret"); status != http.StatusOK || in["active"] != true {
		t.Fatalf("replica B does not know replica A's token: %d %v", status, in)
	}

	rt := tok["refresh_token"].(string)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for k, r := range []*replica{a, b} {
		wg.Go(func() {
			statuses[k], _ = r.post("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {issuer.CLIClientID}})
		})
	}
	wg.Wait()
	if !(statuses[0] == http.StatusOK && statuses[1] == http.StatusBadRequest) && !(statuses[0] == http.StatusBadRequest && statuses[1] == http.StatusOK) {
		t.Fatalf("two concurrent uses of one refresh token on two replicas answered %v, want one 200 and one 400 (reuse)", statuses)
	}
	// The reuse revoked the family on one replica; the other hears of it.
	for _, r := range []*replica{a, b} {
		select {
		case jtis := <-r.revoked:
			if len(jtis) == 0 {
				t.Error("an empty revocation")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a replica was not told of the family's revocation")
		}
	}
	if _, in := a.post("/introspect", url.Values{"token": {tok["access_token"].(string)}}, "rs", "rs-secret"); in["active"] != false {
		t.Errorf("the family's first access token is active after the reuse: %v", in)
	}
}
