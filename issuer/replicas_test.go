package issuer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	iss.OnRevoke(func(jtis []string) {
		select { // the replica's own revocations come back from the log too
		case r.revoked <- jtis:
		default:
		}
	})
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

// The revocation bound the replica tests hold a replica to: it reads the
// log every reconcileEvery, and refuses requests (serve's
// --revocation-staleness) once it has not read it for staleness.
const (
	reconcileEvery = 300 * time.Millisecond
	staleness      = 3 * time.Second
)

// follower is a replica as serve wires it: its issuer's OnRevoke is the
// set of ids its host refuses, and past staleness it refuses everything.
type follower struct {
	st *state.Postgres
	mu sync.Mutex
	// got holds the ids the replica refuses.
	got map[string]bool
}

func newFollower(t *testing.T, db string) (*replica, *follower) {
	t.Helper()
	st, err := state.OpenPostgresOptions(context.Background(), db, state.PostgresOptions{ReconcileEvery: reconcileEvery})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	iss, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:1", AutoApprove: true, Store: st, Clients: []issuer.Client{rs}})
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{st: st, got: map[string]bool{}}
	iss.OnRevoke(func(ids []string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, id := range ids {
			f.got[id] = true
		}
	})
	return &replica{iss: iss, revoked: make(chan []string, 1000)}, f
}

// enforced reports whether the replica refuses id: it knows of its
// revocation, or (unless mustKnow) it refuses every request.
func (f *follower) enforced(id string, mustKnow bool) bool {
	f.mu.Lock()
	known := f.got[id]
	f.mu.Unlock()
	return known || !mustKnow && f.st.Stale(staleness) != nil
}

// ack is a revocation the revocation endpoint acknowledged (200): id is
// what the replicas must refuse (the access token's jti, or the family's
// sid for a refresh token).
type ack struct {
	id string
	at time.Time
}

// watchBound checks each acknowledged revocation sent on acks against f,
// polling until it is enforced or staleness has passed since its
// acknowledgement; it returns the number never enforced within the bound
// once acks is closed. With mustKnow, refusing every request does not
// count: the database answers, and the replica must know.
func watchBound(f *follower, acks <-chan ack, mustKnow bool) <-chan int {
	out := make(chan int, 1)
	go func() {
		var wg sync.WaitGroup
		var missed atomic.Int64
		for a := range acks {
			wg.Go(func() {
				deadline := a.at.Add(staleness)
				for !f.enforced(a.id, mustKnow) {
					if time.Now().After(deadline) {
						missed.Add(1)
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		out <- int(missed.Load())
	}()
	return out
}

// claim reads a claim of a JWT without verifying it.
func claim(t *testing.T, jwt, name string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	s, _ := m[name].(string)
	return s
}

// revokeOne revokes tok's access token (even k) or its refresh token (odd
// k, the whole family) at r, and returns the id to refuse; ok is false
// when r did not acknowledge it.
func revokeOne(t *testing.T, r *replica, tok map[string]any, k int) (string, bool) {
	at := tok["access_token"].(string)
	form := url.Values{"token": {at}, "client_id": {issuer.CLIClientID}}
	id := claim(t, at, "jti")
	if k%2 == 1 {
		form.Set("token", tok["refresh_token"].(string))
		id = claim(t, at, "sid")
	}
	status, _ := r.post("/revoke", form)
	return id, status == http.StatusOK
}

// TestReplicaListenerKilled: revocations published while a replica's
// LISTEN connection is killed (pg_terminate_backend), so that their
// notifications are lost, are still enforced on it within the bound.
func TestReplicaListenerKilled(t *testing.T) {
	db := statetest.Postgres(t)
	a := newReplica(t, db)
	_, bf := newFollower(t, db)
	admin, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var toks []map[string]any
	for range 40 {
		toks = append(toks, a.login(t))
	}
	acks := make(chan ack)
	result := watchBound(bf, acks, true)
	killed := 0
	for k, tok := range toks {
		if k%4 == 0 {
			var n int
			err := admin.QueryRow(context.Background(),
				`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = 'LISTEN agentauth_revoked' AND pid <> pg_backend_pid()`).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			killed += n
		}
		id, ok := revokeOne(t, a, tok, k)
		if !ok {
			t.Fatalf("revocation %d was refused", k)
		}
		acks <- ack{id: id, at: time.Now()}
	}
	close(acks)
	if killed == 0 {
		t.Fatal("no LISTEN backend was killed")
	}
	if missed := <-result; missed != 0 {
		t.Errorf("%d of %d acknowledged revocations were not enforced on the other replica within %s (%d LISTEN backends killed)", missed, len(toks), staleness, killed)
	}
}

// TestReplicaPostgresRestart: PostgreSQL restarts under a stream of
// revocations; every revocation acknowledged before, during or after is
// enforced on the other replica within the bound.
func TestReplicaPostgresRestart(t *testing.T) {
	srv := statetest.Started(t)
	a := newReplica(t, srv.URL)
	_, bf := newFollower(t, srv.URL)
	var toks []map[string]any
	for range 150 {
		toks = append(toks, a.login(t))
	}
	acks := make(chan ack)
	result := watchBound(bf, acks, false)
	var mu sync.Mutex
	acked, failed := 0, 0
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return acked, failed
	}
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		defer close(acks)
		for k := 0; k < len(toks); {
			select {
			case <-stop:
				return
			default:
			}
			id, ok := revokeOne(t, a, toks[k], k)
			mu.Lock()
			if ok {
				acked++
			} else {
				failed++
			}
			mu.Unlock()
			if !ok { // the same token again, once the database is back
				time.Sleep(20 * time.Millisecond)
				continue
			}
			acks <- ack{id: id, at: time.Now()}
			k++
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("10 revocations before the restart", func() bool { n, _ := counts(); return n >= 10 })
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	waitFor("revocations refused while PostgreSQL is down", func() bool { _, n := counts(); return n >= 3 })
	before, _ := counts()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor("10 revocations after the restart", func() bool { n, _ := counts(); return n >= before+10 })
	close(stop)
	<-streamed
	n, f := counts()
	if missed := <-result; missed != 0 {
		t.Errorf("%d of %d acknowledged revocations were not enforced on the other replica within %s (%d refused during the restart)", missed, n, staleness, f)
	}
	// With the database back, the replica knows every one of them (it
	// does not merely refuse everything) within the bound.
	deadline := time.Now().Add(staleness)
	for {
		bf.mu.Lock()
		known := len(bf.got)
		bf.mu.Unlock()
		if known >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica knows %d of %d revocations %s after the last", known, n, staleness)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d revocations acknowledged, %d refused during the restart", n, f)
}
