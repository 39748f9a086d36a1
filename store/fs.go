package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ensureDir creates dir (and its parents) with mode 0700. A directory that
// already exists keeps its mode: it may be one the user chose.
func ensureDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	// MkdirAll applies the umask; make sure the result is exactly 0700.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomic replaces path with data (mode 0600): a temp file in the same
// directory is written and fsynced, renamed over path, and the directory is
// fsynced, so readers see either the old or the new content, even after a
// crash. A crash may leave a temp file behind; it is never read.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

// locker hands out the flock-based locks of a config directory.
type locker struct{ dir string }

// storeLock serialises rewrites of credentials.json or keyring-index.json.
func (l locker) storeLock(ctx context.Context) (func(), error) {
	return l.lock(ctx, "store.lock")
}

// keyLock is Store.Lock for the file and keyring backends.
func (l locker) keyLock(ctx context.Context, k Key) (func(), error) {
	return l.lock(ctx, keyHash(k)+".lock")
}

func (l locker) lock(ctx context.Context, name string) (func(), error) {
	if err := ensureDir(l.dir); err != nil {
		return nil, err
	}
	locks := filepath.Join(l.dir, "locks")
	if err := ensureDir(locks); err != nil {
		return nil, err
	}
	path := filepath.Join(locks, name)
	unlock, err := lockFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	return unlock, nil
}
