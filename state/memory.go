package state

import (
	"context"
	"sync"
	"time"
)

// Memory is a Store that lives in the process and dies with it: what
// `serve --ephemeral` uses. Transactions run one at a time.
type Memory struct {
	mu      sync.Mutex
	records map[Kind]*memTable
	revs    memRevocations
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{records: map[Kind]*memTable{}, revs: memRevocations{byID: map[string]Revocation{}}}
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
	for kind, t := range m.records {
		n += t.deleteExpired(millis(now), limit-n, nil)
		if t.len() == 0 {
			// A kind per owner (bounded.Kind) is left empty when the
			// owner's records expire.
			delete(m.records, kind)
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

func (t *memTx) kind(k Kind) *memTable {
	recs := t.m.records[k]
	if recs == nil {
		recs = newMemTable()
		t.m.records[k] = recs
	}
	return recs
}

// save remembers a record's value before its first write.
func (t *memTx) save(kind Kind, key string) {
	if u := t.undo[kind]; u != nil {
		if _, ok := u[key]; ok {
			return
		}
	}
	var r *Record
	if tab := t.m.records[kind]; tab != nil {
		if e, ok := tab.get(key); ok {
			rec := tab.record(key, e)
			r = &rec
		}
	}
	t.saveRecord(kind, key, r)
}

// saveRecord remembers r (nil: none) as the value of kind/key before the
// transaction's first write to it.
func (t *memTx) saveRecord(kind Kind, key string, r *Record) {
	u := t.undo[kind]
	if u == nil {
		u = map[string]*Record{}
		t.undo[kind] = u
	}
	if _, ok := u[key]; !ok {
		u[key] = r
	}
}

func (t *memTx) rollback() {
	for kind, u := range t.undo {
		tab := t.kind(kind)
		for key, r := range u {
			if r == nil {
				tab.remove(key)
			} else {
				tab.put(key, r.Value, millis(r.Expires))
			}
		}
	}
}

func (t *memTx) Get(kind Kind, key string) ([]byte, error) {
	tab := t.m.records[kind]
	if tab == nil {
		return nil, ErrNotFound
	}
	e, ok := tab.get(key)
	if !ok {
		return nil, ErrNotFound
	}
	return tab.value(e), nil
}

// Peek is Get: transactions run one at a time.
func (t *memTx) Peek(kind Kind, key string) ([]byte, error) { return t.Get(kind, key) }

func (t *memTx) Put(kind Kind, key string, value []byte, expires time.Time) error {
	t.save(kind, key)
	t.kind(kind).put(key, value, millis(expires))
	return nil
}

func (t *memTx) Create(kind Kind, key string, value []byte, expires time.Time) (bool, error) {
	if tab := t.m.records[kind]; tab != nil {
		if _, ok := tab.get(key); ok {
			return false, nil
		}
	}
	return true, t.Put(kind, key, value, expires)
}

func (t *memTx) Delete(kind Kind, key string) error {
	tab := t.m.records[kind]
	if tab == nil {
		return nil
	}
	t.save(kind, key)
	tab.remove(key)
	return nil
}

func (t *memTx) Count(kind Kind, limit int) (int, error) {
	if tab := t.m.records[kind]; tab != nil {
		return min(tab.len(), max(limit, 0)), nil
	}
	return 0, nil
}

func (t *memTx) DeleteExpired(kind Kind, before time.Time, limit int) (int, error) {
	tab := t.m.records[kind]
	if tab == nil {
		return 0, nil
	}
	return tab.deleteExpired(millis(before), limit, func(key string, e memEntry) {
		r := tab.record(key, e)
		t.saveRecord(kind, key, &r)
	}), nil
}

func (t *memTx) DeleteFirstExpiring(kind Kind) error {
	tab := t.m.records[kind]
	if tab == nil {
		return nil
	}
	first, found := "", false
	var exp int64
	tab.each(func(key string, e memEntry) bool {
		if e.exp != 0 && (!found || e.exp < exp) {
			first, exp, found = key, e.exp, true
		}
		return true
	})
	if found {
		t.Delete(kind, first)
	}
	return nil
}

func (t *memTx) List(kind Kind) ([]Record, error) {
	if tab := t.m.records[kind]; tab != nil {
		return tab.list(), nil
	}
	return []Record{}, nil
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
