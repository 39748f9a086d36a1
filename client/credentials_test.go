package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

func newSource(st store.Store) *Credentials {
	return &Credentials{Store: st, HTTPClient: http.DefaultClient, Now: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestUsable(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name          string
		expiry        time.Time
		mutate        func(c *store.Credential)
		noCredential  bool
		wantRefreshes int
		wantAuthErr   bool
		wantResource  bool
		// later moves the clock on after the credential was stored.
		later time.Duration
	}{
		{name: "valid for an hour", expiry: now.Add(time.Hour)},
		{name: "no expiry known", expiry: time.Time{}},
		{name: "a 2 h token within 60 s of its expiry", expiry: now.Add(2 * time.Hour), later: 2*time.Hour - 30*time.Second, wantRefreshes: 1, wantResource: true},
		{name: "a 5 s token just stored: used as is", expiry: now.Add(5 * time.Second)},
		{name: "a 5 s token within a third of its lifetime", expiry: now.Add(5 * time.Second), later: 4 * time.Second, wantRefreshes: 1, wantResource: true},
		{name: "expired", expiry: now.Add(-time.Hour), wantRefreshes: 1, wantResource: true},
		{name: "expired, logged in with --no-resource", expiry: now.Add(-time.Hour), wantRefreshes: 1,
			mutate: func(c *store.Credential) { c.NoResource = true }},
		{name: "confidential client", expiry: now.Add(-time.Hour), wantRefreshes: 1, wantResource: true,
			mutate: func(c *store.Credential) {
				c.Client = store.ClientRegistration{ClientID: "conf", ClientSecret: "s3cret", AuthMethod: "client_secret_post"}
			}},
		{name: "no credential", noCredential: true, wantAuthErr: true},
		{name: "expired without refresh token", expiry: now.Add(-time.Hour), wantAuthErr: true,
			mutate: func(c *store.Credential) { c.RefreshToken = "" }},
		{name: "refresh refused", expiry: now.Add(-time.Hour), wantAuthErr: true,
			mutate: func(c *store.Credential) { c.RefreshToken = "rt-secret-revoked" }},
		{name: "client rejected", expiry: now.Add(-time.Hour), wantAuthErr: true,
			mutate: func(c *store.Credential) { c.Client.ClientID = "forgotten" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthfake.New(t)
			as.Clients["conf"] = "s3cret"
			st := store.NewMemory()
			key := store.Key{Resource: as.Resource(), Issuer: as.URL, SchemeID: "dev"}
			var seeded *store.Credential
			if !tt.noCredential {
				seeded = as.Seed(t, st, tt.expiry, tt.mutate)
			}
			cs := newSource(st)
			cs.Now = func() time.Time { return time.Now().Add(tt.later) }
			c, err := cs.Usable(context.Background(), key, "ws://host.example")
			var ae *AuthError
			if tt.wantAuthErr {
				if !errors.As(err, &ae) || ae.Hint != "agentauth login --scheme dev ws://host.example" {
					t.Fatalf("err = %v (%T), want an AuthError with the login hint", err, err)
				}
				if strings.Contains(err.Error(), "rt-secret") {
					t.Errorf("error reveals the refresh token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Usable: %v", err)
			}
			forms := as.FormsWith(wire.GrantRefreshToken)
			if len(forms) != tt.wantRefreshes {
				t.Fatalf("%d refreshes, want %d", len(forms), tt.wantRefreshes)
			}
			if tt.wantRefreshes == 0 {
				if c.AccessToken != seeded.AccessToken {
					t.Error("a valid token was replaced")
				}
				return
			}
			if got := forms[0].Get("resource"); (got == as.Resource()) != tt.wantResource || (!tt.wantResource && forms[0].Has("resource")) {
				t.Errorf("refresh resource = %q, want sent: %v", got, tt.wantResource)
			}
			if c.AccessToken == seeded.AccessToken || c.RefreshToken == seeded.RefreshToken || c.Expiry.Before(now.Add(time.Minute)) {
				t.Errorf("credential not refreshed and rotated: expiry %v", c.Expiry)
			}
			stored, _ := st.Get(context.Background(), key)
			if stored.AccessToken != c.AccessToken || stored.RefreshToken != as.Refresh || stored.Target != "ws://host.example" || stored.Subject != "alice" {
				t.Errorf("stored credential not updated: %+v", stored)
			}
		})
	}
}

// A refresh refused with invalid_client means the server forgot the
// registration (a restarted development issuer): the next login registers
// again instead of sending the user to an authorization page that can only
// show "unknown client".
func TestRefreshInvalidClientDropsRegistration(t *testing.T) {
	as := oauthfake.New(t)
	cl, st, _ := newTestClient(t)
	c := as.Seed(t, st, time.Now().Add(-time.Hour), func(c *store.Credential) { c.Client.ClientID = "forgotten" })
	var ae *AuthError
	if _, err := newSource(st).Usable(context.Background(), c.Key, "ws://host.example"); !errors.As(err, &ae) {
		t.Fatalf("Usable = %v, want an AuthError", err)
	}
	if stored, _ := st.Get(context.Background(), c.Key); !stored.Client.Rejected || stored.RefreshToken != c.RefreshToken {
		t.Errorf("stored client %+v: want it marked rejected, the rest kept", stored.Client)
	}
	if _, _, err := cl.LoginTarget(context.Background(), TargetLogin{Target: as.Resource()}); err != nil {
		t.Fatalf("login: %v", err)
	}
	if as.Registered != 1 || as.AuthorizeQuery[0].Get("client_id") != "dcr-1" {
		t.Errorf("registered %d clients, authorized client %q; want a new registration", as.Registered, as.AuthorizeQuery[0].Get("client_id"))
	}
}

func TestRefreshAfterRejection(t *testing.T) {
	as := oauthfake.New(t)
	st := store.NewMemory()
	c := as.Seed(t, st, time.Now().Add(time.Hour), nil)
	cs := newSource(st)

	// The server refused c's token: one refresh.
	fresh, err := cs.Refresh(context.Background(), c, "ws://host.example")
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if fresh.AccessToken == c.AccessToken || as.Refreshes != 1 {
		t.Fatalf("no refresh happened (%d)", as.Refreshes)
	}
	// Another process still holding the old token asks again: the stored
	// token differs already, so no second refresh.
	again, err := cs.Refresh(context.Background(), c, "ws://host.example")
	if err != nil || again.AccessToken != fresh.AccessToken || as.Refreshes != 1 {
		t.Fatalf("second Refresh = %v, %v; %d refreshes, want 1", again, err, as.Refreshes)
	}
}

// TestUsableConcurrent: ten goroutines with their own store handles (the
// file store's lock is a flock, like separate processes) on one expired
// credential whose refresh token rotates: one refresh, one token for all.
func TestUsableConcurrent(t *testing.T) {
	as := oauthfake.New(t)
	dir := t.TempDir()
	open := func() store.Store {
		st, err := store.Open(store.KindFile, dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	c := as.Seed(t, open(), time.Now().Add(-time.Minute), nil)
	tokens := make([]string, 10)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := newSource(open()).Usable(context.Background(), c.Key, "ws://host.example")
			if err != nil {
				t.Errorf("Usable: %v", err)
				return
			}
			tokens[i] = got.AccessToken
		}()
	}
	wg.Wait()
	if as.Refreshes != 1 {
		t.Fatalf("%d refreshes, want exactly 1", as.Refreshes)
	}
	for _, tok := range tokens {
		if tok != tokens[0] || tok == c.AccessToken {
			t.Fatalf("tokens differ or were not refreshed")
		}
	}
}

// failingStore refuses every write, like a keyring that broke mid-login.
type failingStore struct{ store.Store }

func (failingStore) Kind() string { return store.KindKeyring }
func (failingStore) Put(context.Context, *store.Credential) error {
	return errors.New("keyring locked")
}

func TestSaveFallsBackToFile(t *testing.T) {
	as := oauthfake.New(t)
	mem := store.NewMemory()
	c := as.Seed(t, mem, time.Now().Add(-time.Minute), nil)
	file, err := store.Open(store.KindFile, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ui := &recordUI{}
	cs := newSource(failingStore{mem})
	cs.UI = ui
	cs.Fallback = func() (store.Store, error) { return file, nil }
	got, err := cs.Usable(context.Background(), c.Key, "ws://host.example")
	if err != nil {
		t.Fatalf("Usable: %v", err)
	}
	saved, err := file.Get(context.Background(), c.Key)
	if err != nil || saved.RefreshToken != got.RefreshToken {
		t.Fatalf("the rotated credential is not in the file store: %v", err)
	}
	if want := "stored in file: keyring locked at " + file.Location(); len(ui.lines) != 1 || ui.lines[0] != want {
		t.Errorf("UI got %q, want %q", ui.lines, want)
	}
}

func TestForTarget(t *testing.T) {
	st := store.NewMemory()
	for _, c := range []*store.Credential{
		{Key: store.Key{Resource: "http://h/mcp", Issuer: "http://h", SchemeID: "dev"}, Target: "ws://h"},
		{Key: store.Key{Resource: "http://h/mcp", Issuer: "http://h", SchemeID: "gh"}, Target: "ws://h"},
		{Key: store.Key{Resource: "http://h/mcp", Issuer: "http://other"}},
		{Key: store.Key{Resource: "http://x/mcp", Issuer: "http://x"}},
	} {
		if err := st.Put(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	cs := newSource(st)
	for _, tt := range []struct {
		target, scheme string
		want           int
	}{{"ws://h", "", 2}, {"ws://h", "gh", 1}, {"http://h/mcp", "", 3}, {"http://h/mcp/", "", 0}, {"ws://nope", "", 0}} {
		got, err := cs.ForTarget(context.Background(), tt.target, tt.scheme)
		if err != nil || len(got) != tt.want {
			t.Errorf("ForTarget(%q, %q) = %d credentials, %v; want %d", tt.target, tt.scheme, len(got), err, tt.want)
		}
	}
}

func TestLoginCommand(t *testing.T) {
	for _, tt := range []struct{ target, scheme, want string }{
		{"ws://127.0.0.1:7777", "", "agentauth login ws://127.0.0.1:7777"},
		{"https://mcp.example.com/mcp", "gh", "agentauth login --scheme gh https://mcp.example.com/mcp"},
		{"stdio:agentauth serve --stdio", "", "agentauth login 'stdio:agentauth serve --stdio'"},
		{"ws://h/?tkn=s3cret", "", "agentauth login 'ws://h/?tkn=***'"},
		{"stdio:it's", "", `agentauth login 'stdio:it'"'"'s'`},
	} {
		if got := LoginCommand(tt.target, tt.scheme); got != tt.want {
			t.Errorf("LoginCommand(%q, %q) = %q, want %q", tt.target, tt.scheme, got, tt.want)
		}
	}
}

func TestTokenSubject(t *testing.T) {
	for _, tt := range []struct{ token, want string }{
		{oauthfake.AccessToken(1, "http://h/mcp"), "alice"},
		{"opaque-token", ""},
		{"a.b.c", ""},
		{"a.eyJzdWIiOjF9.c", ""}, // sub is not a string
	} {
		if got := TokenSubject(tt.token); got != tt.want {
			t.Errorf("TokenSubject(%q) = %q, want %q", tt.token, got, tt.want)
		}
	}
}

// recordUI is a UI that records what it was told, one line per call.
type recordUI struct {
	mu    sync.Mutex
	lines []string
}

func (u *recordUI) add(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.lines = append(u.lines, fmt.Sprintf(format, args...))
}

func (u *recordUI) Warn(msg string) { u.add("warning: %s", msg) }
func (u *recordUI) Say(msg string)  { u.add("%s", msg) }
func (u *recordUI) AuthURL(url string, opened, noBrowser bool, timeout time.Duration) {
	u.add("auth url %s opened=%v", url, opened)
}
func (u *recordUI) DeviceCode(p flows.DeviceCodePrompt) {
	u.add("device code %s at %s", p.UserCode, p.VerificationURI)
}
func (u *recordUI) Wait(label string, until time.Time) (stop func()) { return func() {} }
func (u *recordUI) LoggedIn(c *store.Credential)                     { u.add("logged in to %s", c.Resource) }
func (u *recordUI) StoredInFile(err error, location string) {
	u.add("stored in file: %v at %s", err, location)
}
