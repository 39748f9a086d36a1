//go:build !unix

package store

import (
	"context"
	"errors"
	"os"
)

var errLockUnsupported = errors.New("file locks are only implemented on unix systems")

func lockFile(context.Context, string) (func(), error) { return nil, errLockUnsupported }

// syncDir is a no-op: directories cannot be fsynced here.
func syncDir(string) error { return nil }

// processGone cannot tell here: stale temp files are removed by age only.
func processGone(int) bool { return false }

// ownedBySelf cannot tell here; there is no D-Bus session bus to find.
func ownedBySelf(os.FileInfo) bool { return false }
