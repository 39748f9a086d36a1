package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// LegacySSESession is a client of the HTTP+SSE transport of MCP
// 2024-11-05 ("Transports"), which servers of that revision still speak
// and later revisions keep for backwards compatibility: a GET opens an
// event stream whose first event, "endpoint", names the URL to POST each
// message to; every message of the server, responses included, arrives on
// that stream.
type LegacySSESession struct {
	// get sends the GET, post the POSTs: HTTPSessions for their headers,
	// token and error statuses (no Mcp-* headers: that revision has none).
	get, post *HTTPSession
	stream    io.ReadCloser
	events    *SSEReader
}

// NewLegacySSESession prepares a session with the SSE endpoint (an http
// or https URL); client and token as for NewHTTPSession.
func NewLegacySSESession(endpoint string, client *http.Client, token func(context.Context) (string, error)) (*LegacySSESession, error) {
	get, err := NewHTTPSession(endpoint, client, token)
	if err != nil {
		return nil, err
	}
	return &LegacySSESession{get: get}, nil
}

// SetHeader adds h to every request of the session.
func (s *LegacySSESession) SetHeader(h http.Header) { s.get.Header = h }

// Connect opens the event stream and waits for the endpoint event. The
// endpoint must be on the stream's origin: the session's token goes there.
// Errors are those of HTTPSession.Call (*HTTPAuthError, *HTTPStatusError).
func (s *LegacySSESession) Connect(ctx context.Context) error {
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	resp, err := s.get.do(ctx, http.MethodGet, nil, nil, h)
	if err != nil {
		return err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		resp.Body.Close()
		return &HTTPStatusError{StatusCode: http.StatusNotAcceptable, Excerpt: fmt.Sprintf("the GET was answered with %q, not an event stream", resp.Header.Get("Content-Type"))}
	}
	s.stream, s.events = resp.Body, NewSSEReader(resp.Body, s.get.limit)
	for {
		ev, err := s.events.Next()
		if err != nil {
			resp.Body.Close()
			if err == io.EOF {
				err = errors.New("the server ended the stream before naming its endpoint")
			}
			return fmt.Errorf("cannot read the SSE endpoint event: %w", err)
		}
		if ev.Type != "endpoint" {
			continue
		}
		base, _ := url.Parse(s.get.endpoint)
		ref, err := url.Parse(ev.Data)
		if err != nil {
			resp.Body.Close()
			return fmt.Errorf("cannot use the SSE endpoint %q: %w", ev.Data, err)
		}
		post := base.ResolveReference(ref).String()
		if !SameOrigin(post, s.get.endpoint) {
			resp.Body.Close()
			return fmt.Errorf("cannot use the SSE endpoint %q: it is not on %s, where the token is for", RedactTarget(post), Origin(s.get.endpoint))
		}
		s.post = &HTTPSession{endpoint: post, client: s.get.client, token: s.get.token, limit: s.get.limit, Header: s.get.Header}
		return nil
	}
}

// Read hands each message on the stream to deliver until the stream ends
// (io.EOF) or fails.
func (s *LegacySSESession) Read(deliver func(m *Message, raw []byte) error) error {
	for {
		ev, err := s.events.Next()
		if err != nil {
			return err
		}
		if ev.Type != "message" || ev.Data == "" {
			continue
		}
		raw := []byte(ev.Data)
		m, err := decodeMessage(raw)
		if err != nil {
			return err
		}
		if err := deliver(m, raw); err != nil {
			return err
		}
	}
}

// Send posts one message to the endpoint; the server answers 202 and
// sends any response on the stream.
func (s *LegacySSESession) Send(ctx context.Context, m *Message) error {
	resp, err := s.post.post(ctx, m, nil)
	if err != nil {
		return err
	}
	return drain(resp)
}

// Close ends the stream.
func (s *LegacySSESession) Close() error {
	if s.stream == nil {
		return nil
	}
	return s.stream.Close()
}
