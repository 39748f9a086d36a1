//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
)

// lockFile takes an exclusive flock(2) on path, waiting until ctx is done.
// The lock belongs to the open file, so it also excludes other goroutines of
// this process, and the kernel drops it when the process dies.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	unlock := func() func() {
		var once sync.Once
		return func() { once.Do(func() { f.Close() }) } // closing releases the flock
	}
	err = flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return unlock(), nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, err
	}
	// flock cannot be cancelled: wait in a goroutine, and if ctx ends first,
	// let that goroutine release the lock when it finally gets it.
	done := make(chan error, 1)
	go func() { done <- flock(fd, syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, err
		}
		return unlock(), nil
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return nil, ctx.Err()
	}
}

func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// processGone reports whether no process has the id pid (kill(2) with
// signal 0 answers ESRCH).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ownedBySelf reports whether the file fi describes belongs to this
// process's user.
func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
