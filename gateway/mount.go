package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/wire"
)

// The state of the gateway and of one backend (Mount), which every layer
// reads, and the record of one session.

// Gateway holds the mounted backends.
type Gateway struct {
	mounts    []*Mount
	done      chan struct{}
	closeOnce sync.Once
	policy    Policy
	broker    Broker
	log       *slog.Logger
	callLog   *slog.Logger
	transport http.RoundTripper
	// pool is transport when it is the default, whose idle connections
	// the sweep and Close end.
	pool     *backendTransport
	tel      *ops.Recorder
	check    func(r *http.Request, m *wire.Message, headerParams map[string]string) (int, *wire.Error)
	assert   func(ctx context.Context, subject, clientID, audience string, scopes []string) (string, error)
	scrubber *scrubber
	// limits counts what callers hold in serve at once (limits.go).
	limits *limiter
}

// Mount is one backend at its path.
type Mount struct {
	g       *Gateway
	b       Backend
	timeout time.Duration
	maxMsg  int64
	tools   *toolCache
	// metadataURL is the RFC 9728 document that challenges name.
	metadataURL string
	// x exchanges callers' tokens for the backend's (identity "exchange").
	x *exchanger
	// target is a plain-http backend's URL for backendTransport.send.
	target *target

	mu       sync.Mutex
	sessions map[string]*session
	// shared is a stdio backend's one process for every caller (process
	// "shared", and MCP 2026-07-28 requests), made on first use.
	shared *sharedBackend
	// stateless is the HTTP backend connection of requests without a
	// session (MCP 2026-07-28, or a backend that keeps none).
	stateless conn
}

// Name is the backend's name; Path where it is mounted.
func (m *Mount) Name() string { return m.b.Name }

func (m *Mount) Path() string { return m.b.Path }

// session is one MCP session of a caller with the backend.
type session struct {
	id    string
	owner string // subject and client id of the caller that initialized it
	conn  conn
	mu    sync.Mutex
	last  time.Time
}

// ownerOf keys a caller for session binding.
func ownerOf(c Caller) string { return c.Subject() + "\x00" + c.ClientID() }

// sessionIdle is how long an unused session is kept; evictIdle how long
// one must have been unused to make room for a new one at the bound.
const (
	sessionIdle = 30 * time.Minute
	evictIdle   = time.Minute
)
