package store

import (
	"context"
	"fmt"
	"sync"
)

type memoryStore struct {
	mu    sync.Mutex
	creds map[Key]*Credential
	locks map[Key]chan struct{}
}

// NewMemory returns a store that lives in this process only, for tests.
// Its Lock excludes goroutines, not processes.
func NewMemory() Store {
	return &memoryStore{creds: map[Key]*Credential{}, locks: map[Key]chan struct{}{}}
}

func (m *memoryStore) Kind() string     { return KindMemory }
func (m *memoryStore) Location() string { return "memory (this process only)" }

func (m *memoryStore) Get(_ context.Context, k Key) (*Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creds[k]
	if !ok {
		return nil, ErrNotFound
	}
	return clone(c), nil
}

func (m *memoryStore) Put(_ context.Context, c *Credential) error {
	if err := checkKey(c.Key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.creds[c.Key] = stamped(c)
	return nil
}

func (m *memoryStore) Delete(_ context.Context, k Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creds, k)
	return nil
}

func (m *memoryStore) List(context.Context) ([]*Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Credential, 0, len(m.creds))
	for _, c := range m.creds {
		if !c.IsRegistration() {
			out = append(out, clone(c))
		}
	}
	sortCredentials(out)
	return out, nil
}

func (m *memoryStore) Lock(ctx context.Context, k Key) (func(), error) {
	m.mu.Lock()
	ch, ok := m.locks[k]
	if !ok {
		ch = make(chan struct{}, 1)
		m.locks[k] = ch
	}
	m.mu.Unlock()
	select {
	case ch <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-ch }) }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cannot lock the credential: %w", ctx.Err())
	}
}
