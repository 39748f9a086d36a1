package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/zalando/go-keyring"
)

// TestMain lets tests run this binary as child processes (see child).
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

type backend struct {
	name string
	// open returns a fresh, empty store. For file and keyring, reopen gives
	// another handle on the same store, as another process would have.
	open func(t testing.TB) (s Store, reopen func() Store)
}

var backends = []backend{
	{"memory", func(t testing.TB) (Store, func() Store) {
		s := NewMemory()
		return s, func() Store { return s }
	}},
	{"file", func(t testing.TB) (Store, func() Store) {
		dir := filepath.Join(t.TempDir(), "config")
		return newFile(dir), func() Store { return newFile(dir) }
	}},
	{"keyring", func(t testing.TB) (Store, func() Store) {
		keyring.MockInit()
		dir := filepath.Join(t.TempDir(), "config")
		return newKeyring(dir, osRing{}, keyringTimeout), func() Store { return newKeyring(dir, osRing{}, keyringTimeout) }
	}},
}

func testCred(resource, scheme string) *Credential {
	return &Credential{
		Key:          Key{Resource: resource, Issuer: "https://issuer.example", SchemeID: scheme},
		AccessToken:  "at-" + resource + "-" + scheme,
		RefreshToken: "rt-" + resource + "-" + scheme,
		TokenType:    "Bearer",
		Expiry:       time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		Scopes:       []string{"agent:use", "files:read"},
		Subject:      "alice",
		Client: ClientRegistration{
			ClientID: "client-1", ClientSecret: "client-secret-1", AuthMethod: "client_secret_basic", Source: "dcr",
			RegistrationClientURI: "https://issuer.example/register/client-1", RegistrationAccessToken: "rat-1",
		},
		TokenEndpoint:      "https://issuer.example/token",
		RevocationEndpoint: "https://issuer.example/revoke",
	}
}

var ignoreUpdatedAt = cmpopts.IgnoreFields(Credential{}, "UpdatedAt")

func TestStoreBehaviour(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s Store, reopen func() Store)
	}{
		{"get of an absent key is ErrNotFound", func(t *testing.T, s Store, _ func() Store) {
			if _, err := s.Get(ctx, testCred("https://r.example", "dev").Key); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get = %v, want ErrNotFound", err)
			}
		}},
		{"put then get round-trips every field", func(t *testing.T, s Store, reopen func() Store) {
			c := testCred("https://r.example", "dev")
			mustPut(t, s, c)
			got, err := reopen().Get(ctx, c.Key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, got, ignoreUpdatedAt); diff != "" {
				t.Errorf("Get mismatch (-want +got):\n%s", diff)
			}
			if got.UpdatedAt.IsZero() {
				t.Error("UpdatedAt not set by Put")
			}
			if !c.UpdatedAt.IsZero() {
				t.Error("Put modified the caller's credential")
			}
		}},
		{"zero expiry stays zero", func(t *testing.T, s Store, _ func() Store) {
			c := testCred("https://r.example", "dev")
			c.Expiry = time.Time{}
			mustPut(t, s, c)
			got, _ := s.Get(ctx, c.Key)
			if !got.Expiry.IsZero() {
				t.Errorf("Expiry = %v, want zero", got.Expiry)
			}
		}},
		{"put replaces", func(t *testing.T, s Store, _ func() Store) {
			c := testCred("https://r.example", "dev")
			mustPut(t, s, c)
			c.AccessToken = "rotated"
			mustPut(t, s, c)
			got, _ := s.Get(ctx, c.Key)
			list, _ := s.List(ctx)
			if got.AccessToken != "rotated" || len(list) != 1 {
				t.Errorf("after replace: token %q, %d credentials; want rotated, 1", got.AccessToken, len(list))
			}
		}},
		{"keys differing in one part are distinct", func(t *testing.T, s Store, _ func() Store) {
			a, b, c := testCred("https://r.example", "dev"), testCred("https://r.example", "prod"), testCred("https://r.example/", "dev")
			d := testCred("https://r.example", "dev")
			d.Issuer = "https://other.example"
			for _, x := range []*Credential{a, b, c, d} {
				mustPut(t, s, x)
			}
			list, _ := s.List(ctx)
			if len(list) != 4 {
				t.Fatalf("List has %d credentials, want 4", len(list))
			}
			got, _ := s.Get(ctx, c.Key)
			if got.AccessToken != c.AccessToken {
				t.Errorf("trailing-slash resource got token %q, want %q", got.AccessToken, c.AccessToken)
			}
		}},
		{"delete removes, and deleting an absent key is no error", func(t *testing.T, s Store, _ func() Store) {
			c := testCred("https://r.example", "dev")
			if err := s.Delete(ctx, c.Key); err != nil {
				t.Fatalf("Delete on empty store: %v", err)
			}
			mustPut(t, s, c)
			mustPut(t, s, testCred("https://keep.example", "dev"))
			if err := s.Delete(ctx, c.Key); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, c.Key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get after Delete = %v, want ErrNotFound", err)
			}
			if err := s.Delete(ctx, c.Key); err != nil {
				t.Errorf("second Delete: %v", err)
			}
			list, _ := s.List(ctx)
			if len(list) != 1 || list[0].Resource != "https://keep.example" {
				t.Errorf("List after Delete = %v, want only keep.example", keysOf(list))
			}
		}},
		{"list is sorted and empty when nothing is stored", func(t *testing.T, s Store, _ func() Store) {
			list, err := s.List(ctx)
			if err != nil || len(list) != 0 {
				t.Fatalf("List of empty store = %d, %v", len(list), err)
			}
			for _, r := range []string{"https://c.example", "https://a.example", "https://b.example"} {
				mustPut(t, s, testCred(r, "x"))
			}
			list, _ = s.List(ctx)
			want := []string{"https://a.example", "https://b.example", "https://c.example"}
			if diff := cmp.Diff(want, resourcesOf(list)); diff != "" {
				t.Errorf("List order (-want +got):\n%s", diff)
			}
		}},
		{"returned credentials are copies", func(t *testing.T, s Store, _ func() Store) {
			c := testCred("https://r.example", "dev")
			mustPut(t, s, c)
			c.Scopes[0] = "changed-after-put"
			got, _ := s.Get(ctx, c.Key)
			got.Scopes[1] = "changed-after-get"
			list, _ := s.List(ctx)
			list[0].AccessToken = "changed-after-list"
			again, _ := s.Get(ctx, c.Key)
			if diff := cmp.Diff([]string{"agent:use", "files:read"}, again.Scopes); diff != "" || again.AccessToken != "at-https://r.example-dev" {
				t.Errorf("store shares memory with callers: scopes %v token %q", again.Scopes, again.AccessToken)
			}
		}},
		{"put without resource or issuer is refused", func(t *testing.T, s Store, _ func() Store) {
			c := testCred("", "dev")
			if err := s.Put(ctx, c); err == nil {
				t.Error("Put without resource succeeded")
			}
			c = testCred("https://r.example", "dev")
			c.Issuer = ""
			if err := s.Put(ctx, c); err == nil {
				t.Error("Put without issuer succeeded")
			}
		}},
		{"lock excludes until unlocked", func(t *testing.T, s Store, reopen func() Store) {
			k := testCred("https://r.example", "dev").Key
			unlock, err := s.Lock(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if _, err := reopen().Lock(short, k); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("second Lock while held = %v, want deadline exceeded", err)
			}
			other, err := reopen().Lock(ctx, testCred("https://other.example", "dev").Key)
			if err != nil {
				t.Fatalf("Lock of another key while the first is held: %v", err)
			}
			other()
			unlock()
			unlock() // idempotent
			again, err := reopen().Lock(ctx, k)
			if err != nil {
				t.Fatalf("Lock after unlock: %v", err)
			}
			again()
		}},
		{"find registration picks the newest for the issuer", func(t *testing.T, s Store, _ func() Store) {
			if _, ok := FindRegistration(ctx, s, "https://issuer.example"); ok {
				t.Fatal("found a registration in an empty store")
			}
			old := testCred("https://a.example", "dev")
			old.Client.ClientID = "old"
			mustPut(t, s, old)
			stored, _ := s.Get(ctx, old.Key)
			for !time.Now().After(stored.UpdatedAt) { // Put stamps with the wall clock
			}
			newer := testCred("https://b.example", "dev")
			newer.Client.ClientID = "newer"
			mustPut(t, s, newer)
			reg, ok := FindRegistration(ctx, s, "https://issuer.example")
			if !ok || reg.ClientID != "newer" || reg.ClientSecret != "client-secret-1" {
				t.Errorf("FindRegistration = %+v, %v; want client newer", reg, ok)
			}
			if _, ok := FindRegistration(ctx, s, "https://issuer.example/"); ok {
				t.Error("found a registration for a different issuer")
			}
		}},
		{"find registration skips a client the issuer rejected", func(t *testing.T, s Store, _ func() Store) {
			kept := testCred("https://a.example", "dev")
			kept.Client.ClientID = "kept"
			mustPut(t, s, kept)
			stored, _ := s.Get(ctx, kept.Key)
			for !time.Now().After(stored.UpdatedAt) { // Put stamps with the wall clock
			}
			// The newest registration, also held by a credential whose
			// refresh the issuer refused with invalid_client.
			forgotten := testCred("https://b.example", "dev")
			forgotten.Client.ClientID = "forgotten"
			mustPut(t, s, forgotten)
			rejected := testCred("https://c.example", "dev")
			rejected.Client.ClientID, rejected.Client.Rejected = "forgotten", true
			mustPut(t, s, rejected)
			reg, ok := FindRegistration(ctx, s, "https://issuer.example")
			if !ok || reg.ClientID != "kept" {
				t.Errorf("FindRegistration = %+v, %v; want client kept", reg, ok)
			}
		}},
	}
	for _, b := range backends {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				s, reopen := b.open(t)
				tt.run(t, s, reopen)
			})
		}
	}
}

func TestStoreKindAndLocation(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		kind, location string
	}{
		{"keyring", "OS keyring (service agentauth), index " + filepath.Join(dir, "keyring-index.json")},
		{"file", filepath.Join(dir, "credentials.json")},
		{"memory", "memory (this process only)"},
	}
	for _, tt := range tests {
		s, err := Open(tt.kind, dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Kind() != tt.kind || s.Location() != tt.location {
			t.Errorf("Open(%q): Kind %q Location %q; want %q %q", tt.kind, s.Kind(), s.Location(), tt.kind, tt.location)
		}
	}
	if _, err := Open("vault", dir); err == nil {
		t.Error("Open of an unknown kind succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Open wrote to the config dir: %v", entries)
	}
}

// TestConcurrentPutsFromGoroutines: many writers, each with its own handle on
// the store, lose no update.
func TestConcurrentPutsFromGoroutines(t *testing.T) {
	const writers, each = 16, 5
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s, reopen := b.open(t)
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			for w := range writers {
				wg.Go(func() {
					h := reopen()
					for i := range each {
						errs <- h.Put(context.Background(), testCred(fmt.Sprintf("https://w%d.example/%d", w, i), "dev"))
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			list, err := s.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != writers*each {
				t.Errorf("List has %d credentials after %d concurrent puts", len(list), writers*each)
			}
		})
	}
}

func mustPut(t *testing.T, s Store, c *Credential) {
	t.Helper()
	if err := s.Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func keysOf(cs []*Credential) []Key {
	var ks []Key
	for _, c := range cs {
		ks = append(ks, c.Key)
	}
	return ks
}

func resourcesOf(cs []*Credential) []string {
	var rs []string
	for _, c := range cs {
		rs = append(rs, c.Resource)
	}
	return rs
}
