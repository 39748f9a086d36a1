package host

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// An accepted request of the HTTP face logs nothing at the default level
// (Info); a refused one logs one line; the per-minute summary counts both.
func TestHTTPAcceptedRequestLogsNothingAtInfo(t *testing.T) {
	var logs syncBuffer
	h := newTestHost(t, baseConfig, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	face := h.HTTPHandler()
	body := `{"jsonrpc":"2.0","id":1,"method":"whoami"}`

	for range 3 {
		if a := post(t, face, "/mcp", body, bearer("t-alice")); a.status != 200 {
			t.Fatalf("accepted request: %d %s", a.status, a.body)
		}
	}
	if got := logs.String(); got != "" {
		t.Errorf("3 accepted requests logged %q, want nothing at Info", got)
	}
	if a := post(t, face, "/mcp", body, bearer("t-wrong")); a.status != 401 {
		t.Fatalf("refused request: %d %s", a.status, a.body)
	}
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="auth decision" face=http scheme=dev outcome=rejected`) {
		t.Errorf("a refused request logged %q, want one auth decision line", lines)
	}

	h.logSummary(time.Minute)
	h.logSummary(time.Minute) // nothing happened since: no line
	lines = strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `msg="auth summary" face=http accepted=3 refused=1 interval=1m0s`) {
		t.Errorf("logs %q, want one summary line with accepted=3 refused=1", lines)
	}
}

// blockingValidator counts validations, each of which waits for release.
type blockingValidator struct {
	mu      sync.Mutex
	calls   int
	release chan struct{}
}

func (v *blockingValidator) validate(ctx context.Context, token string) (*Grant, error) {
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
		c := &checker{scheme: "dev", v: v, cache: newGrantCache(time.Now, 0)}
		grants := make(chan *Grant, n)
		for range n {
			go func() {
				g, err := c.check(context.Background(), "tok", false)
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
		if _, err := c.check(context.Background(), "tok", false); err != nil || v.calls != 1 {
			t.Errorf("a later use: err %v, %d validations; want a cache hit", err, v.calls)
		}
	})
}

// A caller whose context ends stops waiting for a validation under way.
func TestValidationWaiterCanGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := &blockingValidator{release: make(chan struct{})}
		c := &checker{scheme: "dev", v: v, cache: newGrantCache(time.Now, 0)}
		go c.check(context.Background(), "tok", false)
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.check(ctx, "tok", false); err != context.Canceled {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		close(v.release)
	})
}

// A cache hit, the HTTP face's hot path, allocates nothing (the token is
// hashed in place, the single flight is not entered).
func TestGrantCacheHitAllocatesNothing(t *testing.T) {
	inner := &countingValidator{grant: &Grant{Subject: "alice", Expiry: time.Now().Add(time.Hour)}}
	c := &checker{scheme: "dev", v: inner, cache: newGrantCache(time.Now, 0)}
	ctx := context.Background()
	token := strings.Repeat("t", 600)
	if _, err := c.check(ctx, token, false); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { c.check(ctx, token, false) }); n != 0 {
		t.Errorf("a cache hit allocates %v times, want 0", n)
	}
}
