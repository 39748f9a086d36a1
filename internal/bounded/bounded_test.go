package bounded_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/state/statetest"
)

// remember is Memory.Remember or RememberTx on a store.
type remember func(owner, id string, expires, now time.Time) error

func caches(t *testing.T, l bounded.Limits) map[string]remember {
	t.Helper()
	m := bounded.NewMemory(l)
	out := map[string]remember{"memory": m.Remember}
	for name, open := range map[string]func() (state.Store, error){
		"state-memory": func() (state.Store, error) { return state.NewMemory(), nil },
		"sqlite":       func() (state.Store, error) { return state.OpenSQLite(context.Background(), t.TempDir()) },
		"postgres":     func() (state.Store, error) { return state.OpenPostgres(context.Background(), statetest.Postgres(t)) },
	} {
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[name] = func(owner, id string, expires, now time.Time) error {
			var res error
			err := s.Update(context.Background(), func(tx state.Tx) error {
				res = bounded.RememberTx(tx, "test", l, owner, id, expires, now)
				if _, ok := errors.AsType[*bounded.FullError](res); ok || errors.Is(res, bounded.ErrReplayed) {
					return nil
				}
				return res
			})
			if err != nil {
				return err
			}
			return res
		}
	}
	return out
}

// More ids than a bound holds are refused, never admitted by evicting a
// live one: the first id stays a replay until it expires, and then its
// slot is free again.
func TestFullRefusesAndNeverEvicts(t *testing.T) {
	l := bounded.Limits{PerOwner: 3, Owners: 2, Retry: time.Minute}
	now := time.Unix(1_000_000, 0)
	for name, add := range caches(t, l) {
		t.Run(name, func(t *testing.T) {
			for i := range 3 {
				if err := add("a", fmt.Sprint(i), now.Add(time.Duration(10+i)*time.Second), now); err != nil {
					t.Fatalf("id %d: %v", i, err)
				}
			}
			err := add("a", "3", now.Add(time.Minute), now)
			full, ok := errors.AsType[*bounded.FullError](err)
			if !ok || !full.Owner || full.RetryAfter != 10*time.Second {
				t.Fatalf("fourth id of a: %v (%+v), want a per-owner refusal retrying in 10s", err, full)
			}
			if err := add("a", "0", now.Add(time.Minute), now.Add(time.Second)); !errors.Is(err, bounded.ErrReplayed) {
				t.Fatalf("replay of id 0 after the refusals: %v, want ErrReplayed", err)
			}
			// Another owner is not crowded out by a's.
			if err := add("b", "0", now.Add(time.Minute), now); err != nil {
				t.Fatalf("owner b: %v", err)
			}
			err = add("c", "0", now.Add(time.Minute), now)
			if full, ok := errors.AsType[*bounded.FullError](err); !ok || full.Owner {
				t.Fatalf("third owner: %v, want an owners refusal", err)
			}
			// Once a's first id expires, a has room again.
			later := now.Add(10 * time.Second)
			if err := add("a", "3", later.Add(time.Minute), later); err != nil {
				t.Fatalf("a after its first id expired: %v", err)
			}
			// Once every id of b expires, c gets b's slot.
			later = now.Add(2 * time.Minute)
			if err := add("c", "0", later.Add(time.Minute), later); err != nil {
				t.Fatalf("c after b expired: %v", err)
			}
		})
	}
}

// Memory's Total bounds the ids of all owners: at it a new id is refused
// until the first one expires.
func TestMemoryTotal(t *testing.T) {
	m := bounded.NewMemory(bounded.Limits{PerOwner: 10, Owners: 10, Total: 3})
	now := time.Unix(1_000_000, 0)
	for k := range 3 {
		if err := m.Remember(fmt.Sprint("owner-", k), "id", now.Add(time.Duration(k+1)*time.Second), now); err != nil {
			t.Fatal(err)
		}
	}
	err := m.Remember("owner-9", "id", now.Add(time.Minute), now)
	if full, ok := errors.AsType[*bounded.FullError](err); !ok || full.Owner || full.RetryAfter != time.Second {
		t.Fatalf("fourth id: %v, want a total refusal retrying in 1s", err)
	}
	if err := m.Remember("owner-0", "id", now.Add(time.Minute), now); !errors.Is(err, bounded.ErrReplayed) {
		t.Fatalf("replay at the total bound: %v", err)
	}
	later := now.Add(time.Second)
	if err := m.Remember("owner-9", "id", later.Add(time.Minute), later); err != nil {
		t.Fatalf("after the first id expired: %v", err)
	}
	if m.Len() != 3 {
		t.Errorf("Len %d, want 3", m.Len())
	}
}

// Replicas on one PostgreSQL database racing to remember the same id, of
// a new owner or of a known one: exactly one succeeds, the others see a
// replay.
func TestConcurrentReplicasRememberOnce(t *testing.T) {
	db := statetest.Postgres(t)
	var replicas []state.Store
	for range 2 {
		s, err := state.OpenPostgres(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		replicas = append(replicas, s)
	}
	l := bounded.Limits{PerOwner: 100, Owners: 10, Retry: time.Minute}
	now := time.Now()
	remember := func(s state.Store, owner, id string) error {
		var res error
		err := s.Update(context.Background(), func(tx state.Tx) error {
			res = bounded.RememberTx(tx, "race", l, owner, id, now.Add(time.Minute), now)
			if errors.Is(res, bounded.ErrReplayed) {
				return nil
			}
			return res
		})
		return errors.Join(err, res)
	}
	for round := range 6 {
		owner, id := fmt.Sprint("key-", round/2), fmt.Sprint("id-", round) // a new owner, then a known one
		errs := make(chan error, 16)
		for k := range 16 {
			go func() { errs <- remember(replicas[k%2], owner, id) }()
		}
		ok := 0
		for range 16 {
			switch err := <-errs; {
			case err == nil:
				ok++
			case !errors.Is(err, bounded.ErrReplayed):
				t.Errorf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Errorf("round %d: %d of 16 concurrent uses of one id accepted, want 1", round, ok)
		}
	}
}

// An owner's row keeps its last expiry rounded up to 10 seconds: records
// expiring within that leave it alone (concurrent records of one owner do
// not wait on its row), a later one moves it on, an earlier one never
// moves it back.
func TestOwnerExpiryStep(t *testing.T) {
	l := bounded.Limits{PerOwner: 10, Owners: 2, Retry: time.Minute}
	now := time.Unix(1_000_000, 0)
	st := state.NewMemory()
	ownerExpiry := func(exp time.Time) time.Time {
		t.Helper()
		var got time.Time
		err := st.Update(context.Background(), func(tx state.Tx) error {
			if err := bounded.PutTx(tx, "test", l, "a", exp.String(), []byte("{}"), exp, now); err != nil {
				return err
			}
			recs, err := tx.List("test#owners")
			if err != nil || len(recs) != 1 {
				return fmt.Errorf("owners: %v, %v; want one", recs, err)
			}
			got = recs[0].Expires
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range []struct{ record, owner time.Duration }{
		{61 * time.Second, 70 * time.Second},
		{69 * time.Second, 70 * time.Second},
		{75 * time.Second, 80 * time.Second},
		{30 * time.Second, 80 * time.Second},
	} {
		if got := ownerExpiry(now.Add(c.record)); !got.Equal(now.Add(c.owner)) {
			t.Errorf("after a record expiring at +%v, the owner expires at +%v, want +%v", c.record, got.Sub(now), c.owner)
		}
	}
	// At its bound the owner may still replace one of its records, and
	// nothing else.
	put := func(key string) error {
		var res error
		st.Update(context.Background(), func(tx state.Tx) error {
			res = bounded.PutTx(tx, "test", bounded.Limits{PerOwner: 4, Owners: 2}, "a", key, []byte("again"), now.Add(time.Minute), now)
			return nil
		})
		return res
	}
	if err := put(now.Add(61 * time.Second).String()); err != nil {
		t.Errorf("replacing a record at the bound: %v", err)
	}
	if full, ok := errors.AsType[*bounded.FullError](put("new")); !ok || !full.Owner {
		t.Errorf("a new record at the bound: %v, want a per-owner refusal", full)
	}
}
