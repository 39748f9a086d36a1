package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// Transport strategies of proxy --transport (mcp-remote's names).
const (
	HTTPFirst = "http-first"
	SSEFirst  = "sse-first"
	HTTPOnly  = "http-only"
	SSEOnly   = "sse-only"
)

// Transports lists the strategies, the default first.
var Transports = []string{HTTPFirst, SSEFirst, HTTPOnly, SSEOnly}

// upstream is the proxy's connection to its target, whatever the
// transport.
type upstream interface {
	// send sends one message of the client. For a request whose answer
	// comes on its own response (Streamable HTTP), it returns read, which
	// hands the server's messages to deliver up to the response.
	send(ctx context.Context, m *wire.Message) (read readFunc, err error)
	// close ends the session (DELETE, or the SSE stream).
	close(ctx context.Context)
}

// readFunc reads a request's answer, handing each message to deliver.
type readFunc func(ctx context.Context, deliver func(*wire.Message, []byte) error) error

// fallsBack reports whether a refusal of the first message means the
// server speaks the other transport: the 4xx statuses the MCP spec
// names for backwards compatibility (2025-11-25 "Transports": 400, 404,
// 405), and for sse-first a GET that is no event stream.
func fallsBack(err error) bool {
	var se *wire.HTTPStatusError
	return errors.As(err, &se) && (se.StatusCode == http.StatusBadRequest || se.StatusCode == http.StatusNotFound ||
		se.StatusCode == http.StatusMethodNotAllowed || se.StatusCode == http.StatusNotAcceptable)
}

// streamableUpstream is MCP Streamable HTTP (2025-03-26 and later).
type streamableUpstream struct {
	p    *proxy
	sess *wire.HTTPSession

	listenOnce sync.Once
}

func (p *proxy) newStreamable() (*streamableUpstream, error) {
	sess, err := wire.NewHTTPSession(p.req.Target, p.hc, p.auth.Token)
	if err != nil {
		return nil, &client.UsageError{Err: err}
	}
	sess.Header = p.req.Header
	return &streamableUpstream{p: p, sess: sess}, nil
}

func (u *streamableUpstream) send(ctx context.Context, m *wire.Message) (readFunc, error) {
	var reply *wire.ForwardReply
	err := u.p.auth.Do(ctx, m.Method, func(ctx context.Context) error {
		var err error
		reply, err = u.sess.Forward(ctx, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	if m.Method == methodInitialized {
		// The session is open: listen for the server's own messages, and
		// send nothing more before the stream is open (or refused): what
		// the next request makes the server say outside its response
		// would otherwise be lost.
		u.listenOnce.Do(func() {
			opened := make(chan struct{})
			var once sync.Once
			u.p.spawn(func(ctx context.Context) { u.listen(ctx, func() { once.Do(func() { close(opened) }) }) })
			select {
			case <-opened:
			case <-ctx.Done():
			case <-time.After(listenOpenWait):
			}
		})
	}
	if reply == nil {
		return nil, nil
	}
	return reply.Read, nil
}

// listenOpenWait bounds the wait for the GET stream to open.
const listenOpenWait = 5 * time.Second

// listen keeps the GET stream open for the session's life.
func (u *streamableUpstream) listen(ctx context.Context, opened func()) {
	defer opened()
	err := u.p.auth.Do(ctx, "GET stream", func(ctx context.Context) error {
		return u.sess.Listen(ctx, u.p.fromServer, opened)
	})
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, wire.ErrNoListenStream):
		logger(u.p.cl).Debug("the server offers no GET stream")
	case err != nil:
		u.p.cl.UI.Warn(fmt.Sprintf("the stream of the server's own messages ended: %v", err))
	}
}

func (u *streamableUpstream) close(ctx context.Context) {
	if err := u.sess.Close(ctx); err != nil {
		logger(u.p.cl).Debug("cannot end the MCP session", "err", err)
	}
}

// methodInitialized is the notification that ends the handshake.
const methodInitialized = "notifications/initialized"

// methodCancelled cancels a request (MCP "Cancellation").
const methodCancelled = "notifications/cancelled"

// legacyUpstream is the HTTP+SSE transport of MCP 2024-11-05.
type legacyUpstream struct {
	p    *proxy
	sess *wire.LegacySSESession
}

// connectLegacy opens the SSE stream and reads it until it ends; a stream
// that ends fails the requests under way.
func (p *proxy) connectLegacy(ctx context.Context) (*legacyUpstream, error) {
	sess, err := wire.NewLegacySSESession(p.req.Target, p.hc, p.auth.Token)
	if err != nil {
		return nil, &client.UsageError{Err: err}
	}
	sess.SetHeader(p.req.Header)
	if err := p.auth.Do(ctx, "GET (SSE)", sess.Connect); err != nil {
		return nil, err
	}
	u := &legacyUpstream{p: p, sess: sess}
	p.spawn(func(ctx context.Context) {
		err := sess.Read(p.fromServer)
		if ctx.Err() == nil {
			p.cl.UI.Warn(fmt.Sprintf("the server's SSE stream ended: %v", err))
			p.failPending("the server's SSE stream ended")
		}
	})
	return u, nil
}

func (u *legacyUpstream) send(ctx context.Context, m *wire.Message) (readFunc, error) {
	return nil, u.p.auth.Do(ctx, m.Method, func(ctx context.Context) error { return u.sess.Send(ctx, m) })
}

func (u *legacyUpstream) close(context.Context) { _ = u.sess.Close() }

// connect chooses the transport with the client's first message, m:
// http-first posts it and on a 400, 404 or 405 opens the SSE stream
// instead; sse-first opens the stream and on a 4xx posts it. It returns
// the upstream and read as send does.
func (p *proxy) connect(ctx context.Context, m *wire.Message) (upstream, readFunc, error) {
	tryHTTP := func() (upstream, readFunc, error) {
		u, err := p.newStreamable()
		if err != nil {
			return nil, nil, err
		}
		read, err := u.send(ctx, m)
		if m.Method == wire.MethodInitialize && refusesInitialize(err) {
			// Perhaps a server of MCP 2026-07-28 only: bridge the client
			// to it (proxy_bridge.go); else the refusal stands.
			if b, read, berr := p.bridge(ctx, m); berr == nil {
				return b, read, nil
			} else {
				logger(p.cl).Debug("the server refused initialize and is no MCP 2026-07-28 server either", "err", berr)
			}
		}
		return u, read, err
	}
	trySSE := func() (upstream, readFunc, error) {
		// The stream lives as long as the proxy, not the first request.
		u, err := p.connectLegacy(p.ctx)
		if err != nil {
			return nil, nil, err
		}
		read, err := u.send(ctx, m)
		return u, read, err
	}
	switch p.req.Transport {
	case HTTPOnly:
		return tryHTTP()
	case SSEOnly:
		return trySSE()
	case SSEFirst:
		u, read, err := trySSE()
		if fallsBack(err) {
			logger(p.cl).Info("the server refused the SSE transport; trying Streamable HTTP", "err", err)
			u, read, err2 := tryHTTP()
			if err2 != nil {
				err2 = fmt.Errorf("over HTTP+SSE: %v; over Streamable HTTP: %w", err, err2)
			}
			return u, read, err2
		}
		return u, read, err
	}
	u, read, err := tryHTTP()
	if fallsBack(err) {
		logger(p.cl).Info("the server refused Streamable HTTP; trying the HTTP+SSE transport", "err", err)
		u, read, err2 := trySSE()
		if err2 != nil {
			err2 = fmt.Errorf("over Streamable HTTP: %v; over HTTP+SSE: %w", err, err2)
		}
		return u, read, err2
	}
	return u, read, err
}
