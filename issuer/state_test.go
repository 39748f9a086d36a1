package issuer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
)

// restartable is a testServer whose Issuer can be replaced by a new one on
// the same origin and Store: a restart of serve.
type restartable struct {
	*testServer
	opts    issuer.Options
	current atomic.Pointer[issuer.Issuer]
}

func startRestartable(t *testing.T, opts issuer.Options) *restartable {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	opts.Issuer = "http://" + srv.Listener.Addr().String()
	clock := &fakeClock{now: epoch}
	opts.Now = clock.Now
	r := &restartable{opts: opts}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.current.Load().Handler().ServeHTTP(w, req)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	r.testServer = &testServer{t: t, url: srv.URL, clock: clock, client: srv.Client()}
	r.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if err := r.restart(); err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// restart replaces the Issuer with a new one on the same Store.
func (r *restartable) restart() error {
	iss, err := issuer.New(r.opts)
	if err != nil {
		return err
	}
	r.iss = iss
	iss.OnRevoke(func(jtis []string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.revoked = append(r.revoked, jtis...)
	})
	r.current.Store(iss)
	return nil
}

// kid returns the key id a JWT names.
func kid(t *testing.T, jwt string) string {
	t.Helper()
	h, err := base64.RawURLEncoding.DecodeString(strings.Split(jwt, ".")[0])
	if err != nil {
		t.Fatalf("not a JWT: %v", err)
	}
	var header struct {
		Kid string `json:"kid"`
	}
	json.Unmarshal(h, &header)
	return header.Kid
}

func (s *testServer) jwksKids() []string {
	s.t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(s.get("/jwks.json").body, &set); err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.Kid)
	}
	return out
}

// TestKeyRotation: a key signs for KeyRotation, then a new one takes
// over; the old one stays in the JWKS, and its tokens stay valid (and
// revocable), until they have expired; then it is dropped.
func TestKeyRotation(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, TokenTTL: time.Hour, KeyRotation: 2 * time.Hour, Clients: []issuer.Client{rs}})
	first := s.tokens(nil)["access_token"].(string)
	k1 := kid(t, first)
	if got := s.jwksKids(); len(got) != 1 || got[0] != k1 {
		t.Fatalf("JWKS kids %v, want [%s]", got, k1)
	}
	s.advance(time.Hour + 59*time.Minute)
	old := s.tokens(nil)["access_token"].(string)
	if kid(t, old) != k1 {
		t.Fatalf("a token before the rotation names kid %s, want %s", kid(t, old), k1)
	}
	s.advance(2 * time.Minute) // past the rotation
	fresh := s.tokens(nil)
	k2 := kid(t, fresh["access_token"].(string))
	if k2 == k1 {
		t.Fatalf("no new key after KeyRotation: both tokens name %s", k1)
	}
	if got := s.jwksKids(); !sameSet(got, []string{k1, k2}) {
		t.Errorf("JWKS kids %v after the rotation, want both %s and %s", got, k1, k2)
	}
	if in := s.introspect(old); in["active"] != true {
		t.Errorf("a token signed by the previous key is refused before it expires: %v", in)
	}
	s.takeRevoked()
	if r := s.post("/revoke", url.Values{"token": {old}, "client_id": {issuer.CLIClientID}}); r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if got := s.takeRevoked(); len(got) != 1 {
		t.Errorf("revoking a token of the previous key revoked %v, want its jti", got)
	}
	// Past the old key's last token (rotation + TokenTTL + the reload
	// margin): only the new key is published.
	s.advance(time.Hour + time.Minute)
	if got := s.jwksKids(); len(got) != 1 || got[0] != k2 {
		t.Errorf("JWKS kids %v once the old key's tokens expired, want [%s]", got, k2)
	}
}

// TestRestartKeepsState: a new Issuer on the same Store (serve restarted
// on the same --data-dir) accepts the tokens, refresh tokens and
// registrations of the old one, and still detects a refresh token reuse
// and a code replay.
func TestRestartKeepsState(t *testing.T) {
	st, err := state.OpenSQLite(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := startRestartable(t, issuer.Options{AutoApprove: true, Store: st, Clients: []issuer.Client{rs}})
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	tok := wantOK(t, s.exchange(a, code))
	rotated := wantOK(t, s.refresh(issuer.CLIClientID, tok["refresh_token"].(string)))
	reg := s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["authorization_code","refresh_token"]}`)
	if reg.status != http.StatusCreated {
		t.Fatalf("register: %d %s", reg.status, reg.body)
	}
	clientID, secret := reg.str(t, "client_id"), reg.str(t, "client_secret")

	if err := s.restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if in := s.introspect(rotated["access_token"].(string)); in["active"] != true {
		t.Errorf("an access token from before the restart is inactive: %v", in)
	}
	wantOK(t, s.refresh(issuer.CLIClientID, rotated["refresh_token"].(string)))
	wantOK(t, s.post("/introspect", url.Values{"token": {rotated["access_token"].(string)}}, clientID, secret))
	s.takeRevoked()
	wantError(t, s.refresh(issuer.CLIClientID, tok["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
	if got := s.takeRevoked(); len(got) == 0 {
		t.Error("a refresh token rotated before the restart was reused without revoking its family")
	}
	b := newAuthz(issuer.CLIClientID, cliRedirect)
	code = s.code(b)
	wantOK(t, s.exchange(b, code))
	if err := s.restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	wantError(t, s.exchange(b, code), http.StatusBadRequest, "invalid_grant")
	if got := s.takeRevoked(); len(got) != 1 {
		t.Errorf("a code replayed after a restart revoked %v, want its access token", got)
	}
	revoked, err := s.iss.Revoked(context.Background())
	if err != nil || len(revoked) < 2 {
		t.Errorf("Revoked = %v, %v; want the revoked tokens that have not expired", revoked, err)
	}
}

// TestStateKey: with a state key the signing keys are stored sealed; an
// issuer without the key, or with another, refuses to start and says
// which flag fixes it.
func TestStateKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := state.OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := make([]byte, issuer.StateKeySize)
	key[0] = 1
	opts := issuer.Options{Issuer: "http://127.0.0.1:1", Store: st, StateKey: key}
	if _, err := issuer.New(opts); err != nil {
		t.Fatal(err)
	}
	st.View(ctx, func(tx state.Tx) error {
		recs, err := tx.List("key")
		if err != nil || len(recs) != 1 || strings.Contains(string(recs[0].Value), "pkcs8") || !strings.Contains(string(recs[0].Value), "sealed") {
			t.Errorf("stored key %s, %v: want it sealed", recs, err)
		}
		return nil
	})
	if _, err := issuer.New(opts); err != nil {
		t.Errorf("the same key cannot open the sealed key: %v", err)
	}
	opts.StateKey = nil
	if _, err := issuer.New(opts); err == nil || !strings.Contains(err.Error(), "--state-key-file") {
		t.Errorf("New without the state key: %v, want a refusal naming --state-key-file", err)
	}
	opts.StateKey = make([]byte, issuer.StateKeySize)
	if _, err := issuer.New(opts); err == nil || !strings.Contains(err.Error(), "--state-key-file") {
		t.Errorf("New with another state key: %v, want a refusal naming --state-key-file", err)
	}
}

// TestSweep: expired records are swept (at most maxSweep per pass, see
// state's TestStore for the bound), and live ones are kept.
func TestSweep(t *testing.T) {
	st := state.NewMemory()
	s := start(t, issuer.Options{AutoApprove: true, Store: st})
	for range 5 {
		a := newAuthz(issuer.CLIClientID, cliRedirect)
		s.code(a) // never redeemed
	}
	count := func(kind state.Kind) int {
		var n int
		st.View(context.Background(), func(tx state.Tx) error { n, _ = tx.Count(kind, math.MaxInt); return nil })
		return n
	}
	codes := bounded.Kind("code", issuer.CLIClientID) // codes are kept per client
	if n := count(codes); n != 5 {
		t.Fatalf("%d codes stored, want 5", n)
	}
	s.advance(time.Hour)
	s.tokens(nil) // a request sweeps when the last sweep is old enough
	if n := count(codes); n != 0 {
		t.Errorf("%d expired codes left after a sweep, want 0", n)
	}
	if n := count("key"); n != 1 {
		t.Errorf("%d signing keys after a sweep, want the live one", n)
	}
}

// TestFamilyRevokedAsOne: refreshing revokes nothing and the family's
// record does not grow with its access tokens; revoking the family puts
// one id in the revocation log (the sid its access tokens carry), which
// makes its first and last access tokens inactive.
func TestFamilyRevokedAsOne(t *testing.T) {
	st := state.NewMemory()
	s := start(t, issuer.Options{AutoApprove: true, Store: st, Clients: []issuer.Client{rs}})
	tok := s.tokens(nil)
	first, rt := tok["access_token"].(string), tok["refresh_token"].(string)
	grantSize := func() int {
		var n int
		st.View(context.Background(), func(tx state.Tx) error {
			recs, err := tx.List("grant")
			for _, r := range recs {
				n += len(r.Value)
			}
			return err
		})
		return n
	}
	size := grantSize()
	var last string
	for range 200 {
		tok = wantOK(t, s.refresh(issuer.CLIClientID, rt))
		rt, last = tok["refresh_token"].(string), tok["access_token"].(string)
	}
	if got := s.takeRevoked(); len(got) != 0 {
		t.Errorf("200 refreshes revoked %v, want nothing", got)
	}
	if n := grantSize(); n > size+64 {
		t.Errorf("the family's record grew from %d to %d bytes over 200 refreshes", size, n)
	}
	if in := s.introspect(first); in["active"] != true {
		t.Fatalf("the family's first access token is inactive before any revocation: %v", in)
	}
	if r := s.revoke(rt); r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	got := s.takeRevoked()
	if len(got) != 1 {
		t.Fatalf("revoking the family revoked %v, want its one id", got)
	}
	for _, at := range []string{first, last} {
		if in := s.introspect(at); in["active"] != false {
			t.Errorf("an access token of the revoked family is active: %v", in)
		}
	}
	revoked, err := s.iss.Revoked(context.Background())
	if _, ok := revoked[got[0]]; !ok || err != nil {
		t.Errorf("Revoked = %v, %v; want the family's id %s", revoked, err, got[0])
	}
}

// TestNoSecretsAtRest: no code, refresh token, access token, device or
// user code, page nonce or client secret is stored in the clear; the
// signing key is stored sealed when a state key is given.
func TestNoSecretsAtRest(t *testing.T) {
	st := state.NewMemory()
	key := make([]byte, issuer.StateKeySize)
	s := start(t, issuer.Options{Store: st, StateKey: key})
	var secrets []string
	// A code, and the tokens it brings, through the consent page.
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	page := s.authorize(a)
	nonce := pageNonce(t, page)
	q := s.callback(s.post("/consent", url.Values{"nonce": {nonce}, "decision": {"approve"}, "subject": {"alice"}}), a)
	tok := wantOK(t, s.exchange(a, q.Get("code")))
	secrets = append(secrets, nonce, q.Get("code"), tok["access_token"].(string), tok["refresh_token"].(string))
	// A pending device authorization and its page.
	d := wantOK(t, s.post("/device_authorization", url.Values{"client_id": {issuer.CLIClientID}}))
	devicePage := s.get("/device?user_code=" + url.QueryEscape(d["user_code"].(string)))
	secrets = append(secrets, d["device_code"].(string), strings.ReplaceAll(d["user_code"].(string), "-", ""), pageNonce(t, devicePage))
	// A confidential client.
	reg := s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"]}`)
	secrets = append(secrets, reg.str(t, "client_secret"))

	kinds := []state.Kind{"client", "code", "grant", "refresh", "revoked", "device", "user_code", "consent", "key"}
	seen := 0
	st.View(context.Background(), func(tx state.Tx) error {
		for _, k := range kinds {
			recs, _ := tx.List(k)
			for _, r := range recs {
				seen++
				for _, sec := range secrets {
					if strings.Contains(r.Key, sec) || strings.Contains(string(r.Value), sec) {
						t.Errorf("record %s/%s holds a secret in the clear", k, r.Key)
					}
				}
				if k == "key" && (strings.Contains(string(r.Value), "pkcs8") || !strings.Contains(string(r.Value), "sealed")) {
					t.Errorf("signing key %s is not sealed", r.Key)
				}
			}
		}
		return nil
	})
	if seen < 7 {
		t.Errorf("only %d records found: the test does not see the issuer's kinds", seen)
	}
}
