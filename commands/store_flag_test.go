package commands

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/store"
)

func TestStoreFlag(t *testing.T) {
	t.Setenv(store.EnvStore, "")
	tf := newTestFactory(t, "")
	if code := tf.run("--store", "vault", "token", "ws://h"); code != ExitUsage || !strings.Contains(tf.errOut.String(), `--store must be keyring or file, not "vault"`) {
		t.Fatalf("exit %d, stderr %q; want a usage error", code, tf.errOut)
	}

	// --store file opens the file store in the config dir; token only
	// reads, so the choice is not remembered (login remembers it).
	tf = newTestFactory(t, "")
	tf.OpenStore = nil
	dir := os.Getenv(store.EnvConfigDir)
	if code := tf.run("--store", "file", "token", "ws://h"); code != ExitAuth {
		t.Fatalf("exit %d, want 4 (nothing stored); stderr %q", code, tf.errOut)
	}
	st, err := tf.Store()
	if err != nil || st.Kind() != store.KindFile || !strings.HasPrefix(st.Location(), dir) {
		t.Fatalf("store = %v, %v; want the file store in %s", st, err, dir)
	}
	if kind, err := store.Resolve("", dir); err != nil || kind != store.KindKeyring {
		t.Errorf("remembered choice = %q, %v; want none (keyring, the default) after a read-only command", kind, err)
	}
}

// failingStore refuses every write, like a keyring that broke mid-login.
type failingStore struct{ store.Store }

func (failingStore) Kind() string { return store.KindKeyring }
func (failingStore) Put(context.Context, *store.Credential) error {
	return errors.New("keyring locked")
}
