package state

import (
	"slices"
	"strings"
	"time"
)

// memTable holds the records of one kind in Memory. Most of what a
// server keeps grows with its traffic: rotated refresh tokens stay until
// they expire (to detect their reuse), replay ids until theirs. So that
// the garbage collector's work does not grow with them, the table holds
// no pointer per record: a key of up to maxMemKey bytes is a fixed-size
// array (a hex SHA-256, the issuer's key for codes and refresh tokens,
// fits), and values are appended to one byte arena, compacted once half
// of it is dead. A map of pointer-free entries and a byte slice are each
// one object the collector never looks inside; a map of strings and
// slices is scanned entry by entry at every collection, a cost that grew
// with every refresh token remembered. Longer keys (client ids that are
// URLs) are few and go in long.
type memTable struct {
	fixed map[memKey]memEntry
	long  map[string]memEntry
	arena []byte
	// dead counts the bytes of arena no entry refers to.
	dead int
	// first is at most the earliest expiry of the records (Unix
	// milliseconds; 0: none expires): before it, a sweep reads nothing.
	first int64
}

// maxMemKey is the longest key held in a memKey.
const maxMemKey = 64

// memKey is a key of up to maxMemKey bytes.
type memKey struct {
	n uint8
	b [maxMemKey]byte
}

// memEntry is a record: its value at arena[off:off+n], its expiry in Unix
// milliseconds (0: never).
type memEntry struct {
	off, n int
	exp    int64
}

func newMemTable() *memTable {
	return &memTable{fixed: map[memKey]memEntry{}, long: map[string]memEntry{}}
}

// fixedKey returns key as a memKey, or false when it is too long.
func fixedKey(key string) (memKey, bool) {
	var k memKey
	if len(key) > maxMemKey {
		return k, false
	}
	k.n = uint8(len(key))
	copy(k.b[:], key)
	return k, true
}

func (k *memKey) String() string { return string(k.b[:k.n]) }

func (t *memTable) get(key string) (memEntry, bool) {
	if k, ok := fixedKey(key); ok {
		e, ok := t.fixed[k]
		return e, ok
	}
	e, ok := t.long[key]
	return e, ok
}

// value returns a copy of e's value.
func (t *memTable) value(e memEntry) []byte {
	return slices.Clone(t.arena[e.off : e.off+e.n])
}

// record returns the record key, e with a copy of its value.
func (t *memTable) record(key string, e memEntry) Record {
	return Record{Key: key, Value: t.value(e), Expires: fromMillis(e.exp)}
}

func (t *memTable) put(key string, value []byte, exp int64) {
	t.remove(key)
	t.compact()
	e := memEntry{off: len(t.arena), n: len(value), exp: exp}
	t.arena = append(t.arena, value...)
	if exp != 0 && (t.first == 0 || exp < t.first) {
		t.first = exp
	}
	if k, ok := fixedKey(key); ok {
		t.fixed[k] = e
	} else {
		t.long[key] = e
	}
}

func (t *memTable) remove(key string) {
	if k, ok := fixedKey(key); ok {
		if e, ok := t.fixed[k]; ok {
			t.dead += e.n
			delete(t.fixed, k)
		}
		return
	}
	if e, ok := t.long[key]; ok {
		t.dead += e.n
		delete(t.long, key)
	}
}

// compact copies the live values to a new arena once at least half of
// it is dead: each value is copied a bounded number of times on average,
// so the cost per write stays constant.
func (t *memTable) compact() {
	if t.dead < 4096 || t.dead < len(t.arena)/2 {
		return
	}
	arena := make([]byte, 0, 2*(len(t.arena)-t.dead))
	move := func(e memEntry) memEntry {
		off := len(arena)
		arena = append(arena, t.arena[e.off:e.off+e.n]...)
		e.off = off
		return e
	}
	for k, e := range t.fixed {
		t.fixed[k] = move(e)
	}
	for k, e := range t.long {
		t.long[k] = move(e)
	}
	t.arena, t.dead = arena, 0
}

func (t *memTable) len() int { return len(t.fixed) + len(t.long) }

// each calls fn with every record's key and entry until fn returns false.
// fn may remove the record it is given.
func (t *memTable) each(fn func(key string, e memEntry) bool) {
	for k, e := range t.fixed {
		if !fn(k.String(), e) {
			return
		}
	}
	for k, e := range t.long {
		if !fn(k, e) {
			return
		}
	}
}

// list returns every record, sorted by key.
func (t *memTable) list() []Record {
	out := make([]Record, 0, t.len())
	t.each(func(key string, e memEntry) bool {
		out = append(out, t.record(key, e))
		return true
	})
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// expiredBefore reports whether e expires before before (Unix
// milliseconds).
func (e memEntry) expiredBefore(before int64) bool { return e.exp != 0 && e.exp < before }

// expiry is e's expiry as a time.
func (e memEntry) expiry() time.Time { return fromMillis(e.exp) }

// deleteExpired deletes up to limit records expiring before before (Unix
// milliseconds) and says how many. Until a record may have expired
// (first) it reads nothing.
func (t *memTable) deleteExpired(before int64, limit int, deleted func(key string, e memEntry)) int {
	if t.first == 0 || t.first >= before || limit <= 0 {
		return 0
	}
	n, first, complete := 0, int64(0), true
	visit := func(e memEntry) bool {
		if e.expiredBefore(before) {
			n++
			t.dead += e.n
			return true
		}
		if e.exp != 0 && (first == 0 || e.exp < first) {
			first = e.exp
		}
		return false
	}
	for k, e := range t.fixed {
		if n >= limit {
			complete = false
			break
		}
		if visit(e) {
			delete(t.fixed, k)
			if deleted != nil {
				deleted(k.String(), e)
			}
		}
	}
	for k, e := range t.long {
		if n >= limit {
			complete = false
			break
		}
		if visit(e) {
			delete(t.long, k)
			if deleted != nil {
				deleted(k, e)
			}
		}
	}
	if complete {
		t.first = first
	}
	t.compact()
	return n
}
