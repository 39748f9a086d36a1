package state

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Store that lives in the process and dies with it: what
// `serve --ephemeral` uses. Transactions run one at a time.
type Memory struct {
	mu      sync.Mutex
	records map[Kind]map[string]Record
	revs    memRevocations
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{records: map[Kind]map[string]Record{}, revs: memRevocations{byID: map[string]Revocation{}}}
}

// Update runs fn alone; when it fails, its writes are undone.
func (m *Memory) Update(ctx context.Context, fn func(Tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := &memTx{m: m, undo: map[Kind]map[string]*Record{}, revUndo: m.revs.snapshot()}
	if err := fn(tx); err != nil {
		tx.rollback()
		m.revs.undo(tx.revUndo)
		return err
	}
	return nil
}

// View runs fn alone.
func (m *Memory) View(ctx context.Context, fn func(Tx) error) error { return m.Update(ctx, fn) }

// Sweep deletes up to limit records expired before now.
func (m *Memory) Sweep(ctx context.Context, now time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if limit > 0 {
		n = m.revs.sweep(now, limit)
	}
	for _, recs := range m.records {
		for k, r := range recs {
			if n >= limit {
				return n, nil
			}
			if !r.Expires.IsZero() && r.Expires.Before(now) {
				delete(recs, k)
				n++
			}
		}
	}
	return n, nil
}

// PublishRevoked does nothing: no other process shares the store.
func (m *Memory) PublishRevoked(context.Context, []string) error { return nil }

// OnRevoked does nothing: no other process publishes.
func (m *Memory) OnRevoked(func([]string)) {}

// PublishConfigChanged does nothing: no other process shares the store.
func (m *Memory) PublishConfigChanged(context.Context) error { return nil }

// OnConfigChanged does nothing: no other process publishes.
func (m *Memory) OnConfigChanged(func()) {}

// Close does nothing.
func (m *Memory) Close() error { return nil }

type memTx struct {
	m *Memory
	// undo holds, for each record written, its value before the first
	// write (nil: it did not exist).
	undo    map[Kind]map[string]*Record
	revUndo memRevocationsUndo
}

func (t *memTx) kind(k Kind) map[string]Record {
	recs := t.m.records[k]
	if recs == nil {
		recs = map[string]Record{}
		t.m.records[k] = recs
	}
	return recs
}

// save remembers a record's value before its first write.
func (t *memTx) save(kind Kind, key string) {
	u := t.undo[kind]
	if u == nil {
		u = map[string]*Record{}
		t.undo[kind] = u
	}
	if _, ok := u[key]; ok {
		return
	}
	if r, ok := t.m.records[kind][key]; ok {
		u[key] = &r
	} else {
		u[key] = nil
	}
}

func (t *memTx) rollback() {
	for kind, u := range t.undo {
		recs := t.kind(kind)
		for key, r := range u {
			if r == nil {
				delete(recs, key)
			} else {
				recs[key] = *r
			}
		}
	}
}

func (t *memTx) Get(kind Kind, key string) ([]byte, error) {
	r, ok := t.m.records[kind][key]
	if !ok {
		return nil, ErrNotFound
	}
	return slices.Clone(r.Value), nil
}

func (t *memTx) Put(kind Kind, key string, value []byte, expires time.Time) error {
	t.save(kind, key)
	t.kind(kind)[key] = Record{Key: key, Value: slices.Clone(value), Expires: fromMillis(millis(expires))}
	return nil
}

func (t *memTx) Create(kind Kind, key string, value []byte, expires time.Time) (bool, error) {
	if _, ok := t.m.records[kind][key]; ok {
		return false, nil
	}
	return true, t.Put(kind, key, value, expires)
}

func (t *memTx) Delete(kind Kind, key string) error {
	t.save(kind, key)
	delete(t.kind(kind), key)
	return nil
}

func (t *memTx) Count(kind Kind) (int, error) { return len(t.m.records[kind]), nil }

func (t *memTx) DeleteExpired(kind Kind, before time.Time, limit int) (int, error) {
	n := 0
	for key, r := range t.m.records[kind] {
		if n >= limit {
			break
		}
		if !r.Expires.IsZero() && r.Expires.Before(before) {
			t.Delete(kind, key)
			n++
		}
	}
	return n, nil
}

func (t *memTx) DeleteFirstExpiring(kind Kind) error {
	var first *Record
	for _, r := range t.m.records[kind] {
		if !r.Expires.IsZero() && (first == nil || r.Expires.Before(first.Expires)) {
			first = &r
		}
	}
	if first != nil {
		t.Delete(kind, first.Key)
	}
	return nil
}

func (t *memTx) List(kind Kind) ([]Record, error) {
	out := make([]Record, 0, len(t.m.records[kind]))
	for _, r := range t.m.records[kind] {
		r.Value = slices.Clone(r.Value)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (t *memTx) Revoke(id string, expires time.Time) error {
	t.m.revs.add(&t.revUndo, id, expires)
	return nil
}

func (t *memTx) Revoked(id string, now time.Time) (bool, error) {
	e, ok := t.m.revs.byID[id]
	return ok && !e.Expires.Before(now), nil
}

// RevokedSince returns the log's entries above after.
func (m *Memory) RevokedSince(ctx context.Context, after int64, limit int) ([]Revocation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.revs.since(after, limit), nil
}

// LastRevocation is the log's highest sequence.
func (m *Memory) LastRevocation(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.revs.seq, nil
}
