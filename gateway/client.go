package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
// profiled; see README "Performance"). Requests and answers are still
// written and parsed by net/http (Request.Write, ReadResponse); what is
// ours is the pool, the bounds and the cancellation:
//
//   - the answer's head is bounded (maxResponseHeader), its body by the
//     gateway's reader (Backend.MaxMessage per message);
//   - the caller's context (which carries the backend's timeout) ends the
//     connection's reads and writes at once when it is done;
//   - a connection goes back to the pool only after a complete answer
//     that keeps it open; a connection the backend closed while idle is
//     found before use (peerClosed), so that a request is never written
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
	idle time.Time // when it was last put back
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

// RoundTrip sends req and reads the answer's head; the connection goes
// back to the pool once the body has been read to its end, and is closed
// if the body is closed before that.
func (t *backendTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.tls.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	bc, err := t.get(ctx, addr)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// A cancelled request ends the connection's reads and writes at once.
	stop := context.AfterFunc(ctx, func() { bc.nc.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		bc.nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := req.Write(bc.bw); err != nil {
		return fail(err)
	}
	if err := bc.bw.Flush(); err != nil {
		return fail(err)
	}
	var resp *http.Response
	for {
		// The head, bounded: what the buffer holds already counts too.
		bc.lr.left = max(maxResponseHeader-int64(bc.br.Buffered()), 0)
		resp, err = http.ReadResponse(bc.br, req)
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
	keep := !resp.Close && !req.Close && (resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0)
	resp.Body = &backendBody{rc: resp.Body, ctx: ctx, t: t, addr: addr, bc: bc, stop: stop, keep: keep, empty: resp.ContentLength == 0}
	return resp, nil
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
		if now.Sub(bc.idle) < t.idleFor && bc.br.Buffered() == 0 && !peerClosed(bc.nc) {
			return bc, nil
		}
		bc.nc.Close()
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	bc := &backendConn{nc: nc, lr: limitedConn{nc: nc, left: -1}, bw: bufio.NewWriterSize(nc, 4<<10)}
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
	rc    io.ReadCloser
	ctx   context.Context
	t     *backendTransport
	addr  string
	bc    *backendConn
	stop  func() bool
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
	if b.stop() && complete && b.keep {
		b.t.put(b.addr, b.bc)
		return
	}
	b.bc.nc.Close()
}
