package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// Auth scopes: who a token authenticates (PROTOCOL.md "authenticate").
const (
	// AuthScopeConnection: only the connection that sent the token.
	AuthScopeConnection = "connection"
	// AuthScopeHost: every connection; the last token per scheme wins.
	AuthScopeHost = "host"
)

// Options configure a Host.
type Options struct {
	// Config must be resolved (see Config.Resolve).
	Config *Config
	// AuthScope is AuthScopeConnection (default) or AuthScopeHost.
	AuthScope string
	// Logger receives one line per connection open/close and per auth
	// decision, except that the HTTP face's acceptances are logged at
	// Debug and summed up at Info once a minute (when any). Default:
	// discard.
	Logger *slog.Logger
	// HTTPClient fetches metadata and keys and calls introspection.
	HTTPClient *http.Client
	// MaxMessageSize bounds one WebSocket message (default 1 MiB).
	MaxMessageSize int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Version is the server version MCP clients see in serverInfo
	// (default "dev").
	Version string
	// Store keeps the agent sessions (createSession); default a new
	// state.Memory, which dies with the host.
	Store state.Store
	// StoredToken, when set, gives an ACP agent-type method the access
	// token agentauth's own credential store holds for the scheme (the
	// agent signs itself in: ACP authenticate {methodId} without a
	// token); its error says what is missing (the login to run).
	StoredToken func(ctx context.Context, schemeID, resource string, authorizationServers []string) (string, error)
	// Broker, when set, signs sessions in to the config's upstreams (see
	// broker.go).
	Broker *broker.Broker
	// Telemetry, when set, counts connections, validations and refusals
	// and receives the policy_denied audit events (nil: none).
	Telemetry *ops.Recorder
	// ConformanceFixtures adds the MCP conformance suite's fixtures to
	// the HTTP face (mcpserver.Options.Fixtures).
	ConformanceFixtures bool
}

// Host serves the protocol on any number of connections.
type Host struct {
	cfg      *Config
	log      *slog.Logger
	now      func() time.Time
	maxMsg   int64
	version  string
	client   *http.Client
	reqs     atomic.Pointer[requirements] // swapped by Reload
	seq      atomic.Int64                 // the published dialect's serverSeq
	shared   *grantTable                  // the host-wide table when AuthScope is host
	sessions *agentSessions
	// storedToken is Options.StoredToken.
	storedToken func(ctx context.Context, schemeID, resource string, authorizationServers []string) (string, error)
	broker      *broker.Broker
	// dpopProofs bound the HTTP face's DPoP replay cache; zero is
	// resource.DPoPProofLimits (a benchmark sending every proof with one
	// key sets more).
	dpopProofs bounded.Limits
	tel        *ops.Recorder
	// fixtures is Options.ConformanceFixtures.
	fixtures bool

	ctx    context.Context
	cancel context.CancelFunc

	// accepted and refused count the HTTP face's auth decisions since the
	// last summary line (see logSummary).
	accepted, refused atomic.Int64

	mu       sync.Mutex
	conns    map[*session]struct{}
	nextConn uint64
	// revoked holds the revoked ids and the held grants by id.
	revoked *revocations
	closed  bool           // set by Close: no new connection is served
	serving sync.WaitGroup // ServeConn calls under way
}

// requirements are the configured schemes in force. The resource never
// changes while the host runs.
type requirements struct {
	cfg     *Config
	schemes []*scheme
	byID    map[string]*scheme
	// mcp are the schemes whose resource is the host's: the ones the HTTP
	// face (/mcp) accepts, since an MCP server's tokens must name it as
	// their audience (MCP "Authorization", Token Audience Binding).
	mcp []*scheme

	initOnce sync.Once
	init     *initFixed // see initFixed
}

// r returns the requirements in force.
func (h *Host) r() *requirements { return h.reqs.Load() }

// scheme is a configured requirement with its validator.
type scheme struct {
	Scheme
	checker *resource.Checker
	// recheck is how often a held token is validated again (introspection
	// only; zero: never).
	recheck time.Duration
}

// New builds a Host from a resolved config.
func New(opts Options) (*Host, error) {
	if opts.Config == nil {
		return nil, errors.New("cannot start the host: no config")
	}
	opts.Config.schemeResources()
	if err := opts.Config.checkResolved(); err != nil {
		return nil, fmt.Errorf("cannot start the host: %w", err)
	}
	h := &Host{storedToken: opts.StoredToken, cfg: opts.Config, log: opts.Logger, now: opts.Now, maxMsg: opts.MaxMessageSize, version: cmp.Or(opts.Version, "dev"),
		sessions: &agentSessions{store: opts.Store}, conns: map[*session]struct{}{}, tel: opts.Telemetry, fixtures: opts.ConformanceFixtures}
	h.revoked = newRevocations()
	switch opts.AuthScope {
	case "", AuthScopeConnection:
	case AuthScopeHost:
		h.shared = &grantTable{}
	default:
		return nil, fmt.Errorf("cannot start the host: unknown auth scope %q (connection or host)", opts.AuthScope)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.sessions.store == nil {
		h.sessions.store = state.NewMemory()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.client = opts.HTTPClient
	if h.client == nil {
		h.client = &http.Client{Timeout: resource.FetchTimeout}
	}
	h.reqs.Store(h.build(opts.Config, nil))
	h.useBroker(opts.Broker)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	go h.summarize(authSummaryInterval)
	return h, nil
}

// authSummaryInterval is how often the HTTP face's auth decisions are
// summed up in one log line (accepted ones are logged only at Debug).
const authSummaryInterval = time.Minute

// summarize logs the decision counts every interval until the host closes.
func (h *Host) summarize(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
			h.logSummary(interval)
		}
	}
}

// logSummary logs, at Info, how many requests of the HTTP face were
// accepted and refused since the last summary, when any were.
func (h *Host) logSummary(interval time.Duration) {
	a, r := h.accepted.Swap(0), h.refused.Swap(0)
	if a == 0 && r == 0 {
		return
	}
	h.log.Info("auth summary", "face", "http", "accepted", a, "refused", r, "interval", interval)
}

// build makes the schemes of cfg, keeping those of old whose
// configuration is unchanged (and with them their caches).
func (h *Host) build(cfg *Config, old *requirements) *requirements {
	r := &requirements{cfg: cfg, byID: map[string]*scheme{}}
	for _, s := range cfg.Schemes {
		if old != nil {
			if o := old.byID[s.ID]; o != nil && reflect.DeepEqual(o.Scheme, s) {
				r.add(o)
				continue
			}
		}
		id, ttl := s.ID, s.CacheTTL()
		// recheck: an introspected token held by a connection is checked
		// again every cacheTTL, so that a revocation is pushed.
		sc := &scheme{Scheme: s, recheck: ttl}
		sc.checker = resource.NewChecker(id, resource.NewValidator(s, h.client, h.now), ttl, h.now,
			func() { h.log.Debug("token validated", "scheme", id, "validation", s.Validation.Type) })
		r.add(sc)
	}
	return r
}

func (r *requirements) add(sc *scheme) {
	r.schemes = append(r.schemes, sc)
	r.byID[sc.ID] = sc
	if sc.Resource == r.cfg.Resource {
		r.mcp = append(r.mcp, sc)
	}
}

// byResource lists the schemes whose resource is resource.
func (r *requirements) byResource(resource string) []*scheme {
	var out []*scheme
	for _, sc := range r.schemes {
		if sc.Resource == resource {
			out = append(out, sc)
		}
	}
	return out
}

// Resource is the host's resource identifier: the HTTP face's (/mcp), and
// the resource of the schemes without one of their own (Config.Resolve).
func (h *Host) Resource() string { return h.cfg.Resource }

// ProtectedResourceMetadata is the host's RFC 9728 §2 document, the HTTP
// face's: the host's resource, and the union of the authorization servers
// and scopes of the schemes with that resource.
func (h *Host) ProtectedResourceMetadata() wire.ProtectedResourceMetadata {
	md := wire.ProtectedResourceMetadata{Resource: h.cfg.Resource, BearerMethodsSupported: []string{"header"}, DPoPSigningAlgValuesSupported: dpopAlgs()}
	seen := map[string]bool{}
	for _, sc := range h.r().mcp {
		for _, as := range sc.AuthorizationServers {
			if !seen["as "+as] {
				seen["as "+as] = true
				md.AuthorizationServers = append(md.AuthorizationServers, as)
			}
		}
		for _, s := range sc.ScopesSupported {
			if !seen["scope "+s] {
				seen["scope "+s] = true
				md.ScopesSupported = append(md.ScopesSupported, s)
			}
		}
	}
	return md
}

// Close ends every connection and stops every timer. It returns once every
// ServeConn has closed its connection and logged it, so that a graceful
// shutdown loses neither close frames nor log lines.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.serving.Wait()
	if h.shared != nil {
		h.revoked.unholdTable(h.shared)
		h.shared.clear()
	}
}
