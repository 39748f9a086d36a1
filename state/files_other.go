//go:build !unix

package state

import (
	"fmt"
	"io/fs"
	"os"
)

// secureDir creates dir, mode 0700, and refuses a symbolic link (without
// unix's ownership and O_NOFOLLOW checks).
func secureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the data directory: %w", err)
	}
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("the data directory %s is a symbolic link, which serve does not follow: name the directory it points to with --data-dir", dir)
	}
	return nil
}

// secureFile creates path, mode 0600, refusing a symbolic link.
func secureFile(path string) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: remove it, or name another --data-dir", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open the state database: %w", err)
	}
	return f.Close()
}
