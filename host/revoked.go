package host

import (
	"container/heap"
	"sync"
	"time"
)

// revocations is what the host refuses and where it looks when a
// revocation comes: the revoked ids (access tokens' jtis, token
// families' sids) until they may stop being refused, and the held grants
// indexed by those ids. A revocation costs the ids it names and the
// grants holding them, a check one map read: neither grows with the
// number of revocations or of connections.
type revocations struct {
	// until maps a revoked id to when it may stop being refused; read
	// without a lock on every token check.
	until sync.Map // string → time.Time

	mu sync.Mutex
	// expiring orders the ids of until by expiry, for sweeping; an entry
	// whose expiry is no longer until's is stale and skipped.
	expiring expiryHeap
	// holders are the live held grants by jti and by family id.
	holders map[string]map[*held]*grantTable
}

func newRevocations() *revocations {
	return &revocations{holders: map[string]map[*held]*grantTable{}}
}

type expiring struct {
	until time.Time
	id    string
}

// expiryHeap is a container/heap of ids, soonest expiry first.
type expiryHeap []expiring

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiring)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// revoked reports whether g's jti or family was revoked.
func (r *revocations) revoked(g *Grant) bool {
	return r.has(g.JTI) || r.has(g.Family)
}

func (r *revocations) has(id string) bool {
	if id == "" {
		return false
	}
	_, ok := r.until.Load(id)
	return ok
}

// add refuses ids until until (an id refused until later keeps its
// expiry), drops the ids that expired before now, and returns the held
// grants that carry one of ids.
func (r *revocations) add(now, until time.Time, ids map[string]bool) map[*held]*grantTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.expiring) > 0 && r.expiring[0].until.Before(now) {
		e := heap.Pop(&r.expiring).(expiring)
		if u, ok := r.until.Load(e.id); ok && u.(time.Time).Equal(e.until) {
			r.until.Delete(e.id)
		}
	}
	hit := map[*held]*grantTable{}
	for id := range ids {
		if u, ok := r.until.Load(id); !ok || u.(time.Time).Before(until) {
			r.until.Store(id, until)
			heap.Push(&r.expiring, expiring{until: until, id: id})
		}
		for e, t := range r.holders[id] {
			hit[e] = t
		}
	}
	return hit
}

// hold indexes e (of table t) by its grant's jti and family, and reports
// whether either is revoked already: a revocation that came between the
// token's check and now finds it, or is found here.
func (r *revocations) hold(t *grantTable, e *held) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range []string{e.grant.JTI, e.grant.Family} {
		if id == "" {
			continue
		}
		m := r.holders[id]
		if m == nil {
			m = map[*held]*grantTable{}
			r.holders[id] = m
		}
		m[e] = t
	}
	return r.revoked(e.grant)
}

// unhold removes e from the index.
func (r *revocations) unhold(e *held) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range []string{e.grant.JTI, e.grant.Family} {
		if m := r.holders[id]; m != nil {
			delete(m, e)
			if len(m) == 0 {
				delete(r.holders, id)
			}
		}
	}
}

// unholdTable removes every grant of t from the index (t is cleared).
func (r *revocations) unholdTable(t *grantTable) {
	t.mu.Lock()
	entries := make([]*held, 0, len(t.held))
	for _, e := range t.held {
		entries = append(entries, e)
	}
	t.mu.Unlock()
	for _, e := range entries {
		r.unhold(e)
	}
}
