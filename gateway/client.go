package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// maxResponseHeader bounds the head of a backend's answer (status line and
// header fields), as net/http's Transport.MaxResponseHeaderBytes would.
const maxResponseHeader = 64 << 10

// backendTransport is serve's HTTP/1.1 client of plain-http backends
// (https ones go to an http.Transport). It writes each request and reads
// its answer on the calling goroutine, over a pool of keep-alive
// connections per backend address. net/http's Transport does not do this
// job cheaply: it gives every connection a reader and a writer goroutine
// and hands each request and answer across them (channels, a per-request
// cancel context, a timer), and under 64 concurrent callers that hand-off
// costs serve as much CPU as its checks (testdata/bench/gateway.sh,
// profiled; see testdata/bench/HISTORY.md). Answers are parsed by net/http
// (ReadResponse), but for the common answer to a POST (head.go); what is
// ours is the pool, the bounds, the cancellation and the writing of
// requests (send says why):
//
//   - the answer's head is bounded (maxResponseHeader), its body by the
//     gateway's reader (Backend.MaxMessage per message);
//   - the caller's context (which carries the backend's timeout) ends the
//     connection's reads and writes at once when it is done;
//   - a connection goes back to the pool only after a complete answer
//     that keeps it open; a connection the backend closed while idle is
//     found before use (peeker), so that a request is never written
//     to it and never retried.
//
// The request is written in full before the answer is read: a backend
// that answers before reading a large body and stops reading would fail
// the call (net/http's Transport reads the early answer); MCP messages
// are small and the gateway bounds them.
type backendTransport struct {
	// tls reaches https backends.
	tls     http.RoundTripper
	maxIdle int
	idleFor time.Duration
	dialer  net.Dialer

	mu    sync.Mutex
	pools map[string][]*backendConn // idle connections by host:port, most recent last
}

func newBackendTransport() *backendTransport {
	return &backendTransport{
		tls:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second, MaxResponseHeaderBytes: maxResponseHeader},
		maxIdle: 256, idleFor: 90 * time.Second,
		dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		pools:  map[string][]*backendConn{},
	}
}

// backendConn is one keep-alive connection to a backend.
type backendConn struct {
	nc   net.Conn
	lr   limitedConn
	br   *bufio.Reader
	bw   *bufio.Writer
	peer *peeker
	// abort ends the connection's reads and writes at once (a cancelled
	// request), made once with the connection.
	abort func()
	idle  time.Time // when it was last put back
}

// limitedConn reads the connection up to left bytes while left >= 0
// (the answer's head), without limit when left < 0.
type limitedConn struct {
	nc   net.Conn
	left int64
}

var errHeaderTooLarge = fmt.Errorf("answer's header exceeds %d bytes", maxResponseHeader)

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.nc.Read(p)
	}
	if l.left == 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.nc.Read(p)
	l.left -= int64(n)
	return n, err
}

// RoundTrip sends req (its method, URL, header and body) with send; the
// connection goes back to the pool once the body has been read to its
// end, and is closed if the body is closed before that. https goes to
// t.tls.
func (t *backendTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.tls.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	tg, err := newTarget(req.URL)
	if err != nil {
		return nil, err
	}
	resp, err := t.send(req.Context(), req.Method, tg, req.Header, body)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// send writes one request and reads the answer's head. The request is
// written by hand, not by net/http's Request.Write: the request line,
// Host, User-Agent, Content-Length (with a body, and for POST), the
// fields of h and the body go into the connection's buffer, so that a
// message of up to 4 KiB leaves in one write(2), and a call builds no
// Request (a URL parse, a header copy and sort). A field net/http would
// refuse to send (a name that is not a token, a value with a control
// character) fails the request, as http.Transport does. The answer is
// parsed by net/http (ReadResponse). Its body gives the connection back
// (backendBody).
func (t *backendTransport) send(ctx context.Context, method string, tg *target, h http.Header, body []byte) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkFields(h); err != nil {
		return nil, err
	}
	bc, err := t.get(ctx, tg.addr)
	if err != nil {
		return nil, err
	}
	// A cancelled request ends the connection's reads and writes at once.
	watch := watchCtx(ctx, bc.abort)
	fail := func(err error) (*http.Response, error) {
		watch.end()
		bc.nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	w := bc.bw
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(tg.uri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(tg.host)
	w.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\n")
	if len(body) > 0 || method == http.MethodPost {
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(len(body)), 10))
		w.WriteString("\r\n")
	}
	for k, vs := range h {
		if skipField[k] {
			continue
		}
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(textproto.TrimString(v))
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
	w.Write(body)
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if method == http.MethodPost {
		// The common answer, read without a parser's allocations
		// (head.go); anything else is ReadResponse's.
		bc.lr.left = max(maxResponseHeader-int64(bc.br.Buffered()), 0)
		var head http.Response
		plain := plainAnswer(bc.br, &head)
		bc.lr.left = -1
		if plain {
			a := &answer{resp: head, rest: lengthReader{r: bc.br, left: head.ContentLength}}
			a.body = backendBody{rc: &a.rest, ctx: ctx, t: t, addr: tg.addr, bc: bc, watch: watch, keep: !head.Close, empty: head.ContentLength == 0}
			a.resp.Body = &a.body
			return &a.resp, nil
		}
	}
	var resp *http.Response
	for {
		// The head, bounded: what the buffer holds already counts too.
		bc.lr.left = max(maxResponseHeader-int64(bc.br.Buffered()), 0)
		resp, err = http.ReadResponse(bc.br, readAs[method])
		bc.lr.left = -1
		if err != nil {
			return fail(err)
		}
		// An interim answer (100 Continue, 103 Early Hints) precedes the
		// real one; 101 is not asked for.
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	resp.Request = nil // readAs's requests are shared
	keep := !resp.Close && (resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0)
	resp.Body = &backendBody{rc: resp.Body, ctx: ctx, t: t, addr: tg.addr, bc: bc, watch: watch, keep: keep, empty: resp.ContentLength == 0}
	return resp, nil
}

// answer is an answer plainAnswer read: the response, its body and the
// reader of its length, in one allocation.
type answer struct {
	resp http.Response
	body backendBody
	rest lengthReader
}

// abortWatch is a context that runs one function when it ends, as
// context.AfterFunc does but at no cost (the gateway's call context,
// callCtx).
type abortWatch interface {
	// watch arranges for f to run once when the context ends, at once if
	// it has; it reports false, doing nothing, while it watches another.
	watch(f func()) bool
	// unwatch reports whether the watched function had not run, and now
	// will not.
	unwatch() bool
}

// watcher runs a function when a request's context ends: through the
// context itself when it is an abortWatch, else context.AfterFunc.
type watcher struct {
	aw   abortWatch
	stop func() bool
}

func watchCtx(ctx context.Context, f func()) watcher {
	if aw, ok := ctx.(abortWatch); ok && aw.watch(f) {
		return watcher{aw: aw}
	}
	return watcher{stop: context.AfterFunc(ctx, f)}
}

// end reports whether the function had not run, and now will not.
func (w watcher) end() bool {
	if w.aw != nil {
		return w.aw.unwatch()
	}
	return w.stop()
}

// skipField are the fields send writes itself or never sends, as
// Request.Write skips them.
var skipField = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// readAs gives ReadResponse the method of send's request, the one field
// of a Request it reads (the answer to HEAD has no body); never changed.
var readAs = func() map[string]*http.Request {
	m := map[string]*http.Request{}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		m[method] = &http.Request{Method: method}
	}
	return m
}()

// checkFields refuses a header field net/http would not send: a name
// that is not a token (RFC 9110 §5.1), a value with a control character
// other than HTAB (§5.5).
func checkFields(h http.Header) error {
	for k, vs := range h {
		if !wire.IsToken(k) {
			return fmt.Errorf("invalid header field name %q", k)
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
					return fmt.Errorf("invalid header field value for %q", k)
				}
			}
		}
	}
	return nil
}

// target is a plain-http backend's URL as send needs it, parsed once.
type target struct {
	addr string // host:port to dial
	host string // the Host field
	uri  string // the request target: path and query
}

// newTarget is an http URL's target. A host must be written in ASCII
// (Request.Write would convert an internationalized one).
func newTarget(u *url.URL) (*target, error) {
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("cannot send to %s: want an http URL with a host", u.Redacted())
	}
	for i := 0; i < len(u.Host); i++ {
		if c := u.Host[i]; c <= ' ' || c >= 0x7f {
			return nil, fmt.Errorf("cannot send to host %q: write it in ASCII (xn--…) in the URL", u.Host)
		}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &target{addr: addr, host: u.Host, uri: u.RequestURI()}, nil
}

// get takes an idle connection to addr that the backend has not closed,
// or dials one.
func (t *backendTransport) get(ctx context.Context, addr string) (*backendConn, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		pool := t.pools[addr]
		var bc *backendConn
		if n := len(pool); n > 0 {
			bc = pool[n-1]
			pool[n-1] = nil
			t.pools[addr] = pool[:n-1]
		}
		t.mu.Unlock()
		if bc == nil {
			break
		}
		if now.Sub(bc.idle) < t.idleFor && bc.br.Buffered() == 0 && !bc.peer.peerClosed() {
			return bc, nil
		}
		bc.nc.Close()
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	bc := &backendConn{nc: nc, lr: limitedConn{nc: nc, left: -1}, bw: bufio.NewWriterSize(nc, 4<<10), peer: newPeeker(nc),
		abort: func() { nc.SetDeadline(time.Unix(1, 0)) }}
	bc.br = bufio.NewReaderSize(&bc.lr, 4<<10)
	return bc, nil
}

// put returns a connection to its pool, or closes it when the pool is full.
func (t *backendTransport) put(addr string, bc *backendConn) {
	bc.idle = time.Now()
	t.mu.Lock()
	if len(t.pools[addr]) < t.maxIdle {
		t.pools[addr] = append(t.pools[addr], bc)
		bc = nil
	}
	t.mu.Unlock()
	if bc != nil {
		bc.nc.Close()
	}
}

// closeIdle closes the idle connections (Gateway.Close), and, with
// olderThan > 0, only those idle that long (the gateway's sweep).
func (t *backendTransport) closeIdle(olderThan time.Duration) {
	var old []*backendConn
	t.mu.Lock()
	for addr, pool := range t.pools {
		kept := pool[:0]
		for _, bc := range pool {
			if olderThan > 0 && time.Since(bc.idle) < olderThan {
				kept = append(kept, bc)
			} else {
				old = append(old, bc)
			}
		}
		clear(pool[len(kept):])
		t.pools[addr] = kept
	}
	t.mu.Unlock()
	for _, bc := range old {
		bc.nc.Close()
	}
	if tr, ok := t.tls.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}

// backendBody is an answer's body: read to its end (or empty), it gives
// the connection back to the pool; closed before, it closes the
// connection (what is left unread could be long, or never end). Close may
// come from another goroutine than Read, as with net/http's bodies.
type backendBody struct {
	rc    io.Reader
	ctx   context.Context
	t     *backendTransport
	addr  string
	bc    *backendConn
	watch watcher
	keep  bool
	empty bool
	done  atomic.Bool
}

func (b *backendBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.finish(true)
	case err != nil && b.ctx.Err() != nil:
		err = b.ctx.Err() // not the deadline that ended the read
	}
	return n, err
}

func (b *backendBody) Close() error {
	b.finish(b.empty)
	return nil
}

// finish releases the connection once: to the pool after a complete body
// on a connection that stays open and whose request was not cancelled.
func (b *backendBody) finish(complete bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.watch.end() && complete && b.keep {
		b.t.put(b.addr, b.bc)
		return
	}
	b.bc.nc.Close()
}
