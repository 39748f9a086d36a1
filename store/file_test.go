package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// tempFiles lists the temp files of credentials.json in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, credentialsFile+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

// A write removes the temp files earlier writers left: those older than
// staleTempAge and those of a process that is gone; a recent one of a
// running process (a write in progress) is kept.
func TestWriteRemovesStaleTempFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	s := newFile(dir)
	mustPut(t, s, testCred("https://r.example", "dev"))

	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, credentialsFile)
	old := time.Now().Add(-staleTempAge - time.Second)
	files := []struct {
		name    string
		mtime   time.Time
		removed bool
	}{
		{credentialsFile + ".tmp-2318004411", old, true},                // an old name without a pid
		{tempPrefix(path, os.Getpid()) + "1234", old, true},             // running, but too old
		{tempPrefix(path, dead.Process.Pid) + "1234", time.Now(), true}, // its writer is gone
		{tempPrefix(path, os.Getpid()) + "5678", time.Now(), false},     // a write in progress
		{credentialsFile + ".tmp-3318004411", time.Now(), false},        // recent, writer unknown
		{"keyring-index.json.tmp-" + "2318004411", old, false},          // another file's
		{"credentials.json.bak", old, false},                            // not a temp file
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(`{"refresh_token":"rt-secret"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, s, testCred("https://r2.example", "dev"))
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.removed {
			t.Errorf("%s: removed = %v, want %v", f.name, gone, f.removed)
		}
	}
}

// TestKilledWriterLeavesNoTempFile kills (SIGKILL) a process that rewrites
// the store in a loop while it writes a temp file, until one dies before
// its rename and leaves the file behind; the next write removes it.
func TestKilledWriterLeavesNoTempFile(t *testing.T) {
	const attempts = 20
	dir := filepath.Join(t.TempDir(), "config")
	var left []string
	for range attempts {
		cmd := startWriter(t, dir)
		// Kill it as soon as a write is seen in progress.
		for deadline := time.Now().Add(10 * time.Second); len(tempFiles(t, dir)) == 0 && time.Now().Before(deadline); {
		}
		cmd.Process.Kill()
		cmd.Wait()
		if left = tempFiles(t, dir); len(left) > 0 {
			break
		}
	}
	if len(left) == 0 {
		t.Fatalf("no kill in %d landed in the middle of a write", attempts)
	}
	mustPut(t, newFile(dir), testCred("https://after.example", "dev"))
	if now := tempFiles(t, dir); len(now) > 0 {
		t.Errorf("temp files after the next write: %v (the killed writer left %v)", now, left)
	}
	if list, err := newFile(dir).List(context.Background()); err != nil || !slices.ContainsFunc(list, func(c *Credential) bool { return c.Key.Resource == "https://after.example" }) {
		t.Errorf("List after the write: %v, %v", keysOf(list), err)
	}
}
