package bounded_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
)

// FuzzMemory drives a Memory with a sequence of Remember calls (owner, id,
// lifetime, time step from each 4 bytes) and checks it against a model:
// an id remembered and not expired is always a replay (never evicted),
// the live ids never exceed a bound, and a refusal happens only at a
// bound.
func FuzzMemory(f *testing.F) {
	f.Add([]byte{0, 0, 5, 0, 0, 1, 5, 0, 0, 2, 5, 0, 0, 3, 5, 0, 0, 0, 5, 1})
	f.Add([]byte{1, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 2, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		l := bounded.Limits{PerOwner: 3, Owners: 2, Total: 5, Retry: time.Minute}
		m := bounded.NewMemory(l)
		type key struct{ owner, id string }
		model := map[key]time.Time{}
		now := time.Unix(1_000_000, 0)
		for len(ops) >= 4 {
			owner, id := fmt.Sprint(ops[0]%4), fmt.Sprint(ops[1]%8)
			exp := now.Add(time.Duration(ops[2]%8) * time.Second)
			now = now.Add(time.Duration(ops[3]%3) * time.Second)
			ops = ops[4:]
			live := func(k key) bool { e, ok := model[k]; return ok && now.Before(e) }
			perOwner, owners, total := 0, map[string]bool{}, 0
			for k := range model {
				if live(k) {
					total++
					owners[k.owner] = true
					if k.owner == owner {
						perOwner++
					}
				}
			}
			err := m.Remember(owner, id, exp, now)
			full, isFull := errors.AsType[*bounded.FullError](err)
			switch {
			case live(key{owner, id}):
				if !errors.Is(err, bounded.ErrReplayed) {
					t.Fatalf("owner %s id %s is live until %v (now %v) but Remember said %v", owner, id, model[key{owner, id}], now, err)
				}
			case err == nil:
				model[key{owner, id}] = exp
				if perOwner+1 > l.PerOwner || total+1 > l.Total || (!owners[owner] && len(owners)+1 > l.Owners) {
					t.Fatalf("accepted past a bound: owner %d, owners %d, total %d", perOwner, len(owners), total)
				}
			case isFull:
				if perOwner < l.PerOwner && total < l.Total && (owners[owner] || len(owners) < l.Owners) {
					t.Fatalf("refused below the bounds (%v): owner %d, owners %d, total %d", full, perOwner, len(owners), total)
				}
			default:
				t.Fatalf("Remember: %v", err)
			}
		}
	})
}
