package store

import (
	"context"
	"errors"
)

// WithFallback returns primary (the keyring) combined with fallback (the
// file store), where a credential goes when the keyring refuses a write
// after a successful login or refresh: every read finds such a copy, so
// that status, token and the rest see what was saved. Get returns the
// newer of the two copies (UpdatedAt); List merges them by key, the newer
// winning, and lists the fallback alone when the keyring cannot be read; a
// Put that the keyring accepts removes the fallback's copy; Delete removes
// both. Kind, Location and Lock are primary's.
func WithFallback(primary, fallback Store) Store {
	return &fallbackStore{Store: primary, fallback: fallback}
}

type fallbackStore struct {
	Store
	fallback Store
}

func (s *fallbackStore) Get(ctx context.Context, k Key) (*Credential, error) {
	c, err := s.Store.Get(ctx, k)
	fc, ferr := s.fallback.Get(ctx, k)
	switch {
	case ferr != nil:
		return c, err
	case err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrKeyringUnavailable):
		return c, err
	case err != nil || fc.UpdatedAt.After(c.UpdatedAt):
		return fc, nil
	}
	return c, nil
}

func (s *fallbackStore) List(ctx context.Context) ([]*Credential, error) {
	fall, ferr := s.fallback.List(ctx)
	if ferr != nil || len(fall) == 0 {
		return s.Store.List(ctx)
	}
	prim, err := s.Store.List(ctx)
	if err != nil && !errors.Is(err, ErrKeyringUnavailable) {
		return nil, err
	}
	byKey := map[Key]*Credential{}
	for _, c := range prim {
		byKey[c.Key] = c
	}
	for _, c := range fall {
		if p, ok := byKey[c.Key]; !ok || c.UpdatedAt.After(p.UpdatedAt) {
			byKey[c.Key] = c
		}
	}
	out := make([]*Credential, 0, len(byKey))
	for _, c := range byKey {
		out = append(out, c)
	}
	sortCredentials(out)
	return out, nil
}

func (s *fallbackStore) Put(ctx context.Context, c *Credential) error {
	if err := s.Store.Put(ctx, c); err != nil {
		return err
	}
	if _, err := s.fallback.Get(ctx, c.Key); err == nil {
		_ = s.fallback.Delete(ctx, c.Key) // the keyring's copy is now the newer
	}
	return nil
}

func (s *fallbackStore) Delete(ctx context.Context, k Key) error {
	err := s.Store.Delete(ctx, k)
	if _, ferr := s.fallback.Get(ctx, k); ferr == nil {
		if ferr := s.fallback.Delete(ctx, k); err == nil {
			err = ferr
		}
	}
	return err
}

// OpenWithFallback opens the store of kind in the config directory dir;
// a keyring store comes with the file store beside it (WithFallback), so
// that the copies the keyring refused are found too.
func OpenWithFallback(kind, dir string) (Store, error) {
	st, err := Open(kind, dir)
	if err != nil || kind != KindKeyring {
		return st, err
	}
	fs, err := Open(KindFile, dir)
	if err != nil {
		return nil, err
	}
	return WithFallback(st, fs), nil
}

// OpenFallback is the file store in the config directory: where a
// credential goes when the keyring refuses it after a successful flow.
func OpenFallback() (Store, error) {
	dir, err := ConfigDir()
	if err != nil {
		return nil, err
	}
	return Open(KindFile, dir)
}
