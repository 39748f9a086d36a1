package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// credentialsFile is the file backend's file in the config directory.
const credentialsFile = "credentials.json"

// fileVersion is the format of credentials.json and keyring-index.json.
const fileVersion = 1

// ErrCorrupt is matched by the error for a credentials file, index file or
// keyring entry that cannot be parsed; such a file is never overwritten.
var ErrCorrupt = errors.New("corrupt data")

type fileStore struct {
	dir, path string
	locker
}

func newFile(dir string) *fileStore {
	return &fileStore{dir: dir, path: filepath.Join(dir, credentialsFile), locker: locker{dir}}
}

type credentialsDoc struct {
	Version     int           `json:"version"`
	Credentials []*Credential `json:"credentials"`
}

func (s *fileStore) Kind() string     { return KindFile }
func (s *fileStore) Location() string { return s.path }

// read returns the stored credentials; a missing file holds none.
func (s *fileStore) read() ([]*Credential, error) {
	var doc credentialsDoc
	if err := readJSON(s.path, &doc); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return doc.Credentials, nil
}

func (s *fileStore) Get(_ context.Context, k Key) (*Credential, error) {
	creds, err := s.read()
	if err != nil {
		return nil, err
	}
	for _, c := range creds {
		if c.Key == k {
			return c, nil
		}
	}
	return nil, ErrNotFound
}

func (s *fileStore) List(context.Context) ([]*Credential, error) {
	creds, err := s.read()
	if err != nil {
		return nil, err
	}
	creds = credentialsOnly(creds)
	sortCredentials(creds)
	return creds, nil
}

func (s *fileStore) Put(ctx context.Context, c *Credential) error {
	if err := checkKey(c.Key); err != nil {
		return err
	}
	return s.update(ctx, func(creds []*Credential) []*Credential {
		creds = remove(creds, c.Key)
		return append(creds, stamped(c))
	})
}

func (s *fileStore) Delete(ctx context.Context, k Key) error {
	return s.update(ctx, func(creds []*Credential) []*Credential { return remove(creds, k) })
}

func (s *fileStore) Lock(ctx context.Context, k Key) (func(), error) {
	return s.keyLock(ctx, k)
}

// update rewrites the file with change applied, under the store lock so no
// other process's update is lost.
func (s *fileStore) update(ctx context.Context, change func([]*Credential) []*Credential) error {
	unlock, err := s.storeLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	creds, err := s.read()
	if err != nil {
		return err
	}
	before := len(creds)
	creds = change(creds)
	if len(creds) == 0 && before == 0 {
		return nil // deleting from an empty store writes nothing
	}
	sortCredentials(creds)
	b, err := json.MarshalIndent(credentialsDoc{Version: fileVersion, Credentials: creds}, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode credentials: %w", err)
	}
	return writeFileAtomic(s.path, append(b, '\n'))
}

func remove(creds []*Credential, k Key) []*Credential {
	out := creds[:0]
	for _, c := range creds {
		if c.Key != k {
			out = append(out, c)
		}
	}
	return out
}

// versioned is a file format with a version field.
type versioned interface{ version() int }

func (d *credentialsDoc) version() int { return d.Version }
func (d *indexDoc) version() int       { return d.Version }

// readJSON decodes the versioned JSON file at path into v. A missing file
// returns an error matching os.ErrNotExist.
func readJSON(path string, v versioned) error {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return err
		}
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	version := 0
	if doc, ok := v.(*credentialsDoc); ok && decodeCredentialsInto(doc, b) {
		// The file as agentauth writes it, decoded without reflection.
		version = doc.Version
	} else if err := json.Unmarshal(b, v); err != nil {
		var head struct {
			Version int `json:"version"`
		}
		if json.Unmarshal(b, &head) != nil || head.Version == fileVersion {
			return corrupt(path, err)
		}
		version = head.Version
	} else {
		version = v.version()
	}
	if version != fileVersion {
		return fmt.Errorf("cannot read %s: format version %d, want %d\nA different agentauth version wrote it; use that version or move the file away.", path, version, fileVersion)
	}
	return nil
}

func corrupt(path string, err error) error {
	return fmt.Errorf("cannot read %s: %w: %w\nFix the file or move it away (and log in again); agentauth will not overwrite it.", path, ErrCorrupt, err)
}
