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
	// n counts the ids of all owners; first is the earliest expiry among
	// them, or earlier: before it no id can be dropped.
	n     int
	first time.Time
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
			m.n -= o.expire(now)
		}
		if len(o.ids) >= m.l.PerOwner {
			return &FullError{Owner: true, Limit: m.l.PerOwner, RetryAfter: o.first.Sub(now)}
		}
	}
	if m.l.Total > 0 && m.n >= m.l.Total {
		if !now.Before(m.first) {
			m.expireIDs(now)
			o = m.owners[owner] // dropped when all its ids expired
		}
		if m.n >= m.l.Total {
			return &FullError{Limit: m.l.Total, RetryAfter: m.first.Sub(now)}
		}
	}
	if o == nil {
		if len(m.owners) >= m.l.Owners && !now.Before(m.prune) {
			m.expire(now)
		}
		if len(m.owners) >= m.l.Owners {
			return &FullError{Limit: m.l.Owners, RetryAfter: m.prune.Sub(now)}
		}
		o = &memOwner{ids: map[string]time.Time{}}
		m.owners[owner] = o
	}
	if _, ok := o.ids[id]; !ok {
		m.n++
	}
	o.ids[id] = expires
	if m.n == 1 || expires.Before(m.first) {
		m.first = expires
	}
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
			m.n -= len(o.ids)
			delete(m.owners, k)
			continue
		}
		if m.prune.IsZero() || o.last.Before(m.prune) {
			m.prune = o.last
		}
	}
}

// expireIDs drops the ids of every owner that expired at now, and the
// owners left without any.
func (m *Memory) expireIDs(now time.Time) {
	m.first = time.Time{}
	for k, o := range m.owners {
		m.n -= o.expire(now)
		if len(o.ids) == 0 {
			delete(m.owners, k)
			continue
		}
		if m.first.IsZero() || o.first.Before(m.first) {
			m.first = o.first
		}
	}
}

// expire drops the ids that expired at now and says how many.
func (o *memOwner) expire(now time.Time) int {
	o.first = time.Time{}
	n := 0
	for id, exp := range o.ids {
		if !now.Before(exp) {
			delete(o.ids, id)
			n++
			continue
		}
		if o.first.IsZero() || exp.Before(o.first) {
			o.first = exp
		}
	}
	return n
}

// Len is how many ids are remembered, expired ones not yet dropped
// included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}
