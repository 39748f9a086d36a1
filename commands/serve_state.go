package commands

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/zalando/go-keyring"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/state"
)

// serve's files and store: the data directory, the state key, atomic
// writes, opening the state store.

// defaultDataDir is $XDG_STATE_HOME/agentauth/serve, else
// ~/.local/state/agentauth/serve (XDG Base Directory); on macOS and
// Windows, which have no state directory, os.UserConfigDir()/agentauth/serve.
func defaultDataDir() (string, error) {
	switch runtime.GOOS {
	case "darwin", "ios", "windows", "plan9":
		d, err := os.UserConfigDir()
		return filepath.Join(d, "agentauth", "serve"), err
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentauth", "serve"), nil
	}
	home, err := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "agentauth", "serve"), err
}

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
		return nil, fmt.Errorf("cannot use --state-key-file %s: others may read it (mode %v)\nTo restrict it, run: %s", path, fi.Mode().Perm(), client.CommandLine("chmod", "600", path))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --state-key-file: %w", err)
	}
	if len(bytes.TrimSpace(b)) < minStateKeyBytes {
		return nil, fmt.Errorf("cannot use --state-key-file %s: it holds fewer than %d bytes\nTo make one, run: head -c 32 /dev/urandom | base64 > %s; chmod 600 %[3]s", path, minStateKeyBytes, client.ShellQuote(path))
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

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so a reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

// stateFlags sets DataDir and checks the state flags' combinations.
func stateFlags(c *cli.Context, opts *ServeOptions) error {
	given := 0
	for _, name := range []string{"data-dir", "ephemeral", "database"} {
		if c.IsSet(name) {
			given++
		}
	}
	if given > 1 {
		return usageErrorf("--data-dir, --ephemeral and --database each choose where the state lives: give one")
	}
	if opts.Database != "" {
		if u, err := url.Parse(opts.Database); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return usageErrorf("--database must be a postgres:// URL")
		}
	}
	if err := checkRevocationFlags(c, opts); err != nil {
		return err
	}
	if opts.StateKeyFile != "" && opts.StateKeyKeyring {
		return usageErrorf("--state-key-file and --state-key-keyring each give the state key: give one")
	}
	if c.Duration("key-rotation") < time.Minute {
		return usageErrorf("--key-rotation must be at least 1m, not %s", c.Duration("key-rotation"))
	}
	switch {
	case c.IsSet("data-dir"):
		opts.DataDir = c.String("data-dir")
	case c.Bool("ephemeral"), opts.Database != "":
	default:
		dir, err := defaultDataDir()
		if err != nil {
			return fmt.Errorf("cannot find a data directory: %w\nName one with --data-dir DIR, or keep the state in memory with --ephemeral", err)
		}
		opts.DataDir = dir
	}
	return nil
}

// openState opens serve's state store: PostgreSQL with
// --database, SQLite in --data-dir, else memory. The description names it
// for the log, without credentials.
func openState(ctx context.Context, opts *ServeOptions, logger *slog.Logger) (state.Store, string, error) {
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
