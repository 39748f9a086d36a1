package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMemoryTable writes, rewrites, deletes and sweeps enough records of
// short and long keys for the arena to be compacted several times, and
// checks every value read back against a plain map.
func TestMemoryTable(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	t0 := time.UnixMilli(1_700_000_000_000)
	want := map[string]string{}
	key := func(i int) string {
		if i%7 == 0 {
			return fmt.Sprintf("https://client.example/%d/%s", i, strings.Repeat("x", maxMemKey))
		}
		return fmt.Sprintf("%064x", i)
	}
	for round := range 20 {
		if round == 10 {
			n, err := m.Sweep(ctx, t0.Add(10*time.Second), 1_000_000)
			if err != nil || n == 0 {
				t.Fatalf("Sweep = %d, %v; want some deleted", n, err)
			}
			want = map[string]string{}
			m.View(ctx, func(tx Tx) error {
				recs, _ := tx.List("k")
				for _, r := range recs {
					if r.Expires.Before(t0.Add(10 * time.Second)) {
						t.Errorf("%s expiring %v survived the sweep", r.Key, r.Expires)
					}
					want[r.Key] = string(r.Value)
				}
				return nil
			})
		}
		err := m.Update(ctx, func(tx Tx) error {
			for i := range 500 {
				k := key(i)
				switch (i + round) % 5 {
				case 0:
					delete(want, k)
					if err := tx.Delete("k", k); err != nil {
						return err
					}
				default:
					v := fmt.Sprintf("round %d value %d %s", round, i, strings.Repeat("v", i%50))
					want[k] = v
					// Round 9's with i%3 == 0 expire before round 10's sweep.
					if err := tx.Put("k", k, []byte(v), t0.Add(time.Duration(round+i%3)*time.Second)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.records["k"].dead > len(m.records["k"].arena)/2+4096 {
		t.Errorf("arena of %d bytes, %d dead: not compacted", len(m.records["k"].arena), m.records["k"].dead)
	}
	// A rolled-back DeleteExpired restores what it deleted.
	boom := errors.New("boom")
	err := m.Update(ctx, func(tx Tx) error {
		if n, err := tx.DeleteExpired("k", t0.Add(time.Hour), 1_000_000); n != len(want) || err != nil {
			t.Errorf("DeleteExpired = %d, %v; want %d", n, err, len(want))
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	m.View(ctx, func(tx Tx) error {
		if n, _ := tx.Count("k", 1000); n != len(want) {
			t.Errorf("Count = %d, want %d", n, len(want))
		}
		for k, v := range want {
			if got, err := tx.Get("k", k); string(got) != v || err != nil {
				t.Errorf("Get(%s) = %q, %v; want %q", k, got, err, v)
			}
		}
		return nil
	})
	// Nothing has expired: a sweep reads nothing.
	if n, _ := m.Sweep(ctx, t0, 1000); n != 0 {
		t.Errorf("Sweep before any expiry deleted %d", n)
	}
	// A sweep that empties a kind drops its table.
	if n, _ := m.Sweep(ctx, t0.Add(time.Hour), 1_000_000); n != len(want) || m.records["k"] != nil {
		t.Errorf("Sweep of everything deleted %d of %d and kept the table: %v", n, len(want), m.records["k"] != nil)
	}
}
