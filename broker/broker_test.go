package broker

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/state"
)

// fakeAS is an upstream token endpoint: it checks the PKCE verifier
// against the challenge the authorization request carried, and counts the
// refreshes it answers.
type fakeAS struct {
	srv       *httptest.Server
	mu        sync.Mutex
	challenge map[string]string // code → challenge
	n         int
	refreshes atomic.Int32
	expiresIn int
	slow      chan struct{} // when set, a refresh waits for it
}

func newFakeAS(t *testing.T) *fakeAS {
	as := &fakeAS{challenge: map[string]string{}, expiresIn: 3600}
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		as.mu.Lock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			want, ok := as.challenge[r.PostForm.Get("code")]
			delete(as.challenge, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || want != base64.RawURLEncoding.EncodeToString(sum[:]) {
				as.mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
		case "refresh_token":
			as.refreshes.Add(1)
			if as.slow != nil {
				as.mu.Unlock()
				<-as.slow
				as.mu.Lock()
			}
		}
		as.n++
		n, exp := as.n, as.expiresIn
		as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"at-%d","token_type":"Bearer","expires_in":%d,"refresh_token":"rt-%d"}`, n, exp, n)
	}))
	t.Cleanup(as.srv.Close)
	return as
}

// authorize plays the upstream's authorization endpoint for a redirect
// from Start: it records the challenge and returns the callback query.
func (as *fakeAS) authorize(t *testing.T, redirect string) url.Values {
	t.Helper()
	u, err := url.Parse(redirect)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	code := fmt.Sprintf("code-%d", time.Now().UnixNano())
	as.mu.Lock()
	as.challenge[code] = q.Get("code_challenge")
	as.mu.Unlock()
	return url.Values{"code": {code}, "state": {q.Get("state")}}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newBroker(t *testing.T, as *fakeAS, st state.Store, key []byte, c *clock, ids ...string) *Broker {
	t.Helper()
	if len(ids) == 0 {
		ids = []string{"rally"}
	}
	var ups []Upstream
	for _, id := range ids {
		ups = append(ups, Upstream{ID: id, Label: strings.ToUpper(id), Issuer: as.srv.URL, AuthorizationEndpoint: as.srv.URL + "/authorize",
			TokenEndpoint: as.srv.URL + "/token", Client: flows.Client{ID: "serve"}, PKCE: true})
	}
	b, err := New(context.Background(), Options{Store: st, Upstreams: ups, Origin: "http://127.0.0.1:7777", StateLifetime: time.Minute,
		Key: key, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// start runs one sign-in of subject's session (client cli) to rally and returns the callback query
// and the browser's cookie, without completing it.
func start(t *testing.T, b *Broker, as *fakeAS, subject string) (url.Values, func(string) string) {
	t.Helper()
	ctx := context.Background()
	a, err := b.Ask(ctx, Principal{Subject: subject, ClientID: "cli"}, "rally")
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Start(ctx, a.ElicitationID, "")
	if err != nil {
		t.Fatal(err)
	}
	q := as.authorize(t, st.Redirect)
	return q, func(name string) string {
		if name == st.CookieName {
			return st.CookieValue
		}
		return ""
	}
}

func TestSignInAndIsolation(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	alice, bob := b.Session("alice", "cli"), b.Session("bob", "cli")
	if alice == bob || alice != b.Session("alice", "cli") || alice == b.Session("alice", "other") {
		t.Fatalf("session ids: alice %q bob %q", alice, bob)
	}
	if strings.Contains(alice, "alice") {
		t.Fatalf("the session id %q shows the subject", alice)
	}
	if _, err := b.Token(ctx, alice, "rally"); !errors.Is(err, ErrSignInNeeded) {
		t.Fatalf("Token before sign-in: %v, want ErrSignInNeeded", err)
	}
	q, cookie := start(t, b, as, "alice")
	done, err := b.Callback(ctx, q, cookie)
	if err != nil {
		t.Fatal(err)
	}
	if done.Session != alice {
		t.Fatalf("completed session %q, want alice's", done.Session)
	}
	if tok, err := b.Token(ctx, alice, "rally"); err != nil || tok != "at-1" {
		t.Fatalf("alice's token: %q, %v", tok, err)
	}
	if _, err := b.Token(ctx, bob, "rally"); !errors.Is(err, ErrSignInNeeded) {
		t.Fatalf("bob's token after alice's sign-in: %v, want ErrSignInNeeded", err)
	}
	// The state is single use.
	if _, err := b.Callback(ctx, q, cookie); err == nil || !strings.Contains(err.Error(), "unknown or was already completed") {
		t.Fatalf("second callback: %v", err)
	}
}

func TestStartIsSingleUseAndExpires(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	a, err := b.Ask(ctx, Principal{Subject: "alice", ClientID: "cli"}, "rally")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := b.Ask(ctx, Principal{Subject: "alice", ClientID: "cli"}, "rally"); again.ElicitationID != a.ElicitationID {
		t.Fatalf("a second ask while the first is pending handed out %q, want %q", again.ElicitationID, a.ElicitationID)
	}
	if strings.Contains(a.URL, "state=") || !strings.HasPrefix(a.URL, "http://127.0.0.1:7777/auth/start?id=") {
		t.Fatalf("sign-in URL %q", a.URL)
	}
	if _, err := b.Start(ctx, a.ElicitationID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(ctx, a.ElicitationID, ""); !errors.Is(err, ErrUnknownSignIn) {
		t.Fatalf("second start: %v, want ErrUnknownSignIn", err)
	}
	// A link opened after the lifetime.
	a, _ = b.Ask(ctx, Principal{Subject: "alice", ClientID: "cli"}, "rally")
	c.add(2 * time.Minute)
	if _, err := b.Start(ctx, a.ElicitationID, ""); !errors.Is(err, ErrExpired) {
		t.Fatalf("start after the lifetime: %v, want ErrExpired", err)
	}
	// A callback after the lifetime.
	q, cookie := start(t, b, as, "alice")
	c.add(2 * time.Minute)
	if _, err := b.Callback(ctx, q, cookie); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("callback after the lifetime: %v", err)
	}
}

func TestCallbackRefusals(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	alice := b.Session("alice", "cli")
	for _, tc := range []struct {
		name   string
		change func(q url.Values, cookie func(string) string) (url.Values, func(string) string)
		want   string
	}{
		{"no cookie", func(q url.Values, _ func(string) string) (url.Values, func(string) string) {
			return q, func(string) string { return "" }
		}, "started in another browser"},
		{"another session's cookie", func(q url.Values, _ func(string) string) (url.Values, func(string) string) {
			_, other := start(t, b, as, "bob")
			return q, func(name string) string {
				for _, n := range []string{name} {
					if v := other(n); v != "" {
						return v
					}
				}
				return "forged"
			}
		}, "started in another browser"},
		{"iss of another server", func(q url.Values, cookie func(string) string) (url.Values, func(string) string) {
			q.Set("iss", "https://evil.example")
			return q, cookie
		}, "another authorization server"},
		{"error answer", func(q url.Values, cookie func(string) string) (url.Values, func(string) string) {
			q.Del("code")
			q.Set("error", "access_denied")
			return q, cookie
		}, "declined the sign-in"},
		{"unknown state", func(q url.Values, cookie func(string) string) (url.Values, func(string) string) {
			q.Set("state", "made-up")
			return q, cookie
		}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, cookie := start(t, b, as, "alice")
			q2, cookie2 := tc.change(q, cookie)
			_, err := b.Callback(ctx, q2, cookie2)
			var ce *CallbackError
			if !errors.As(err, &ce) || !strings.Contains(ce.Message, tc.want) {
				t.Fatalf("callback: %v, want a refusal with %q", err, tc.want)
			}
			if _, err := b.Token(ctx, alice, "rally"); !errors.Is(err, ErrSignInNeeded) {
				t.Fatalf("a refused callback stored a token: %v", err)
			}
		})
	}
}

// A callback without the browser's cookie (anyone who saw the link) is
// refused and does not spend the state: the user's own browser then
// completes the sign-in.
func TestCookielessCallbackDoesNotCancelTheSignIn(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	b := newBroker(t, as, state.NewMemory(), nil, &clock{t: time.Now()})
	alice := b.Session("alice", "cli")
	q, cookie := start(t, b, as, "alice")
	for _, forged := range []func(string) string{func(string) string { return "" }, func(string) string { return "forged" }} {
		if _, err := b.Callback(ctx, q, forged); err == nil || !strings.Contains(err.Error(), "started in another browser") {
			t.Fatalf("callback without the cookie: %v, want a refusal", err)
		}
	}
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatalf("the user's browser after a cookieless callback: %v", err)
	}
	if _, err := b.Token(ctx, alice, "rally"); err != nil {
		t.Fatalf("no token after the sign-in completed: %v", err)
	}
}

func TestIssRequired(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	b.upstreams["rally"].IssRequired = true
	q, cookie := start(t, b, as, "alice")
	if _, err := b.Callback(ctx, q, cookie); err == nil {
		t.Fatal("a callback without iss from an upstream that sends it was accepted")
	}
	q, cookie = start(t, b, as, "alice")
	q.Set("iss", as.srv.URL)
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatalf("a callback with the right iss: %v", err)
	}
}

func TestRefreshSingleFlight(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	as.expiresIn = 10 // within refreshMargin: every use refreshes
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	sid := b.Session("alice", "cli")
	q, cookie := start(t, b, as, "alice")
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatal(err)
	}
	as.expiresIn = 3600
	as.slow = make(chan struct{})
	var wg sync.WaitGroup
	toks := make([]string, 8)
	errs := make([]error, 8)
	for i := range toks {
		wg.Go(func() { toks[i], errs[i] = b.Token(ctx, sid, "rally") })
	}
	for as.refreshes.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(as.slow)
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i] != "at-2" {
			t.Fatalf("caller %d: %q, %v; want the one refreshed token at-2", i, toks[i], errs[i])
		}
	}
	if n := as.refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
}

func TestBounds(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	var ids []string
	for i := range MaxPendingPerSession + 1 {
		ids = append(ids, fmt.Sprintf("up%d", i))
	}
	st := state.NewMemory()
	b := newBroker(t, as, st, nil, c, ids...)
	for i, id := range ids {
		_, err := b.Ask(ctx, Principal{Subject: "alice", ClientID: "cli"}, id)
		if i < MaxPendingPerSession && err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
		if i == MaxPendingPerSession && !errors.Is(err, ErrTooManyPending) {
			t.Fatalf("ask %d: %v, want ErrTooManyPending", i, err)
		}
	}
	// Overall: fill the store with other sessions' pending sign-ins.
	st.Update(ctx, func(tx state.Tx) error {
		for i := range MaxPending {
			raw, _ := json.Marshal(pendingRecord{Session: fmt.Sprint("s", i), Upstream: "up0", Expires: c.now().Add(time.Minute)})
			tx.Put(kindPending, fmt.Sprint("id", i), raw, c.now().Add(time.Minute))
		}
		return nil
	})
	if _, err := b.Ask(ctx, Principal{Subject: "carol", ClientID: "cli"}, "up0"); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("ask past MaxPending: %v, want ErrTooManyPending", err)
	}
	// Once they expire, asking works again.
	c.add(2 * time.Minute)
	for range MaxPending / maxSweep {
		b.Ask(ctx, Principal{Subject: "carol", ClientID: "cli"}, "up0")
	}
	if _, err := b.Ask(ctx, Principal{Subject: "carol", ClientID: "cli"}, "up0"); err != nil {
		t.Fatalf("ask after expiry: %v", err)
	}
}

func TestTokensSealedWithKey(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	st := state.NewMemory()
	key := make([]byte, 32)
	b := newBroker(t, as, st, key, c)
	sid := b.Session("alice", "cli")
	q, cookie := start(t, b, as, "alice")
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	st.View(ctx, func(tx state.Tx) error { raw, _ = tx.Get(kindToken, tokenKey(sid, "rally")); return nil })
	if strings.Contains(string(raw), "at-1") || strings.Contains(string(raw), "rt-1") {
		t.Fatalf("the stored record shows the tokens: %q", raw)
	}
	// The same store, restarted: the same session id, the same token.
	b2 := newBroker(t, as, st, key, c)
	if b2.Session("alice", "cli") != sid {
		t.Fatal("the session id changed across a restart")
	}
	if tok, err := b2.Token(ctx, sid, "rally"); err != nil || tok != "at-1" {
		t.Fatalf("token after restart: %q, %v", tok, err)
	}
	// Without the key it cannot be read, and says how to fix it.
	b3 := newBroker(t, as, st, nil, c)
	if _, err := b3.Token(ctx, sid, "rally"); err == nil || !strings.Contains(err.Error(), "--state-key-file") {
		t.Fatalf("token without the key: %v", err)
	}
}

func TestPendingAndWait(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	c := &clock{t: time.Now()}
	b := newBroker(t, as, state.NewMemory(), nil, c)
	sid := b.Session("alice", "cli")
	if until, err := b.Pending(ctx, sid, "rally"); err != nil || !until.IsZero() {
		t.Fatalf("pending before any ask: %v, %v", until, err)
	}
	q, cookie := start(t, b, as, "alice")
	until, err := b.Pending(ctx, sid, "rally")
	if err != nil || until.IsZero() {
		t.Fatalf("pending after the link was opened: %v, %v", until, err)
	}
	if other, _ := b.Pending(ctx, b.Session("bob", "cli"), "rally"); !other.IsZero() {
		t.Fatal("bob has alice's pending sign-in")
	}
	waited := make(chan error, 1)
	go func() { waited <- b.Wait(ctx, sid, "rally", time.Now().Add(time.Minute)) }()
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}
