package resource

import (
	"testing"
	"time"
)

// TestJTICache: a proof id is refused while it may still be valid; the
// cache never holds more than its bound, dropping expired ids first, then
// the oldest.
func TestJTICache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newJTICache(2)
	if !c.add("a", now.Add(time.Minute), now) || c.add("a", now.Add(time.Minute), now) {
		t.Fatal("a replayed id was accepted, or a new one refused")
	}
	c.add("b", now.Add(time.Second), now)
	c.add("c", now.Add(time.Minute), now.Add(2*time.Second)) // b expired: dropped
	if len(c.seen) != 2 || c.add("a", now.Add(time.Minute), now.Add(2*time.Second)) {
		t.Fatalf("after expiry: %v; a must still be refused", c.seen)
	}
	c.add("d", now.Add(time.Minute), now.Add(2*time.Second)) // full: the oldest (a) goes
	if len(c.seen) != 2 || len(c.order) != 2 {
		t.Errorf("cache holds %d ids, want its bound 2", len(c.seen))
	}
}
