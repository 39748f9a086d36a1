package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// A stdio backend's running process: started with its environment, its
// output read and routed to the client streams, ended with its process
// group (see stdio.go for the session around it).

// process is one running stdio server.
type process struct {
	m       *Mount
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	started time.Time
	done    chan struct{}
	killed  atomic.Bool // ended by serve, not crashed
	// shared is the backend whose one process serves every caller
	// (process "shared"), nil for a session's own process.
	shared *sharedBackend

	mu       sync.Mutex
	pending  map[string]*pstream
	progress map[string]*pstream
	order    []*pstream // requests in flight, oldest first
	listener *pstream
	// serverReqs are a shared process's requests to a caller, by id.
	serverReqs map[string]*sharedConn
	err        error // why it exited
}

// pstream is one client stream fed by the process's reader.
type pstream struct {
	key      string
	progress string
	ch       chan frame
	gone     chan struct{} // closed when the client stops reading
	goneOnce sync.Once
	answered bool
	// A shared process's request: the caller it is for, and the id and
	// progress token the caller chose, put back in what the process sends.
	owner     *sharedConn
	origID    json.RawMessage
	origToken json.RawMessage
	// parked is the requestState of a shared process's request parked
	// for an MCP 2026-07-28 caller's input (see sharedBackend.park).
	parked string
}

func startProcess(m *Mount, token string, shared *sharedBackend) (*process, error) {
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
	p := &process{m: m, cmd: cmd, stdin: stdin, started: time.Now(), done: make(chan struct{}), shared: shared,
		pending: map[string]*pstream{}, progress: map[string]*pstream{}, serverReqs: map[string]*sharedConn{}}
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
	p.pending, p.progress, p.order, p.listener, p.serverReqs = map[string]*pstream{}, map[string]*pstream{}, nil, nil, map[string]*sharedConn{}
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
	if s != nil && s.parked != "" && !response {
		// Waiting for its caller's retry: nobody reads it meanwhile.
		p.mu.Unlock()
		return
	}
	if s == nil && !response && p.shared != nil {
		p.mu.Unlock()
		p.shared.dispatch(p, f, id, method)
		return
	}
	if s == nil && !response {
		s = p.listener
		if s == nil && len(p.order) > 0 {
			s = p.order[0]
		}
	}
	var origID, origToken json.RawMessage
	if s != nil {
		origID, origToken = s.origID, s.origToken
	}
	p.mu.Unlock()
	if s == nil {
		p.m.g.log.Debug("backend message with no stream to take it; dropped", "backend", p.m.b.Name, "method", method)
		return
	}
	switch {
	case response && origID != nil:
		f.data = setMember(f.data, origID, "id")
	case !response && origToken != nil:
		f.data = setMember(f.data, origToken, "params", "progressToken")
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
	return p.registerFor(key, progress, nil, nil, nil)
}

// registerFor registers a request of a shared process's caller owner,
// whose own id and progress token were origID and origToken.
func (p *process) registerFor(key, progress string, owner *sharedConn, origID, origToken json.RawMessage) (*pstream, error) {
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
	s := &pstream{key: key, progress: progress, ch: make(chan frame, streamQueue), gone: make(chan struct{}),
		owner: owner, origID: origID, origToken: origToken}
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

func restartDelay(crashes int) time.Duration {
	if crashes <= 1 {
		return 0
	}
	d := firstRestartDelay << min(crashes-2, 20)
	return min(d, maxRestartDelay)
}

// backoff is the restart schedule of a stdio backend's process, shared by
// the two process modes.
type backoff struct {
	crashes   int
	notBefore time.Time
}

// await waits until a process may be started after prev (nil: none ran
// yet): at once after a process serve ended, else after restartDelay.
func (b *backoff) await(ctx context.Context, name string, prev *process) error {
	if prev != nil && !prev.killed.Load() {
		if time.Since(prev.started) > stableRun {
			b.crashes = 0
		}
		b.crashes++
		b.notBefore = time.Now().Add(restartDelay(b.crashes))
	}
	if wait := time.Until(b.notBefore); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return backendErr(name, "exited and is being restarted (next attempt in %s)", wait.Round(time.Millisecond))
		case <-t.C:
		}
	}
	return nil
}

// handshake sends initialize to a new process and waits for its answer,
// then sends notifications/initialized (when given); it returns the
// initialize result.
func (p *process) handshake(ctx context.Context, init, initialized []byte, when string) (json.RawMessage, error) {
	name := p.m.b.Name
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(init, &m)
	s, err := p.register(idKey(m.ID), "")
	if err != nil {
		return nil, err
	}
	defer p.unregister(s)
	if err := p.write(init); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.m.timeout)
	defer cancel()
	for {
		select {
		case f, ok := <-s.ch:
			if !ok {
				return nil, backendErr(name, "exited while being initialized %s", when)
			}
			var r wire.Message
			if json.Unmarshal(f.data, &r) == nil && r.IsResponse() {
				if r.Error != nil {
					return nil, backendErr(name, "refused initialize %s: %s", when, r.Error.Message)
				}
				if initialized != nil {
					return r.Result, p.write(initialized)
				}
				return r.Result, nil
			}
		case <-ctx.Done():
			return nil, backendErr(name, "did not answer initialize within %s %s", p.m.timeout, when)
		}
	}
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
