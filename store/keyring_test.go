package store

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zalando/go-keyring"
)

func readIndexFile(t *testing.T, dir string) []Key {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "keyring-index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc indexDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Keys
}

func TestKeyringIndex(t *testing.T) {
	keyring.MockInit()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "config")
	s := newKeyring(dir, osRing{}, keyringTimeout)
	a, b := testCred("https://a.example", "dev"), testCred("https://b.example", "dev")
	mustPut(t, s, b)
	mustPut(t, s, a)
	mustPut(t, s, a) // no duplicate in the index

	if diff := cmp.Diff([]Key{a.Key, b.Key}, readIndexFile(t, dir)); diff != "" {
		t.Errorf("index after puts (-want +got):\n%s", diff)
	}
	index, _ := os.ReadFile(filepath.Join(dir, "keyring-index.json"))
	for _, secret := range []string{a.AccessToken, a.RefreshToken, a.Client.ClientSecret, a.Client.RegistrationAccessToken} {
		if strings.Contains(string(index), secret) {
			t.Errorf("index holds a secret: %s", index)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "keyring-index.json")); fi.Mode() != 0o600 {
		t.Errorf("index mode %v, want 0600", fi.Mode())
	}
	if fi, _ := os.Stat(dir); fi.Mode() != 0o700|os.ModeDir {
		t.Errorf("config dir mode %v, want 0700", fi.Mode())
	}
	// The secret is in the keyring, under the key hash.
	v, err := keyring.Get("agentauth", keyHash(a.Key))
	if err != nil || !strings.Contains(v, a.AccessToken) {
		t.Errorf("keyring entry for a: %v", err)
	}

	if err := s.Delete(ctx, a.Key); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Key{b.Key}, readIndexFile(t, dir)); diff != "" {
		t.Errorf("index after delete (-want +got):\n%s", diff)
	}
	if _, err := keyring.Get("agentauth", keyHash(a.Key)); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("keyring entry survived Delete: %v", err)
	}

	// An entry removed from the keyring by hand is skipped by List.
	if err := keyring.Delete("agentauth", keyHash(b.Key)); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("List with a stale index = %v, %v; want none", keysOf(list), err)
	}
	if err := s.Delete(ctx, b.Key); err != nil {
		t.Fatal(err)
	}
	if keys := readIndexFile(t, dir); len(keys) != 0 {
		t.Errorf("index after deleting the stale key = %v", keys)
	}
}

func TestKeyringCorruptIndex(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	path := filepath.Join(dir, "keyring-index.json")
	if err := os.WriteFile(path, []byte("[oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newKeyring(dir, osRing{}, keyringTimeout)
	_, listErr := s.List(context.Background())
	putErr := s.Put(context.Background(), testCred("https://r.example", "dev"))
	for _, err := range []error{listErr, putErr} {
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v, want a corrupt-data error naming %s", err, path)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "[oops" {
		t.Errorf("index was overwritten: %q", b)
	}
}

// limitRing refuses secrets over 2560 bytes, as Windows does.
type limitRing struct {
	mu      sync.Mutex
	entries map[string]string
}

func (r *limitRing) Set(user, secret string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(secret) > 2560 {
		return keyring.ErrSetDataTooBig
	}
	r.entries[user] = secret
	return nil
}

func (r *limitRing) Get(user string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.entries[user]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (r *limitRing) Delete(user string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.entries[user]; !ok {
		return keyring.ErrNotFound
	}
	delete(r.entries, user)
	return nil
}

func (r *limitRing) users() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.entries))
}

func TestKeyringSplitsLargeCredentials(t *testing.T) {
	ctx := context.Background()
	r := &limitRing{entries: map[string]string{}}
	s := newKeyring(t.TempDir(), r, keyringTimeout)
	big := testCred("https://r.example", "dev")
	big.AccessToken = strings.Repeat("ä", 2600) // 5200 bytes: three parts
	big.Subject = "Zoë"
	user := keyHash(big.Key)

	mustPut(t, s, big)
	got, err := s.Get(ctx, big.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(big, got, ignoreUpdatedAt); diff != "" {
		t.Errorf("split credential round trip (-want +got):\n%s", diff)
	}
	if n := len(r.users()); n != 4 {
		t.Errorf("keyring holds %d entries, want main + 3 parts: %v", n, r.users())
	}

	// Rewriting with another large credential leaves only the new parts.
	big.AccessToken = strings.Repeat("b", 4100)
	mustPut(t, s, big)
	if n := len(r.users()); n != 4 {
		t.Errorf("after rewrite keyring holds %d entries, want main + 3 parts: %v", n, r.users())
	}
	if got, _ := s.Get(ctx, big.Key); got.AccessToken != big.AccessToken {
		t.Error("rewritten split credential reads back differently")
	}

	// A small credential replaces the parts with one entry.
	small := testCred("https://r.example", "dev")
	mustPut(t, s, small)
	if diff := cmp.Diff([]string{user}, r.users()); diff != "" {
		t.Errorf("after small rewrite (-want +got):\n%s", diff)
	}

	mustPut(t, s, big)
	if err := s.Delete(ctx, big.Key); err != nil {
		t.Fatal(err)
	}
	if users := r.users(); len(users) != 0 {
		t.Errorf("Delete left keyring entries %v", users)
	}

	// A missing part is a clear error, not garbage.
	mustPut(t, s, big)
	h, _ := parseChunkHeader(r.entries[user])
	r.Delete(chunkUser(user, h.gen, 1))
	if _, err := s.Get(ctx, big.Key); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "part 2 of 3 is missing") {
		t.Errorf("Get with a missing part = %v", err)
	}
}

func TestSplitKeepsRunesWhole(t *testing.T) {
	parts := split("aéb€c", 3)
	if diff := cmp.Diff([]string{"aé", "b", "€", "c"}, parts); diff != "" {
		t.Errorf("split (-want +got):\n%s", diff)
	}
}

func TestKeyringUnavailable(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent") // past sessionBus, to the mock
	keyring.MockInitWithError(errors.New("no D-Bus session bus"))
	t.Cleanup(keyring.MockInit)
	ctx := context.Background()

	err := ProbeKeyring(ctx)
	if !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("ProbeKeyring = %v, want ErrKeyringUnavailable", err)
	}
	for _, want := range []string{"cannot write to the OS keyring", "no D-Bus session bus", "\nTo store credentials in a file instead, use --store file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ProbeKeyring error %q does not say %q", err, want)
		}
	}

	s, _ := Open("keyring", t.TempDir())
	if err := s.Put(ctx, testCred("https://r.example", "dev")); !errors.Is(err, ErrKeyringUnavailable) {
		t.Errorf("Put = %v, want ErrKeyringUnavailable", err)
	}
	if _, err := s.Get(ctx, testCred("https://r.example", "dev").Key); !errors.Is(err, ErrKeyringUnavailable) || errors.Is(err, ErrNotFound) {
		t.Errorf("Get = %v, want ErrKeyringUnavailable", err)
	}
}

func TestProbeKeyringWorks(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent") // past sessionBus, to the mock
	keyring.MockInit()
	if err := ProbeKeyring(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Get("agentauth", "agentauth-probe"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("probe entry left behind: %v", err)
	}
}

// hangRing never answers, like a keyring daemon waiting for an unlock prompt
// nobody can see.
type hangRing struct{ release chan struct{} }

func (h hangRing) Set(string, string) error   { <-h.release; return nil }
func (h hangRing) Get(string) (string, error) { <-h.release; return "", nil }
func (h hangRing) Delete(string) error        { <-h.release; return nil }

func TestKeyringTimeout(t *testing.T) {
	h := hangRing{make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	ctx := context.Background()
	s := newKeyring(t.TempDir(), h, 10*time.Millisecond)

	_, getErr := s.Get(ctx, testCred("https://r.example", "dev").Key)
	putErr := s.Put(ctx, testCred("https://r.example", "dev"))
	probeErr := probe(ctx, timedRing{h, 10 * time.Millisecond})
	for op, err := range map[string]error{"Get": getErr, "Put": putErr, "probe": probeErr} {
		if !errors.Is(err, ErrKeyringTimeout) || !errors.Is(err, ErrKeyringUnavailable) {
			t.Errorf("%s = %v, want a keyring timeout", op, err)
			continue
		}
		for _, want := range []string{"the OS keyring did not answer within 10ms", "--store file"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s error %q does not say %q", op, err, want)
			}
		}
	}

	// The caller's own cancellation is reported as such, with no keyring advice.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := newKeyring(t.TempDir(), h, time.Hour).Get(cancelled, testCred("https://r.example", "dev").Key)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrKeyringUnavailable) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled only", err)
	}
}

func TestKeyringCorruptEntry(t *testing.T) {
	keyring.MockInit()
	k := testCred("https://r.example", "dev").Key
	if err := keyring.Set("agentauth", keyHash(k), "not json"); err != nil {
		t.Fatal(err)
	}
	s := newKeyring(t.TempDir(), osRing{}, keyringTimeout)
	_, err := s.Get(context.Background(), k)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "agentauth/"+keyHash(k)) {
		t.Errorf("Get of a corrupt entry = %v, want a corrupt-data error naming the entry", err)
	}
	mustPut(t, s, testCred("https://r.example", "dev")) // logging in again replaces it
	if _, err := s.Get(context.Background(), k); err != nil {
		t.Errorf("Get after replacing the corrupt entry: %v", err)
	}
}
