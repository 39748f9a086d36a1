package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFilePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "config")
	s := newFile(dir)
	mustPut(t, s, testCred("https://r.example", "dev"))
	unlock, err := s.Lock(context.Background(), lockedKey)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for path, want := range map[string]os.FileMode{
		dir:                                    0o700 | os.ModeDir,
		filepath.Join(dir, "credentials.json"): 0o600,
		filepath.Join(dir, "locks"):            0o700 | os.ModeDir,
		filepath.Join(dir, "locks", "store.lock"):               0o600,
		filepath.Join(dir, "locks", keyHash(lockedKey)+".lock"): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

func TestFileCorrupt(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
		corrupt                bool
	}{
		{"not json", "{not json", "corrupt data", true},
		{"truncated", `{"version":1,"credentials":[{"resource":"https://r.example"`, "corrupt data", true},
		{"empty", "", "corrupt data", true},
		{"wrong type", `{"version":1,"credentials":{}}`, "corrupt data", true},
		{"newer format", `{"version":2,"credentials":[]}`, "format version 2, want 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "credentials.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s := newFile(dir)
			ctx := context.Background()
			c := testCred("https://r.example", "dev")
			_, listErr := s.List(ctx)
			_, getErr := s.Get(ctx, c.Key)
			putErr := s.Put(ctx, c)
			deleteErr := s.Delete(ctx, c.Key)
			for op, err := range map[string]error{"List": listErr, "Get": getErr, "Put": putErr, "Delete": deleteErr} {
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s = %v, want an error naming %s and %q", op, err, path, tt.wantErr)
				}
				if errors.Is(err, ErrCorrupt) != tt.corrupt {
					t.Errorf("%s: errors.Is(err, ErrCorrupt) = %v, want %v", op, !tt.corrupt, tt.corrupt)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("file was overwritten: %q", b)
			}
		})
	}
}

// TestLeftoverTempFile simulates a crash between writing the temp file and
// renaming it: the half-written temp file is never read.
func TestLeftoverTempFile(t *testing.T) {
	dir := t.TempDir()
	s := newFile(dir)
	c := testCred("https://r.example", "dev")
	mustPut(t, s, c)
	leftover := filepath.Join(dir, "credentials.json.tmp-123456")
	if err := os.WriteFile(leftover, []byte(`{"version":1,"credentials":[{"resou`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := s.Get(ctx, c.Key); err != nil || got.AccessToken != c.AccessToken {
		t.Fatalf("Get with a leftover temp file = %v, %v", got, err)
	}
	mustPut(t, s, testCred("https://second.example", "dev"))
	list, err := newFile(dir).List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List after Put = %v, %v; want 2 credentials", keysOf(list), err)
	}
	// Only the leftover remains beside our files: writes clean up after themselves.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := "credentials.json credentials.json.tmp-123456 locks"; strings.Join(names, " ") != want {
		t.Errorf("config dir holds %v, want %s", names, want)
	}
}

func TestFileHoldsNoSecretOutsideCredentials(t *testing.T) {
	dir := t.TempDir()
	s := newFile(dir)
	c := testCred("https://r.example", "dev")
	mustPut(t, s, c)
	if err := s.Delete(context.Background(), c.Key); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(c.AccessToken)) || bytes.Contains(b, []byte(c.RefreshToken)) {
		t.Errorf("deleted credential's tokens still in the file:\n%s", b)
	}
}

func BenchmarkList(b *testing.B) {
	s := newFile(b.TempDir())
	for i := range 5 {
		c := testCred(fmt.Sprintf("https://r%d.example", i), "dev")
		c.AccessToken = strings.Repeat("a", 900) // about a JWT
		if err := s.Put(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		list, err := s.List(context.Background())
		if err != nil || len(list) != 5 {
			b.Fatal(len(list), err)
		}
	}
}
