package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// What one caller holds in serve at once: the calls it has in flight
// (POSTs, from the body's first byte to the answer's last) and the bytes
// of their bodies, which serve holds whole while it checks them, bounded
// per caller (subject and client id) and for every caller together. A
// call past a bound is refused at once, before its body is read: 429 Too
// Many Requests past the caller's own (RFC 6585 §4), 503 past the total,
// both with Retry-After (RFC 9110 §10.2.3); nothing held is evicted.
// A body's bytes are its Content-Length, or the backend's message bound
// when it has none (chunked). The backend's answers are read one message
// at a time, each bounded by the message bound: what they hold is at
// most the calls in flight times that bound.

// Limits bound what callers hold in serve at once; a zero field takes
// its default.
// serve's config sets them under gatewayLimits.
type Limits struct {
	// CallerCalls bounds one caller's calls in flight (default
	// DefaultCallerCalls); CallerBytes the bytes of their bodies
	// (DefaultCallerBytes).
	CallerCalls int64 `json:"callerCalls"`
	CallerBytes int64 `json:"callerBytes"`
	// Calls and Bytes bound every caller's together (DefaultCalls,
	// DefaultBytes).
	Calls int64 `json:"calls"`
	Bytes int64 `json:"bytes"`
}

// Check reports limits that cannot be kept: a negative one, or a
// caller's bound above the bound of all callers (defaults applied).
// path names them in the message (gatewayLimits).
func (l Limits) Check(path string) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"callerCalls", l.CallerCalls}, {"callerBytes", l.CallerBytes}, {"calls", l.Calls}, {"bytes", l.Bytes}} {
		if f.v < 0 {
			return fmt.Errorf("%s.%s: %d is negative (0 or absent takes the default)", path, f.name, f.v)
		}
	}
	d := l.withDefaults()
	if d.CallerCalls > d.Calls {
		return fmt.Errorf("%s.callerCalls: %d is above calls (%d), the bound of all callers together", path, d.CallerCalls, d.Calls)
	}
	if d.CallerBytes > d.Bytes {
		return fmt.Errorf("%s.callerBytes: %d is above bytes (%d), the bound of all callers together", path, d.CallerBytes, d.Bytes)
	}
	return nil
}

// The default limits: with them, serve holds at most 128 MiB of bodies in
// flight, 32 MiB of them one caller's.
const (
	DefaultCallerCalls = 64
	DefaultCallerBytes = 32 << 20
	DefaultCalls       = 1024
	DefaultBytes       = 128 << 20
)

// retryAfter is the Retry-After of a refusal, in seconds: calls in
// flight end within a backend's timeout, most far sooner.
const retryAfter = 1

// limiter counts what callers hold.
type limiter struct {
	lim Limits

	mu    sync.Mutex
	calls int64
	bytes int64
	// by is what each caller holding anything holds; a caller holding
	// nothing has no entry, so it holds at most lim.Calls entries.
	by map[holder]held
}

// holder is a caller as the limiter counts it: subject and client id.
type holder struct{ subject, clientID string }

type held struct{ calls, bytes int64 }

func newLimiter(l Limits) *limiter {
	return &limiter{lim: l.withDefaults(), by: map[holder]held{}}
}

// withDefaults is l with each field that is not positive at its default.
func (l Limits) withDefaults() Limits {
	pos := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	return Limits{CallerCalls: pos(l.CallerCalls, DefaultCallerCalls), CallerBytes: pos(l.CallerBytes, DefaultCallerBytes),
		Calls: pos(l.Calls, DefaultCalls), Bytes: pos(l.Bytes, DefaultBytes)}
}

// taken is a call acquire let in; release gives it back, once.
type taken struct {
	l      *limiter
	caller holder
	n      int64
}

// acquire takes one call of n bytes for caller; it returns what it took,
// or the HTTP status of the refusal (429: the caller's bound; 503: the
// total) and the bound reached.
func (l *limiter) acquire(caller holder, n int64) (t taken, status int, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.by[caller]
	switch {
	case h.calls+1 > l.lim.CallerCalls:
		return t, http.StatusTooManyRequests, "you have " + strconv.FormatInt(h.calls, 10) + " calls in flight, the most serve holds for one caller"
	case h.bytes+n > l.lim.CallerBytes && h.calls > 0:
		return t, http.StatusTooManyRequests, "your calls in flight hold " + strconv.FormatInt(h.bytes, 10) + " bytes; this one would pass the " + strconv.FormatInt(l.lim.CallerBytes, 10) + " serve holds for one caller"
	case l.calls+1 > l.lim.Calls:
		return t, http.StatusServiceUnavailable, "serve holds " + strconv.FormatInt(l.calls, 10) + " calls in flight, the most it takes"
	case l.bytes+n > l.lim.Bytes && l.calls > 0:
		return t, http.StatusServiceUnavailable, "the calls in flight hold " + strconv.FormatInt(l.bytes, 10) + " bytes; this one would pass the " + strconv.FormatInt(l.lim.Bytes, 10) + " serve takes"
	}
	h.calls++
	h.bytes += n
	l.calls++
	l.bytes += n
	l.by[caller] = h
	return taken{l: l, caller: caller, n: n}, 0, ""
}

// release gives back what acquire took.
func (t taken) release() {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.by[t.caller]
	h.calls--
	h.bytes -= t.n
	l.calls--
	l.bytes -= t.n
	if h.calls == 0 {
		delete(l.by, t.caller)
	} else {
		l.by[t.caller] = h
	}
}

// admit takes a call of caller c, whose body is r's, or refuses it and
// reports false.
func (m *Mount) admit(w http.ResponseWriter, r *http.Request, c Caller) (t taken, ok bool) {
	n := r.ContentLength
	if n < 0 || n > m.maxMsg {
		n = m.maxMsg
	}
	t, status, why := m.g.limits.acquire(holder{c.Subject(), c.ClientID()}, n)
	if status == 0 {
		return t, true
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	code := wire.CodeInternalError
	if status == http.StatusTooManyRequests {
		code = wire.CodeInvalidRequest
	}
	m.g.tel.Refusal("gateway_busy")
	writeError(w, status, wire.ID{}, wire.Errorf(code, "too many calls in flight: %s; retry after %d s", why, retryAfter))
	return t, false
}
