package host

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/agentauth/agentauth/wire"
	"github.com/coder/websocket"
)

// session is one connection.
type session struct {
	connIO
	h   *Host
	own *grantTable // nil when the auth scope is host
	// ctx ends with the session, with a cause (see stop); cancel ends it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	ending sync.Once // ctx ended by stop or ServeConn
	// stopWatch stops the AfterFuncs that end the session with ServeConn's
	// context or the host.
	stopWatch   func() bool
	mu          sync.Mutex
	initialized bool
	dialect     wire.Dialect
	// ahp1: the published dialect's negotiated version is 1.x, whose
	// authenticate with an empty token signs out and which takes
	// auth/revoked (accountRevocation).
	ahp1 bool
	// rootSubscribed: the published dialect's client subscribed to the
	// root channel (initialSubscriptions or subscribe).
	rootSubscribed bool
	// sessionSubs are the session channels the published dialect's client
	// subscribed to.
	sessionSubs map[string]bool
	// accountsSubscribed: the AHP 1.x client subscribed to
	// ahp-accounts:// (accounts.go).
	accountsSubscribed bool
	// clientID is the published dialect's initialize clientId.
	clientID string
	// upstreamWaits are the ACP upstream auth methods whose authenticate
	// waits for a sign-in (authenticateUpstream); waits counts them.
	upstreamWaits map[string]bool
	waits         sync.WaitGroup
	// handled counts the messages handled aside (asideMessages).
	handled int
}

// asideMessages is how many of a connection's first messages are handled
// on a goroutine of their own, which ends with the message: initialize
// and authenticate run the deepest code (a token's verification, the
// log), and a reader that ran them keeps a grown stack (8 KiB) for as
// long as its connection idles, where one that only read keeps 2 to 4.
const asideMessages = 4

func (s *session) table() *grantTable {
	if s.own != nil {
		return s.own
	}
	return s.h.shared
}

// push sends an auth state notification in the connection's dialect:
// notify/authRequired (design) or auth/required (published, which has no
// "authenticated" and sends revoked as "required").
func (s *session) push(sc *scheme, state string, ch *wire.Challenge) {
	s.mu.Lock()
	ok, d := s.initialized, s.dialect
	s.mu.Unlock()
	if !ok {
		return
	}
	var m *wire.Message
	if d == wire.DialectPublished {
		m = s.h.authRequiredPush(sc, state)
	} else {
		m = notifyAuthRequiredPush(sc, state, ch)
	}
	if m != nil {
		s.notify(m)
	}
}

// ServeConn runs one session on c until the peer closes it, ctx ends or
// the host is closed. It closes c before returning.
//
// Answers are written by the goroutine that reads the connection, after
// any queued pushes (the connection stops reading while the peer does not
// read); pushes never wait: they go through the connection's send queue,
// written by a goroutine that runs only while the queue is not empty, and
// a push that finds the queue full closes the connection (WebSocket
// status 1008 with the reason), so that a peer that does not read stalls
// no one else. An idle connection has one goroutine, its reader.
func (h *Host) ServeConn(ctx context.Context, c wire.Conn) {
	if s := h.open(ctx, c); s != nil {
		h.run(s)
	} else {
		c.Close()
	}
}

// run is ServeConn once the session is open.
func (h *Host) run(s *session) {
	reason := s.serve()
	if s.ctx.Err() == nil { // the peer closed: flush what is queued
		s.flushQueue()
	}
	s.ending.Do(func() { s.cancel(nil) }) // closed below, not by stop
	s.waits.Wait()                        // authenticates waiting for a sign-in end with s.ctx
	s.endWrites()
	h.closeSession(s)
	s.closeConn()
	h.log.Info("connection closed", "conn", s.id, "reason", reason)
	h.tel.ConnectionClosed()
	s.stopWatch()
	if s.cancelIO != nil {
		s.cancelIO()
	}
	h.serving.Done()
}

// serve reads and answers messages until the connection or the session
// ends, and says why. What a message needs beyond its read is in took, so
// that the stack an idle connection's reader holds is the read's alone.
func (s *session) serve() string {
	for {
		var data []byte
		var err error
		if s.readAsync != nil {
			data, err = s.readAsync(s.ioCtx)
		} else {
			data, err = s.conn.Read(s.ioCtx)
		}
		if reason, end := s.took(data, err); end {
			return reason
		}
	}
}

// took handles what one read returned, or says why the session ends.
func (s *session) took(data []byte, err error) (reason string, end bool) {
	switch {
	case s.ctx.Err() != nil:
		if cause := context.Cause(s.ctx); !errors.Is(cause, context.Canceled) {
			return cause.Error(), true
		}
		return errShuttingDown.Error(), true
	case errors.Is(err, wire.ErrSkippedMessage):
		s.h.log.Warn("message refused", "conn", s.id, "reason", err.Error())
		s.send(s.ctx, wire.NewErrorResponse(wire.ID{}, wire.Errorf(wire.CodeInvalidRequest, "invalid request: %v", err)))
	case err != nil:
		switch {
		case s.ioEnded.Load(): // the read ended with the host
			return errShuttingDown.Error(), true
		case !errors.Is(err, io.EOF) && websocket.CloseStatus(err) != websocket.StatusNormalClosure:
			return err.Error(), true
		}
		return "closed by peer", true
	case s.handled < asideMessages:
		s.handled++
		done := make(chan struct{})
		go func() { s.handle(s.ctx, data); close(done) }()
		<-done
	default:
		s.handle(s.ctx, data)
	}
	return "", false
}

// stop ends the session with a cause, once: it writes nothing more and
// closes its connection once the write under way is done, which ends the
// read. That happens on a goroutine of its own, since a write that fails
// calls stop.
func (s *session) stop(cause error) {
	s.ending.Do(func() {
		s.cancel(cause)
		go func() {
			s.endWrites()
			s.closeConn()
		}()
	})
}

// shutdown ends the session when its ServeConn context or the host ends:
// reads and writes end at once, without waiting for a write under way.
func (s *session) shutdown(cause error) {
	if wc, ok := s.conn.(*wsConn); ok && errors.Is(cause, errShuttingDown) {
		// RFC 6455 §7.4.1: 1001, the server is going away. The closing
		// handshake (bounded by the library: 5s) ends the session's read.
		s.ioEnded.Store(true)
		wc.closeWith(websocket.StatusGoingAway, "server shutting down")
	}
	s.stop(cause)
	s.ioEnded.Store(true)
	if s.cancelIO != nil {
		s.cancelIO()
	}
	if _, ok := s.conn.(*wsConn); ok {
		s.abort()
	}
}

// open registers a connection, or returns nil once the host is closed.
//
// The session's context ends with the session (see stop). It is no child
// of ctx: the end of ctx, or of the host, ends the session through one
// AfterFunc each (one in all when ctx is the host's, as for WebSocket
// connections), so that an idle connection holds no more contexts than
// that. Reads and writes end with ctx or the host, not with the session
// (coder/websocket closes a connection at once when either's context
// ends): a write under way when the queue overflows may still complete,
// and the close frame with the reason then follows it. A WebSocket is
// read and written with a context that never ends (coder/websocket arms a
// timer per message for one that can), and aborted when ctx or the host
// ends instead (see shutdown).
func (h *Host) open(ctx context.Context, c wire.Conn) *session {
	transport := "custom"
	switch c.(type) {
	case *wsConn, *wire.WSConn:
		transport = "websocket"
	case *wire.StdioConn:
		transport = "stdio"
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.serving.Add(1)
	h.nextConn++
	s := &session{h: h}
	s.id, s.log, s.conn, s.ioCtx = h.nextConn, h.log, c, context.WithoutCancel(ctx)
	s.owner = s
	s.ctx, s.cancel = context.WithCancelCause(s.ioCtx)
	if _, ok := c.(*wsConn); !ok {
		s.ioCtx, s.cancelIO = context.WithCancel(s.ioCtx)
		// Only a WebSocket read ends when the connection closes; any
		// other (stdio) is read by a goroutine the session need not wait for.
		s.readAsync = readAsync(s.ctx, c)
	}
	s.overrun = time.AfterFunc(writeTimeout, s.abort)
	s.overrun.Stop()
	if h.shared == nil {
		s.own = &grantTable{owner: s}
	}
	h.conns[s] = struct{}{}
	h.mu.Unlock()
	if ctx == h.ctx {
		s.stopWatch = context.AfterFunc(ctx, func() { s.shutdown(errShuttingDown) })
	} else {
		stopCtx := context.AfterFunc(ctx, func() { s.shutdown(context.Cause(ctx)) })
		stopHost := context.AfterFunc(h.ctx, func() { s.shutdown(errShuttingDown) })
		s.stopWatch = func() bool { return stopCtx() && stopHost() }
	}
	h.log.Info("connection opened", "conn", s.id, "transport", transport)
	h.tel.ConnectionOpened()
	return s
}

func (h *Host) closeSession(s *session) {
	h.mu.Lock()
	delete(h.conns, s)
	h.mu.Unlock()
	if s.own != nil {
		h.revoked.unholdTable(s.own)
		s.own.clear()
	}
}

// endCause is why the session ended (see stop), or nil while it runs.
func (s *session) endCause() error { return context.Cause(s.ctx) }
