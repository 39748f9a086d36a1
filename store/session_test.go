package store

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// TestNoSessionBus: without a session bus, the keyring store fails at
// once with ErrNoSessionBus and the remedy, before go-keyring (and godbus's
// autolaunch) is reached; an empty store lists without touching it.
func TestNoSessionBus(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("no Secret Service here")
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx := context.Background()
	err := ProbeKeyring(ctx)
	if !errors.Is(err, ErrNoSessionBus) || !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("ProbeKeyring = %v, want ErrNoSessionBus", err)
	}
	for _, want := range []string{"no D-Bus session bus", "use --store file", "dbus-run-session"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	s, _ := Open(KindKeyring, t.TempDir())
	if creds, err := s.List(ctx); err != nil || len(creds) != 0 {
		t.Errorf("List of an empty keyring store = %v, %v", creds, err)
	}
	if err := s.Put(ctx, testCred("https://r.example", "dev")); !errors.Is(err, ErrNoSessionBus) {
		t.Errorf("Put = %v, want ErrNoSessionBus", err)
	}
}

// TestUserBus: started with neither DBUS_SESSION_BUS_ADDRESS nor
// XDG_RUNTIME_DIR (as MCP clients start the proxy), agentauth finds the
// user's session bus at /run/user/UID/bus (here runUserDir is a temporary
// directory): a socket there is used, and godbus dials it; a file that is
// not a socket is not; and a set XDG_RUNTIME_DIR is the only place looked.
func TestUserBus(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("no Secret Service here")
	}
	dir := t.TempDir()
	defer func(old string) { runUserDir = old }(runUserDir)
	runUserDir = dir
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	os.Unsetenv("DBUS_SESSION_BUS_ADDRESS")
	os.Unsetenv("XDG_RUNTIME_DIR")
	bus := filepath.Join(dir, strconv.Itoa(os.Getuid()), "bus")
	if err := os.Mkdir(filepath.Dir(bus), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sessionBus(); !errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("no socket: sessionBus = %v, want ErrNoSessionBus", err)
	}
	if err := os.WriteFile(bus, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sessionBus(); !errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("a plain file: sessionBus = %v, want ErrNoSessionBus", err)
	}
	os.Remove(bus)
	l, err := net.Listen("unix", bus)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if err := sessionBus(); !errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("XDG_RUNTIME_DIR without a bus: sessionBus = %v, want ErrNoSessionBus", err)
	}
	os.Unsetenv("XDG_RUNTIME_DIR")
	if err := sessionBus(); err != nil {
		t.Fatalf("a socket at %s: sessionBus = %v", bus, err)
	}
	if got, want := os.Getenv("DBUS_SESSION_BUS_ADDRESS"), "unix:path="+dbus.EscapeBusAddressValue(bus); got != want {
		t.Fatalf("DBUS_SESSION_BUS_ADDRESS = %q, want %q", got, want)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	conn, err := dbus.SessionBusPrivate()
	if err != nil {
		t.Fatalf("godbus did not dial the bus found: %v", err)
	}
	conn.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("no connection reached %s: %v", bus, err)
	}
}

func TestPlainKeyringError(t *testing.T) {
	for _, tt := range []struct {
		err       error
		msg, hint string
	}{
		{errors.New("failed to unlock correct collection '/org/freedesktop/secrets/aliases/default'"), "the OS keyring is locked", "Unlock it"},
		{errors.New("The name org.freedesktop.secrets was not provided by any .service files"), "no Secret Service", "gnome-keyring-daemon --start"},
		{ErrKeyringTimeout, "did not answer", "Unlock the keyring"},
		{errors.New("something else"), "something else", "use --store file"},
	} {
		msg, hint := plainKeyringError(tt.err)
		if !strings.Contains(msg, tt.msg) || !strings.Contains(hint, tt.hint) || !strings.Contains(hint, "--store file") {
			t.Errorf("plainKeyringError(%q) = %q, %q; want %q and %q", tt.err, msg, hint, tt.msg, tt.hint)
		}
	}
}

// TestWithFallback: a copy the keyring refused, saved in the file store,
// is found by Get and List; the newer copy wins; a Put the keyring accepts
// removes the file's copy; Delete removes both.
func TestWithFallback(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	prim, fall := NewMemory(), newFile(dir)
	s := WithFallback(prim, fall)
	old := testCred("https://r.example", "dev")
	old.AccessToken = "old"
	if err := prim.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // UpdatedAt must differ
	newer := testCred("https://r.example", "dev")
	newer.AccessToken = "newer"
	other := testCred("https://other.example", "dev")
	for _, c := range []*Credential{newer, other} {
		if err := fall.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := s.Get(ctx, old.Key); err != nil || c.AccessToken != "newer" {
		t.Errorf("Get = %v, %v; want the file's newer copy", c, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v; want both credentials", list, err)
	}
	if err := s.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := fall.Get(ctx, old.Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("the file's copy survived a keyring Put: %v", err)
	}
	if err := s.Delete(ctx, other.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, other.Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "credentials.json")); err != nil {
		t.Errorf("credentials file: %v", err)
	}
}
