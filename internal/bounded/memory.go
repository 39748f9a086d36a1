package bounded

import (
	"sync"
	"time"
)

// Memory is a replay cache in one process's memory: ids per owner, each
// kept until its expiry, under Limits. Its methods are safe for
// concurrent use.
type Memory struct {
	mu     sync.Mutex
	l      Limits
	owners map[string]*memOwner
	// prune is the earliest time an owner's every id has expired: before
	// it no owner can be dropped, so a full cache is not scanned.
	prune time.Time
}

type memOwner struct {
	ids map[string]time.Time
	// first is the earliest expiry of ids, last the latest.
	first, last time.Time
}

// NewMemory returns an empty cache under l.
func NewMemory(l Limits) *Memory {
	return &Memory{l: l, owners: map[string]*memOwner{}}
}

// Remember records id of owner until expires. It returns ErrReplayed when
// the id is remembered and not expired at now, and a *FullError when a
// bound is reached; then nothing is recorded.
func (m *Memory) Remember(owner, id string, expires, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.owners[owner]
	if o != nil {
		if exp, ok := o.ids[id]; ok && now.Before(exp) {
			return ErrReplayed
		}
		if len(o.ids) >= m.l.PerOwner && !now.Before(o.first) {
			o.expire(now)
		}
		if len(o.ids) >= m.l.PerOwner {
			return &FullError{Owner: true, Limit: m.l.PerOwner, RetryAfter: o.first.Sub(now)}
		}
	} else {
		if len(m.owners) >= m.l.Owners && !now.Before(m.prune) {
			m.expire(now)
		}
		if len(m.owners) >= m.l.Owners {
			return &FullError{Limit: m.l.Owners, RetryAfter: m.prune.Sub(now)}
		}
		o = &memOwner{ids: map[string]time.Time{}}
		m.owners[owner] = o
	}
	o.ids[id] = expires
	if len(o.ids) == 1 || expires.Before(o.first) {
		o.first = expires
	}
	if expires.After(o.last) {
		o.last = expires
	}
	if len(m.owners) == 1 || o.last.Before(m.prune) {
		m.prune = o.last
	}
	return nil
}

// expire drops the owners whose ids have all expired at now.
func (m *Memory) expire(now time.Time) {
	m.prune = time.Time{}
	for k, o := range m.owners {
		if !now.Before(o.last) {
			delete(m.owners, k)
			continue
		}
		if m.prune.IsZero() || o.last.Before(m.prune) {
			m.prune = o.last
		}
	}
}

// expire drops the ids that expired at now.
func (o *memOwner) expire(now time.Time) {
	o.first = time.Time{}
	for id, exp := range o.ids {
		if !now.Before(exp) {
			delete(o.ids, id)
			continue
		}
		if o.first.IsZero() || exp.Before(o.first) {
			o.first = exp
		}
	}
}

// Len is how many ids are remembered, expired ones not yet dropped
// included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, o := range m.owners {
		n += len(o.ids)
	}
	return n
}
