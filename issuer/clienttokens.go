package issuer

import (
	"sync"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
)

// Grants without a refresh token (client credentials, RFC 6749 §4.4, and
// JWT bearer, RFC 7523 §2.1) keep no record in the state store: their
// access token is a signed JWT (RFC 9068) that introspection (RFC 7662)
// and the resource servers check by its signature and the revocation log,
// and revoking it (RFC 7009) puts its jti in that log, read from the token
// itself. No refresh token names the grant, so no reuse detection needs
// it. What one client may hold is bounded instead by a count, per client
// and per process, of the access tokens issued to it that may still live
// (liveTokens): Limits.ClientTokens.PerOwner, beyond which a grant is
// refused with 429 and a Retry-After, never by forgetting a live token.

// liveBuckets is how many steps of TokenTTL/liveBuckets a client's count
// spans: a token issued in one step may live until the end of the
// liveBuckets-th step after it, so a count covers liveBuckets+1 steps and
// overstates a client's live tokens by at most one step's issues.
const liveBuckets = 16

// liveTokens counts, per client, the access tokens issued by grants that
// keep no record and may still live. Its memory is one small window per
// client that holds a live token, at most Limits.ClientTokens.Owners
// (beyond, a new client is refused with 503); windows that count nothing
// are dropped once per step.
type liveTokens struct {
	limits bounded.Limits
	step   time.Duration

	mu        sync.Mutex
	clients   map[string]*liveWindow
	nextSweep time.Time
}

// liveWindow is one client's count, by step: counts[k%len] is the count of
// step k, for the steps newest-liveBuckets to newest.
type liveWindow struct {
	newest int64
	counts [liveBuckets + 1]int32
	total  int
}

func newLiveTokens(l bounded.Limits, ttl time.Duration) *liveTokens {
	return &liveTokens{limits: l, step: max(ttl/liveBuckets, time.Millisecond), clients: map[string]*liveWindow{}}
}

// take counts one token issued to client at now, or refuses it: a
// FullError for the client's bound (Owner) or the bound on clients.
func (lt *liveTokens) take(client string, now time.Time) *bounded.FullError {
	k := now.UnixNano() / int64(lt.step)
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !now.Before(lt.nextSweep) {
		lt.sweep(k)
		lt.nextSweep = now.Add(lt.step)
	}
	w := lt.clients[client]
	if w == nil {
		if len(lt.clients) >= lt.limits.Owners {
			return &bounded.FullError{Limit: lt.limits.Owners, RetryAfter: lt.step}
		}
		w = &liveWindow{newest: k}
		lt.clients[client] = w
	}
	w.advance(k)
	if w.total >= lt.limits.PerOwner {
		return &bounded.FullError{Owner: true, Limit: lt.limits.PerOwner, RetryAfter: w.retry(k, lt.step, now)}
	}
	w.counts[k%int64(len(w.counts))]++
	w.total++
	return nil
}

// give takes back a count of take for a grant that issued no token.
func (lt *liveTokens) give(client string, now time.Time) {
	k := now.UnixNano() / int64(lt.step)
	lt.mu.Lock()
	defer lt.mu.Unlock()
	w := lt.clients[client]
	if w == nil {
		return
	}
	w.advance(k)
	if c := &w.counts[k%int64(len(w.counts))]; *c > 0 {
		*c--
		w.total--
	}
}

// sweep drops the windows that count nothing at step k.
func (lt *liveTokens) sweep(k int64) {
	for id, w := range lt.clients {
		if w.advance(k); w.total == 0 {
			delete(lt.clients, id)
		}
	}
}

// advance moves w to step k, forgetting the steps that left the window.
func (w *liveWindow) advance(k int64) {
	if k <= w.newest {
		return
	}
	n := int64(len(w.counts))
	if k-w.newest >= n {
		w.counts, w.total = [liveBuckets + 1]int32{}, 0
	} else {
		for s := w.newest + 1; s <= k; s++ {
			w.total -= int(w.counts[s%n])
			w.counts[s%n] = 0
		}
	}
	w.newest = k
}

// retry is how long until the oldest counted step of w (at step k) leaves
// the window.
func (w *liveWindow) retry(k int64, step time.Duration, now time.Time) time.Duration {
	n := int64(len(w.counts))
	for s := k - n + 1; s <= k; s++ {
		if w.counts[(s%n+n)%n] > 0 {
			return time.Unix(0, (s+n)*int64(step)).Sub(now)
		}
	}
	return step
}
