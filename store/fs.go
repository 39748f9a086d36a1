package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// staleTempAge is the age after which a temp file left beside a store file
// is removed even if the process that wrote it may still be running.
const staleTempAge = time.Minute

// writeFileAtomic replaces path with data (mode 0600): a temp file in the same
// directory is written and fsynced, renamed over path, and the directory is
// fsynced, so readers see either the old or the new content, even after a
// crash. A crash may leave a temp file behind (it may hold refresh tokens);
// it is never read, and the next write removes it (removeStaleTemps).
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	defer removeStaleTemps(path)
	f, err := os.CreateTemp(dir, tempPrefix(path, os.Getpid())+"*")
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

// tempPrefix is how the names of path's temp files begin: they name the
// writer's process, so that a later write can tell a dead writer's leftover
// from a write in progress.
func tempPrefix(path string, pid int) string {
	return filepath.Base(path) + ".tmp-" + strconv.Itoa(pid) + "-"
}

// removeStaleTemps removes, best effort, the temp files of path (its name
// followed by ".tmp-") that a writer left when it died before its rename:
// those older than staleTempAge, and those whose writer process is gone. A
// recent one of a running process may be a write in progress, and is kept.
func removeStaleTemps(path string) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".tmp-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		pidText, _, hasPID := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		gone := hasPID && err == nil && pid > 0 && processGone(pid)
		if gone || time.Since(info.ModTime()) > staleTempAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
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
