package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// A stdio backend with process "shared" is one process serving every
// caller (see doc.go for the decisions). serve is the process's only MCP
// client: it initializes it once (again after a restart) and answers each
// caller's initialize from that result. Every request gets an id of
// serve's (unique on the process) and, when it has one, a progress token
// of serve's; the answer and the progress notifications get the caller's
// back. A request from the process goes to the caller whose request is in
// flight when exactly one caller has any; otherwise serve answers it with
// an error. MCP 2026-07-28 requests (no session) are served by the same
// process, each as a caller of its own.

// MaxInFlightPerCaller bounds the requests one caller (subject and client
// id) has in flight on a shared process, so that one caller cannot take
// all of MaxInFlight.
const MaxInFlightPerCaller = 32

// sharedVersion is the MCP revision serve asks a shared process for; the
// process may answer with an older one.
const sharedVersion = "2025-11-25"

// legacyVersions are the revisions negotiated by initialize, newest first.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// sharedBackend is a stdio backend's one process and the callers on it.
type sharedBackend struct {
	m      *Mount
	nextID atomic.Int64

	mu      sync.Mutex // held while a process starts and is initialized
	proc    *process
	back    backoff
	init    map[string]json.RawMessage // the process's initialize result
	version string                     // the revision it negotiated
	closed  bool

	cmu      sync.Mutex
	conns    map[*sharedConn]bool
	subs     map[string]map[*sharedConn]bool // resources/subscribe by URI
	inFlight map[string]int                  // requests in flight by caller
	parked   map[string]*parkedCall          // by requestState
}

// parkedCall is a request of an MCP 2026-07-28 caller whose process asked
// the caller something: the caller got input_required and the process's
// request waits for the caller's retry (MCP 2026-07-28 "Multi Round-Trip").
type parkedCall struct {
	p     *process
	s     *pstream
	q     json.RawMessage // the process's request id
	owner string
	timer *time.Timer
	// queue are the process's further requests that came while the call
	// waited (an SDK asking for several inputs at once): each is asked in
	// a round of its own after the caller's retry.
	queue []frame
}

// maxQueued bounds a parked call's queue.
const maxQueued = 16

func newSharedBackend(m *Mount) *sharedBackend {
	return &sharedBackend{m: m, conns: map[*sharedConn]bool{}, subs: map[string]map[*sharedConn]bool{}, inFlight: map[string]int{}, parked: map[string]*parkedCall{}}
}

// shared is the mount's shared process, made on first use.
func (m *Mount) sharedProcess() *sharedBackend {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shared == nil {
		m.shared = newSharedBackend(m)
	}
	return m.shared
}

// sharedConn is one caller on a shared process: an MCP session, or one
// MCP 2026-07-28 request (stateless).
type sharedConn struct {
	sb        *sharedBackend
	owner     string // ownerOf the caller
	stateless bool

	mu       sync.Mutex
	caps     map[string]json.RawMessage // the capabilities its initialize declared
	listener *pstream                   // its GET stream, if open
	subs     []string
	ended    bool
	// kinds are the list_changed notifications a subscriptions/listen
	// stream asked for (nil: a session, which gets them all); listenID is
	// that request's id, put in each notification's _meta.
	kinds    map[string]bool
	listenID json.RawMessage
}

func (sb *sharedBackend) conn(c Caller, stateless bool) *sharedConn {
	sc := &sharedConn{sb: sb, owner: ownerOf(c), stateless: stateless}
	sb.cmu.Lock()
	sb.conns[sc] = true
	sb.cmu.Unlock()
	return sc
}

// running returns the live process, starting and initializing one (after
// the backoff) when there is none.
func (sb *sharedBackend) running(ctx context.Context) (*process, error) {
	name := sb.m.b.Name
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.closed {
		return nil, backendErr(name, "is shutting down")
	}
	if sb.proc != nil && !sb.proc.exited() {
		return sb.proc, nil
	}
	if err := sb.back.await(ctx, name, sb.proc); err != nil {
		return nil, err
	}
	p, err := startProcess(sb.m, "", sb)
	if err != nil {
		return nil, err
	}
	sb.proc = p
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": sb.nextID.Add(1), "method": wire.MethodInitialize, "params": map[string]any{
		"protocolVersion": sharedVersion,
		"capabilities":    map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
		"clientInfo":      map[string]any{"name": "agentauth-gateway", "version": "1"},
	}})
	result, err := p.handshake(ctx, init, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "by serve")
	var r map[string]json.RawMessage
	if err == nil && json.Unmarshal(result, &r) != nil {
		err = backendErr(name, "answered initialize with a result that is not an object")
	}
	if err != nil {
		// A crash for the backoff: the next caller does not start it again at once.
		p.stdin.Close()
		signalGroup(p.cmd, true)
		return nil, err
	}
	v, _ := wire.JSONString(r["protocolVersion"])
	sb.init, sb.version = r, v
	return p, nil
}

// close ends the process (its process group) for good.
func (sb *sharedBackend) close() {
	sb.mu.Lock()
	sb.closed = true
	p := sb.proc
	sb.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// live is the running process, or nil.
func (sb *sharedBackend) live() *process {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.proc == nil || sb.proc.exited() {
		return nil
	}
	return sb.proc
}

// take counts a request of caller owner, false past MaxInFlightPerCaller.
func (sb *sharedBackend) take(owner string) bool {
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	if sb.inFlight[owner] >= MaxInFlightPerCaller {
		return false
	}
	sb.inFlight[owner]++
	return true
}

func (sb *sharedBackend) release(owner string) {
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	if sb.inFlight[owner]--; sb.inFlight[owner] <= 0 {
		delete(sb.inFlight, owner)
	}
}
