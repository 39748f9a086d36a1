package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"al.essio.dev/pkg/shellescape"
	"github.com/zalando/go-keyring"

	"github.com/agentauth/agentauth/state"
)

// serve's store: the state key, opening the state store.

// minStateKeyBytes is the least a --state-key-file holds.
const minStateKeyBytes = 32

// The state key in the OS keyring (--state-key-keyring): one entry per
// state location, each call bounded by stateKeyringTimeout (a locked or
// absent keyring must not hang serve).
const (
	stateKeyringService = "agentauth-serve"
	stateKeyringTimeout = 3 * time.Second
)

// readStateKey derives the state key from --state-key-file: the SHA-256
// of its content, which must be at least minStateKeyBytes and readable by
// its owner only. No file, no key.
func readStateKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --state-key-file: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("cannot use --state-key-file %s: others may read it (mode %v)\nTo restrict it, run: %s", path, fi.Mode().Perm(), shellescape.QuoteCommand([]string{"chmod", "600", path}))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --state-key-file: %w", err)
	}
	if len(bytes.TrimSpace(b)) < minStateKeyBytes {
		return nil, fmt.Errorf("cannot use --state-key-file %s: it holds fewer than %d bytes\nTo make one, run: head -c 32 /dev/urandom | base64 > %s; chmod 600 %[3]s", path, minStateKeyBytes, shellescape.Quote(path))
	}
	sum := sha256.Sum256(bytes.TrimSpace(b))
	return sum[:], nil
}

// keyringStateKey derives the state key from the OS keyring's entry for
// the state location (as openState describes it), creating the entry with
// 32 random bytes on first use.
func keyringStateKey(location string, timeout time.Duration) ([]byte, error) {
	type result struct {
		secret string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		user := "state-key " + location
		secret, err := keyring.Get(stateKeyringService, user)
		if errors.Is(err, keyring.ErrNotFound) {
			b := make([]byte, 32)
			rand.Read(b)
			secret = base64.RawStdEncoding.EncodeToString(b)
			err = keyring.Set(stateKeyringService, user, secret)
		}
		done <- result{secret, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(timeout):
		r.err = fmt.Errorf("the keyring did not answer within %s", timeout)
	}
	if r.err != nil {
		return nil, fmt.Errorf("cannot get the state key from the OS keyring: %w\nUse --state-key-file FILE instead", r.err)
	}
	sum := sha256.Sum256([]byte(r.secret))
	return sum[:], nil
}

// openState opens serve's state store: PostgreSQL with
// --database, SQLite in --data-dir, else memory. The description names it
// for the log, without credentials.
func openState(ctx context.Context, opts *Options, logger *slog.Logger) (state.Store, string, error) {
	switch {
	case opts.Database != "":
		st, err := state.OpenPostgresOptions(ctx, opts.Database, state.PostgresOptions{ReconcileEvery: opts.RevocationReconcile, Logger: logger})
		if err != nil {
			return nil, "", fmt.Errorf("cannot open the state database: %w\nCheck --database, or keep the state on this machine with --data-dir DIR", err)
		}
		return st, "postgres " + st.Target(), nil
	case opts.DataDir != "":
		st, err := state.OpenSQLite(ctx, opts.DataDir)
		if err != nil {
			return nil, "", fmt.Errorf("cannot open the state in %s: %w\nName another --data-dir, or keep the state in memory with --ephemeral", opts.DataDir, err)
		}
		return st, "sqlite " + st.Path(), nil
	default:
		return state.NewMemory(), "memory", nil
	}
}
