package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// proxy --listen: the bridge as a Streamable HTTP endpoint (MCP
// 2025-11-25 "Transports") on loopback for local clients that speak HTTP
// but not OAuth, at a URL that carries a secret: callers without it are
// refused (proxy_listenauth.go). Each client session (an initialize without
// Mcp-Session-Id) is a bridge of its own (Run over pipes, with its own
// session at the target); the credential is shared. A request's answer
// comes on its POST as an event stream, with what the server sends
// meanwhile; what the server sends outside any request goes to the
// client's GET stream, or to a POST stream under way.

// Bounds of proxy --listen.
const (
	// maxListenSessions bounds the client sessions: a new one beyond is
	// refused (503) until one ends.
	maxListenSessions = 16
	// listenStreamQueue bounds the messages waiting for one stream; a
	// message for a stream that is full is dropped and logged.
	listenStreamQueue = 64
	// EndpointPath is where proxy --listen serves MCP, under its secret
	// (Server.Path).
	EndpointPath = "/mcp"
)

// Server serves the bridge over HTTP; build it with NewServer.
type Server struct {
	cl   *client.Client
	req  Request
	auth *client.SharedAuth
	ctx  context.Context
	// secret is the first segment of the endpoint's path
	// (proxy_listenauth.go).
	secret string

	mu       sync.Mutex
	sessions map[string]*listenSession
	// stateless is the id of the session of MCP 2026-07-28 requests.
	stateless string
	wg        sync.WaitGroup
}

// NewServer prepares the endpoint serving req for cl's user, with its
// secret (Path, URL): a new one, or the one kept in secretFile when it is
// not empty (loadOrMakeSecret); its sessions end when ctx does (Wait
// waits for them).
func NewServer(ctx context.Context, cl *client.Client, req Request, secretFile string) (*Server, error) {
	if !client.IsHTTPTarget(req.Target) {
		return nil, client.Usagef("proxy needs an http or https MCP server URL, not %q", wire.RedactTarget(req.Target))
	}
	secret, err := loadOrMakeSecret(secretFile)
	if err != nil {
		return nil, err
	}
	return &Server{cl: cl, req: req, auth: cl.NewSharedAuth(ctx, req.Target, req.Choices), ctx: ctx, secret: secret,
		sessions: map[string]*listenSession{}}, nil
}

// Wait waits for the sessions' bridges to end their sessions at the target.
func (s *Server) Wait() { s.wg.Wait() }

// listenSession is one client session: a bridge and the routing of what
// it writes.
type listenSession struct {
	id string
	in *io.PipeWriter

	mu      sync.Mutex
	waiting map[string]chan []byte // POSTed requests' answers, by id
	get     chan []byte            // the GET stream, or nil
	posts   []chan []byte          // POST streams under way
	done    chan struct{}
}

// ServeHTTP refuses a request without the secret (403), then serves MCP
// at Path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := s.authenticate(r.URL.Path)
	if !ok {
		refuseCaller(w)
		return
	}
	if rest != EndpointPath {
		http.Error(w, "not found: the MCP endpoint is the URL proxy --listen printed, ending in "+EndpointPath, http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.listen(w, r)
	case http.MethodDelete:
		sess := s.session(w, r)
		if sess == nil {
			return
		}
		s.end(sess)
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// session is the request's session (Mcp-Session-Id), or nil after an
// error answer.
func (s *Server) session(w http.ResponseWriter, r *http.Request) *listenSession {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		http.Error(w, "bad request: no Mcp-Session-Id; initialize first", http.StatusBadRequest)
		return nil
	}
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess == nil {
		http.Error(w, "not found: no such session", http.StatusNotFound)
	}
	return sess
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		http.Error(w, "unsupported media type: POST application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, wire.DefaultMaxMessageSize+1))
	if err != nil || len(body) > wire.DefaultMaxMessageSize {
		http.Error(w, "bad request: the body cannot be read or is over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	m, rpcErr := wire.Decode(body)
	if rpcErr != nil {
		writeJSONError(w, http.StatusBadRequest, rpcErr)
		return
	}
	var sess *listenSession
	switch {
	case r.Header.Get("Mcp-Session-Id") == "" && m.Method == wire.MethodInitialize:
		if sess = s.open(); sess == nil {
			http.Error(w, "service unavailable: too many sessions", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Mcp-Session-Id", sess.id)
	case r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") == wire.MCPStatelessVersion:
		// MCP 2026-07-28 has no sessions: its requests share one bridge.
		if sess = s.statelessSession(); sess == nil {
			http.Error(w, "service unavailable: too many sessions", http.StatusServiceUnavailable)
			return
		}
	default:
		if sess = s.session(w, r); sess == nil {
			return
		}
	}
	line := wire.Compact(body)
	if !m.IsRequest() {
		if _, err := sess.in.Write(append(line, '\n')); err != nil {
			http.Error(w, "not found: the session ended", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer := make(chan []byte, 1)
	stream := make(chan []byte, listenStreamQueue)
	key := m.ID.String()
	sess.mu.Lock()
	if _, dup := sess.waiting[key]; dup {
		sess.mu.Unlock()
		writeJSONError(w, http.StatusBadRequest, wire.Errorf(wire.CodeInvalidRequest, "invalid request: id %s is already in use", key))
		return
	}
	if len(sess.waiting) >= maxProxyInFlight {
		sess.mu.Unlock()
		http.Error(w, "service unavailable: too many requests under way in this session", http.StatusServiceUnavailable)
		return
	}
	sess.waiting[key] = answer
	sess.posts = append(sess.posts, stream)
	sess.mu.Unlock()
	defer sess.forget(key, stream)
	if _, err := sess.in.Write(append(line, '\n')); err != nil {
		http.Error(w, "not found: the session ended", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush(w)
	for {
		select {
		case msg := <-stream:
			writeEvent(w, msg)
		case msg := <-answer:
			writeEvent(w, msg)
			return
		case <-r.Context().Done():
			return
		case <-sess.done:
			return
		}
	}
}

// listen is the GET stream: what the server sends outside any request.
func (s *Server) listen(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "not acceptable: GET opens a text/event-stream", http.StatusNotAcceptable)
		return
	}
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	stream := make(chan []byte, listenStreamQueue)
	sess.mu.Lock()
	if sess.get != nil {
		sess.mu.Unlock()
		http.Error(w, "conflict: the session's GET stream is already open", http.StatusConflict)
		return
	}
	sess.get = stream
	sess.mu.Unlock()
	defer func() {
		sess.mu.Lock()
		sess.get = nil
		sess.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush(w)
	for {
		select {
		case msg := <-stream:
			writeEvent(w, msg)
		case <-r.Context().Done():
			return
		case <-sess.done:
			return
		}
	}
}

// statelessSession is the bridge MCP 2026-07-28 requests share, opened
// on first use.
func (s *Server) statelessSession() *listenSession {
	s.mu.Lock()
	sess := s.sessions[s.stateless]
	s.mu.Unlock()
	if sess != nil {
		return sess
	}
	if sess = s.open(); sess != nil {
		s.mu.Lock()
		s.stateless = sess.id
		s.mu.Unlock()
	}
	return sess
}

// open starts a session and its bridge, or returns nil at the bound.
func (s *Server) open() *listenSession {
	var b [18]byte
	_, _ = rand.Read(b[:])
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sess := &listenSession{id: base64.RawURLEncoding.EncodeToString(b[:]), in: inW,
		waiting: map[string]chan []byte{}, done: make(chan struct{})}
	s.mu.Lock()
	if len(s.sessions) >= maxListenSessions {
		s.mu.Unlock()
		return nil
	}
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := serve(s.ctx, s.cl, s.req, s.auth, inR, outW); err != nil {
			s.cl.UI.Warn(fmt.Sprintf("a session of the proxy ended: %v", err))
		}
		outW.Close()
		inR.Close()
		s.end(sess)
	}()
	go func() {
		defer s.wg.Done()
		sess.route(s.cl, outR)
	}()
	return sess
}

// end forgets a session and ends its bridge (stdin closed: the bridge
// cancels what is under way and ends the session at the target).
func (s *Server) end(sess *listenSession) {
	s.mu.Lock()
	if s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
		close(sess.done)
	}
	s.mu.Unlock()
	sess.in.Close()
}

// route hands each message the bridge writes to the stream it belongs on:
// a response to the POST that sent its request; anything else to the GET
// stream, else to a POST stream under way, else nowhere (logged).
func (sess *listenSession) route(cl *client.Client, out io.Reader) {
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		line = line[:len(line)-1]
		m, rpcErr := wire.Decode(line)
		if rpcErr != nil {
			continue // the bridge writes only messages
		}
		sess.mu.Lock()
		var to chan []byte
		if m.IsResponse() {
			to = sess.waiting[m.ID.String()]
		} else if to = sess.get; to == nil && len(sess.posts) > 0 {
			to = sess.posts[0]
		}
		sess.mu.Unlock()
		select {
		case to <- line:
		default:
			logger(cl).Warn("proxy --listen: a message of the server had no stream to go to, or its stream was full; dropped", "method", m.Method)
		}
	}
}

// forget ends a POST's routing.
func (sess *listenSession) forget(key string, stream chan []byte) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	delete(sess.waiting, key)
	for i, c := range sess.posts {
		if c == stream {
			sess.posts = append(sess.posts[:i], sess.posts[i+1:]...)
			break
		}
	}
}

func writeEvent(w http.ResponseWriter, msg []byte) {
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
	flush(w)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSONError(w http.ResponseWriter, status int, e *wire.Error) {
	b, _ := wire.Encode(wire.NewErrorResponse(wire.ID{}, e))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
