//go:build unix

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// secureDir makes sure dir is a directory of this user that no one else
// can write into, so that nobody else can plant a symbolic or hard link
// where the database will be: it is created with mode 0700 when missing;
// a symbolic link or another user's directory is refused; an existing
// directory open to the group or others is restricted to 0700 when it
// holds nothing but the database, and refused, naming chmod, otherwise. The checks
// and the chmod apply to the directory opened without following a link
// (O_NOFOLLOW), not to whatever the path names a moment later.
func secureDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("cannot create the data directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot create the data directory: %w", err)
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("the data directory %s is a symbolic link, which serve does not follow: name the directory it points to with --data-dir", dir)
		}
		return fmt.Errorf("cannot open the data directory: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read the data directory: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("the data directory %s belongs to another user (uid %d): name a directory of your own with --data-dir", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// Restricting a directory that holds other things (a home
		// directory, a project) would surprise its owner: that is refused
		// with the fix named instead.
		names, err := f.Readdirnames(-1)
		if err != nil {
			return fmt.Errorf("cannot read the data directory: %w", err)
		}
		for _, n := range names {
			if !strings.HasPrefix(n, SQLiteFile) {
				return fmt.Errorf("the data directory %s has mode %04o, open to other users, and holds other files (%s): run chmod 700 %s, or name a directory of its own with --data-dir", dir, fi.Mode().Perm(), n, dir)
			}
		}
		if err := f.Chmod(0o700); err != nil {
			return fmt.Errorf("the data directory %s has mode %04o and cannot be restricted to its owner: run chmod 700 %s: %w", dir, fi.Mode().Perm(), dir, err)
		}
	}
	return nil
}

// secureFile opens (creating it) the database file path, inside a
// directory secureDir checked, without following a symbolic link, and
// restricts it to its owner (SQLite gives its -wal and -shm files the
// database's mode). A link, a file of another user, a file with several
// names (a hard link to another file) and a link in place of a -wal,
// -shm or -journal file are refused.
func secureFile(path string) error {
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if fi, err := os.Lstat(path + side); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file: remove it, or name another --data-dir", path+side)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link, which serve does not follow: remove it, or name another --data-dir", path)
		}
		return fmt.Errorf("cannot open the state database: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read the state database: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file: remove it, or name another --data-dir", path)
	case st != nil && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to another user (uid %d): name a --data-dir of your own", path, st.Uid)
	case st != nil && st.Nlink > 1:
		return fmt.Errorf("%s has %d names (hard links), so it may be another program's file: remove it, or name another --data-dir", path, st.Nlink)
	}
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("cannot restrict the state database to its owner: %w", err)
	}
	return nil
}
