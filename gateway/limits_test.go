package gateway

import (
	"net/http"
	"testing"
)

// TestLimiter: calls past a caller's bound are 429, past the total 503;
// a refusal takes nothing, a release gives back, a caller's first call
// passes whatever its size, and another caller keeps its own room.
func TestLimiter(t *testing.T) {
	l := newLimiter(Limits{CallerCalls: 2, CallerBytes: 100, Calls: 3, Bytes: 250})
	take := func(caller string, n int64, want int) func() {
		t.Helper()
		got, status, why := l.acquire(holder{subject: caller}, n)
		if status != want || (got.l == nil) != (want != 0) {
			t.Fatalf("acquire(%s, %d): status %d (%s); want %d", caller, n, status, why, want)
		}
		return got.release
	}
	a1 := take("a", 150, 0) // the first call passes, over the bytes bound
	take("a", 1, http.StatusTooManyRequests)
	a1()
	a1 = take("a", 60, 0)
	take("a", 60, http.StatusTooManyRequests) // 120 bytes > 100
	a2 := take("a", 40, 0)
	take("a", 1, http.StatusTooManyRequests) // 2 calls
	b1 := take("b", 100, 0)
	take("d", 1, http.StatusServiceUnavailable) // 3 calls in all
	a2()
	take("c", 100, http.StatusServiceUnavailable) // 260 bytes > 250
	c1 := take("c", 50, 0)
	a1()
	b1()
	c1()
	if l.calls != 0 || l.bytes != 0 || len(l.by) != 0 {
		t.Errorf("after every release: %d calls, %d bytes, %d callers", l.calls, l.bytes, len(l.by))
	}
}
