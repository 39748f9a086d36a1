// Package atomicfile writes a file so that a reader never sees it partly
// written: the address files of serve and proxy, which tests and scripts
// wait for. It imports nothing of agentauth.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file beside path and renames it into
// place, so a reader never sees a partial file.
func Write(path string, data []byte) error {
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
