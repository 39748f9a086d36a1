package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// A stdio backend is one process per MCP session speaking newline-delimited
// JSON-RPC on stdin and stdout (MCP "Transports", stdio). Its answers are
// routed back by request id; notifications/progress by progress token;
// server-to-client requests and other notifications to the session's GET
// stream when one is open, else to the stream of the oldest request in
// flight (MCP Streamable HTTP lets a server send them on either).
//
// A process that exits is started again with exponential backoff (see
// restartDelay), and the session's initialize and notifications/initialized
// are replayed to it, so the client's session survives a crash; requests in
// flight at the crash get an error naming the backend.

// inheritedEnv are the variables of serve's environment a stdio backend
// gets; anything else (serve's own secrets) stays out unless env names it.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT", "NODE_PATH"}

// Restart backoff: the first restart is at once, then each one waits twice
// as long, up to maxRestartDelay; a process that ran for stableRun resets it.
const (
	firstRestartDelay = 100 * time.Millisecond
	maxRestartDelay   = 30 * time.Second
	stableRun         = time.Minute
	// streamQueue bounds the messages waiting for one client stream; a
	// full queue holds the process's output back (backpressure).
	streamQueue = 64
)

type stdioConn struct {
	m      *Mount
	caller Caller

	mu          sync.Mutex
	proc        *process
	init        []byte // the client's initialize request
	initialized []byte // its notifications/initialized
	crashes     int
	notBefore   time.Time
	envToken    string
	ended       bool
	everStarted bool // a process ran before: a new one gets the session's initialize again
}

func newStdioConn(m *Mount, c Caller) *stdioConn { return &stdioConn{m: m, caller: c} }

func restartDelay(crashes int) time.Duration {
	if crashes <= 1 {
		return 0
	}
	d := firstRestartDelay << min(crashes-2, 20)
	return min(d, maxRestartDelay)
}

// running returns the live process, starting one (after the backoff, and
// replaying the session's initialize) when there is none.
func (c *stdioConn) running(ctx context.Context) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil, backendErr(c.m.b.Name, "session ended")
	}
	if c.proc != nil && !c.proc.exited() {
		return c.proc, nil
	}
	if c.proc != nil && !c.proc.killed.Load() {
		if time.Since(c.proc.started) > stableRun {
			c.crashes = 0
		}
		c.crashes++
		c.notBefore = time.Now().Add(restartDelay(c.crashes))
	}
	if wait := time.Until(c.notBefore); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, backendErr(c.m.b.Name, "exited and is being restarted (next attempt in %s)", wait.Round(time.Millisecond))
		case <-t.C:
		}
	}
	restart := c.everStarted
	p, err := startProcess(c.m, c.envToken)
	if err != nil {
		return nil, err
	}
	c.proc, c.everStarted = p, true
	if restart && c.init != nil {
		if err := c.replay(ctx, p); err != nil {
			p.kill()
			return nil, err
		}
	}
	return p, nil
}

// replay sends the session's initialize to a restarted process and waits
// for its answer, then sends notifications/initialized.
func (c *stdioConn) replay(ctx context.Context, p *process) error {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(c.init, &m)
	s, err := p.register(idKey(m.ID), "")
	if err != nil {
		return err
	}
	defer p.unregister(s)
	if err := p.write(c.init); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.m.timeout)
	defer cancel()
	for {
		select {
		case f, ok := <-s.ch:
			if !ok {
				return backendErr(c.m.b.Name, "exited again while being restarted")
			}
			var r wire.Message
			if json.Unmarshal(f.data, &r) == nil && r.IsResponse() {
				if r.Error != nil {
					return backendErr(c.m.b.Name, "refused the session's initialize after a restart: %s", r.Error.Message)
				}
				if c.initialized != nil {
					return p.write(c.initialized)
				}
				return nil
			}
		case <-ctx.Done():
			return backendErr(c.m.b.Name, "did not answer initialize within %s after a restart", c.m.timeout)
		}
	}
}

// setToken makes the process run with the upstream token tok in its
// environment: a process started with another one is ended, and the next
// request starts one with tok (replaying initialize).
func (c *stdioConn) setToken(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tok == c.envToken {
		return
	}
	c.envToken = tok
	if c.proc != nil {
		go c.proc.kill()
		c.proc = nil
	}
}

func (c *stdioConn) post(ctx context.Context, msg *wire.Message, raw []byte, _ http.Header) (*reply, error) {
	if msg.Method == wire.MethodInitialize {
		c.mu.Lock()
		if c.init == nil {
			c.init = append([]byte(nil), raw...)
		}
		c.mu.Unlock()
	} else if msg.Method == "notifications/initialized" {
		c.mu.Lock()
		c.initialized = append([]byte(nil), raw...)
		c.mu.Unlock()
	}
	p, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	if !msg.IsRequest() {
		if err := p.write(raw); err != nil {
			return nil, err
		}
		return &reply{status: http.StatusAccepted, next: func() (frame, error) { return frame{}, io.EOF }, close: func() {}}, nil
	}
	s, err := p.register(msg.ID.String(), progressToken(msg.Params))
	if err != nil {
		return nil, err
	}
	if err := p.write(raw); err != nil {
		p.unregister(s)
		return nil, err
	}
	return &reply{status: http.StatusOK, stream: true, flexible: true, next: s.reader(ctx, p, c.m.b.Name, true), close: func() {
		p.unregister(s)
		p.mu.Lock()
		answered := s.answered
		p.mu.Unlock()
		if !answered && !p.exited() {
			// The client went away (or timed out) first: tell the process
			// (MCP "Cancellation"), as an HTTP backend learns from its
			// closed connection.
			if m, err := wire.NewNotification("notifications/cancelled", map[string]any{"requestId": msg.ID, "reason": "the client went away"}); err == nil {
				if b, err := json.Marshal(m); err == nil {
					p.write(b)
				}
			}
		}
	}}, nil
}

// listen opens the session's GET stream; it outlives the process: when one
// exits, the stream goes on from the restarted one.
func (c *stdioConn) listen(ctx context.Context, _ http.Header) (*reply, error) {
	p, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	s, err := p.listen()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	read := s.reader(ctx, p, c.m.b.Name, false)
	next := func() (frame, error) {
		for {
			f, err := read()
			if err == nil || ctx.Err() != nil {
				return f, err
			}
			c.mu.Lock()
			ended := c.ended
			c.mu.Unlock()
			if ended {
				return frame{}, io.EOF
			}
			np, err := c.running(ctx)
			if err != nil {
				return frame{}, err
			}
			ns, err := np.listen()
			if err != nil {
				return frame{}, err
			}
			mu.Lock()
			p, s, read = np, ns, ns.reader(ctx, np, c.m.b.Name, false)
			mu.Unlock()
		}
	}
	return &reply{status: http.StatusOK, stream: true, next: next, close: func() {
		mu.Lock()
		defer mu.Unlock()
		p.unregister(s)
	}}, nil
}

func (c *stdioConn) end(context.Context) {
	c.mu.Lock()
	c.ended = true
	p := c.proc
	c.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// process is one running stdio server.
type process struct {
	m       *Mount
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	started time.Time
	done    chan struct{}
	killed  atomic.Bool // ended by serve, not crashed

	mu       sync.Mutex
	pending  map[string]*pstream
	progress map[string]*pstream
	order    []*pstream // requests in flight, oldest first
	listener *pstream
	err      error // why it exited
}

// pstream is one client stream fed by the process's reader.
type pstream struct {
	key      string
	progress string
	ch       chan frame
	gone     chan struct{} // closed when the client stops reading
	goneOnce sync.Once
	answered bool
}

func startProcess(m *Mount, token string) (*process, error) {
	b := m.b
	cmd := exec.Command(b.Command, b.Args...)
	cmd.Dir = b.Cwd
	env := []string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(b.Env))
	for k := range b.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+b.Env[k])
	}
	if b.UpstreamEnv != "" && token != "" {
		env = append(env, b.UpstreamEnv+"="+token)
	}
	cmd.Env = env
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, backendErr(b.Name, "cannot be started: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, backendErr(b.Name, "cannot be started: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, backendErr(b.Name, "cannot be started: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, backendErr(b.Name, "cannot be started: %v", err)
	}
	p := &process{m: m, cmd: cmd, stdin: stdin, started: time.Now(), done: make(chan struct{}),
		pending: map[string]*pstream{}, progress: map[string]*pstream{}}
	m.g.log.Info("backend started", "backend", b.Name, "pid", cmd.Process.Pid)
	go p.drainStderr(stderr)
	go p.read(stdout)
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// read routes the process's messages until it exits; an over-long line
// ends the process (its stream cannot be resynchronised).
func (p *process) read(stdout io.Reader) {
	name := p.m.b.Name
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), int(p.m.maxMsg))
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &head) != nil {
			p.m.g.log.Warn("backend wrote a line that is not JSON-RPC; skipped", "backend", name, "bytes", len(line))
			continue
		}
		p.route(frame{data: append([]byte(nil), line...)}, head.ID, head.Method, head.Params.ProgressToken)
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = backendErr(name, "sent a message over %d bytes", p.m.maxMsg)
		p.m.g.log.Warn("backend sent an oversized message; ending it", "backend", name, "limit", p.m.maxMsg)
	}
	// A process that closed its stdout, or broke the framing, is of no
	// more use: end its group and collect it.
	p.stdin.Close()
	signalGroup(p.cmd, true)
	werr := p.cmd.Wait()
	if err == nil {
		err = backendErr(name, "exited (%v)", exitText(werr))
	}
	p.m.g.log.Warn("backend exited", "backend", name, "err", exitText(werr))
	p.mu.Lock()
	p.err = err
	streams := append([]*pstream(nil), p.order...)
	if p.listener != nil {
		streams = append(streams, p.listener)
	}
	p.pending, p.progress, p.order, p.listener = map[string]*pstream{}, map[string]*pstream{}, nil, nil
	p.mu.Unlock()
	for _, s := range streams {
		close(s.ch)
	}
	close(p.done)
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// route hands one message to its stream, waiting while that stream's
// queue is full (backpressure) unless its client is gone.
func (p *process) route(f frame, id json.RawMessage, method string, token json.RawMessage) {
	p.mu.Lock()
	var s *pstream
	response := method == "" && len(id) > 0
	switch {
	case response:
		s = p.pending[idKey(id)]
		if s != nil {
			delete(p.pending, s.key)
			if s.progress != "" {
				delete(p.progress, s.progress)
			}
			p.order = removeStream(p.order, s)
			s.answered = true
		}
	case method == "notifications/progress" && len(token) > 0:
		s = p.progress[idKey(token)]
	}
	if s == nil && !response {
		s = p.listener
		if s == nil && len(p.order) > 0 {
			s = p.order[0]
		}
	}
	p.mu.Unlock()
	if s == nil {
		p.m.g.log.Debug("backend message with no stream to take it; dropped", "backend", p.m.b.Name, "method", method)
		return
	}
	select {
	case s.ch <- f:
	case <-s.gone:
	}
	if response {
		close(s.ch)
	}
}

func removeStream(list []*pstream, s *pstream) []*pstream {
	for i, o := range list {
		if o == s {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

func (p *process) register(key, progress string) (*pstream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.err != nil || p.exited():
		return nil, backendErr(p.m.b.Name, "exited")
	case len(p.pending) >= MaxInFlight:
		return nil, backendErr(p.m.b.Name, "has %d requests in flight, the most serve queues; try again later", MaxInFlight)
	case p.pending[key] != nil:
		return nil, errDuplicateID
	}
	s := &pstream{key: key, progress: progress, ch: make(chan frame, streamQueue), gone: make(chan struct{})}
	p.pending[key] = s
	p.order = append(p.order, s)
	if progress != "" {
		p.progress[progress] = s
	}
	return s, nil
}

var errDuplicateID = errors.New("a request with this id is in flight")

func (p *process) listen() (*pstream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener != nil {
		return nil, errListening
	}
	if p.err != nil {
		return nil, backendErr(p.m.b.Name, "exited")
	}
	p.listener = &pstream{ch: make(chan frame, streamQueue), gone: make(chan struct{})}
	return p.listener, nil
}

var errListening = errors.New("the session already has a GET stream open")

// unregister drops a stream whose client stopped reading.
func (p *process) unregister(s *pstream) {
	s.goneOnce.Do(func() { close(s.gone) })
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener == s {
		p.listener = nil
		return
	}
	if p.pending[s.key] == s {
		delete(p.pending, s.key)
		if s.progress != "" {
			delete(p.progress, s.progress)
		}
		p.order = removeStream(p.order, s)
	}
}

// reader reads a stream's frames; for a request, io.EOF follows its answer.
func (s *pstream) reader(ctx context.Context, p *process, name string, request bool) func() (frame, error) {
	return func() (frame, error) {
		select {
		case f, ok := <-s.ch:
			if ok {
				return f, nil
			}
			if request {
				p.mu.Lock()
				answered := s.answered
				p.mu.Unlock()
				if answered {
					return frame{}, io.EOF
				}
				<-p.done
				return frame{}, p.err
			}
			return frame{}, io.EOF
		case <-ctx.Done():
			return frame{}, ctx.Err()
		}
	}
}

func (p *process) write(raw []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.stdin.Write(append(raw[:len(raw):len(raw)], '\n')); err != nil {
		return backendErr(p.m.b.Name, "exited")
	}
	return nil
}

// kill ends the process and its process group (MCP "Transports", stdio,
// Shutdown: close stdin, then SIGTERM, then SIGKILL).
func (p *process) kill() {
	p.killed.Store(true)
	p.stdin.Close()
	select {
	case <-p.done:
		return
	case <-time.After(500 * time.Millisecond):
	}
	signalGroup(p.cmd, false)
	select {
	case <-p.done:
		return
	case <-time.After(2 * time.Second):
	}
	signalGroup(p.cmd, true)
}

// drainStderr logs the process's stderr at debug level, line by line,
// bounded in length.
func (p *process) drainStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 512 {
			line = line[:512] + "…"
		}
		p.m.g.log.Debug("backend stderr", "backend", p.m.b.Name, "line", line)
	}
	io.Copy(io.Discard, r)
}

// idKey is a JSON-RPC id or progress token as a map key.
func idKey(raw json.RawMessage) string { return string(bytes.TrimSpace(raw)) }

// progressToken is params._meta.progressToken of a request, or "".
func progressToken(params json.RawMessage) string {
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return idKey(p.Meta.ProgressToken)
}
