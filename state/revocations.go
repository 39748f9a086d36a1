package state

import (
	"slices"
	"time"
)

// memRevocations is the revocation log of a Memory store.
type memRevocations struct {
	seq  int64
	byID map[string]Revocation
	// log holds the entries in sequence order, dead ones too (superseded
	// or swept: byID no longer has their sequence) until compact drops
	// them.
	log []Revocation
	// dead counts the dead entries of log.
	dead int
}

// memRevocationsUndo is what a rolled-back transaction restores.
type memRevocationsUndo struct {
	seq    int64
	logLen int
	dead   int
	prev   map[string]*Revocation // nil: the id was not in the log
}

func (r *memRevocations) snapshot() memRevocationsUndo {
	return memRevocationsUndo{seq: r.seq, logLen: len(r.log), dead: r.dead}
}

func (r *memRevocations) add(u *memRevocationsUndo, id string, expires time.Time) {
	old, ok := r.byID[id]
	if u.prev == nil {
		u.prev = map[string]*Revocation{}
	}
	if _, saved := u.prev[id]; !saved {
		if ok {
			u.prev[id] = &old
		} else {
			u.prev[id] = nil
		}
	}
	if ok {
		r.dead++
	}
	r.seq++
	e := Revocation{Seq: r.seq, ID: id, Expires: fromMillis(millis(expires)), At: time.Now()}
	r.byID[id] = e
	r.log = append(r.log, e)
}

func (r *memRevocations) undo(u memRevocationsUndo) {
	for id, prev := range u.prev {
		if prev == nil {
			delete(r.byID, id)
		} else {
			r.byID[id] = *prev
		}
	}
	r.seq, r.log, r.dead = u.seq, r.log[:u.logLen], u.dead
}

func (r *memRevocations) live(e Revocation) bool {
	cur, ok := r.byID[e.ID]
	return ok && cur.Seq == e.Seq
}

func (r *memRevocations) since(after int64, limit int) []Revocation {
	limit = min(limit, maxRevocationPage)
	k, _ := slices.BinarySearchFunc(r.log, after+1, func(e Revocation, seq int64) int { return int(e.Seq - seq) })
	var out []Revocation
	for ; k < len(r.log) && len(out) < limit; k++ {
		if r.live(r.log[k]) {
			out = append(out, r.log[k])
		}
	}
	return out
}

// sweep deletes at most limit entries expired before now.
func (r *memRevocations) sweep(now time.Time, limit int) int {
	n := 0
	for id, e := range r.byID {
		if n >= limit {
			break
		}
		if e.Expires.Before(now) {
			delete(r.byID, id)
			r.dead++
			n++
		}
	}
	// Compact once half the log is dead: each entry is copied a bounded
	// number of times, so the cost per revocation stays constant.
	if r.dead > len(r.log)/2 {
		r.log = slices.DeleteFunc(r.log, func(e Revocation) bool { return !r.live(e) })
		r.dead = 0
	}
	return n
}
