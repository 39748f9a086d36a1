package resource

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
)

// blockingValidator counts validations, each of which waits for release.
type blockingValidator struct {
	mu      sync.Mutex
	calls   int
	release chan struct{}
}

func (v *blockingValidator) Validate(ctx context.Context, token string) (*Grant, error) {
	v.mu.Lock()
	v.calls++
	v.mu.Unlock()
	<-v.release
	return &Grant{Subject: "alice", Expiry: time.Now().Add(time.Hour)}, nil
}

// N concurrent first uses of one token verify it once: the others wait for
// the first verification (single flight) and share its grant.
func TestConcurrentFirstUsesValidateOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		v := &blockingValidator{release: make(chan struct{})}
		c := &Checker{scheme: "dev", v: v, cache: newGrantCache(time.Now, 0)}
		grants := make(chan *Grant, n)
		for range n {
			go func() {
				g, err := c.Check(context.Background(), "tok", false)
				if err != nil {
					t.Error(err)
				}
				grants <- g
			}()
		}
		synctest.Wait() // every goroutine is blocked: in the validator or waiting for it
		v.mu.Lock()
		calls := v.calls
		v.mu.Unlock()
		close(v.release)
		for range n {
			if g := <-grants; g == nil || g.Subject != "alice" || g.Scheme != "dev" {
				t.Errorf("grant %+v, want alice's", g)
			}
		}
		if calls != 1 {
			t.Errorf("%d concurrent first uses of one token validated it %d times, want once", n, calls)
		}
		if _, err := c.Check(context.Background(), "tok", false); err != nil || v.calls != 1 {
			t.Errorf("a later use: err %v, %d validations; want a cache hit", err, v.calls)
		}
	})
}

// A caller whose context ends stops waiting for a validation under way.
func TestValidationWaiterCanGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := &blockingValidator{release: make(chan struct{})}
		c := &Checker{scheme: "dev", v: v, cache: newGrantCache(time.Now, 0)}
		go c.Check(context.Background(), "tok", false)
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Check(ctx, "tok", false); err != context.Canceled {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		close(v.release)
	})
}

// A cache hit, the HTTP face's hot path, allocates nothing (the token is
// hashed in place, the single flight is not entered).
func TestGrantCacheHitAllocatesNothing(t *testing.T) {
	inner := &tokenfake.CountingValidator[Grant]{Grant: &Grant{Subject: "alice", Expiry: time.Now().Add(time.Hour)}}
	c := &Checker{scheme: "dev", v: inner, cache: newGrantCache(time.Now, 0)}
	ctx := context.Background()
	token := strings.Repeat("t", 600)
	if _, err := c.Check(ctx, token, false); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { c.Check(ctx, token, false) }); n != 0 {
		t.Errorf("a cache hit allocates %v times, want 0", n)
	}
}
