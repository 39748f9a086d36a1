package broker

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
)

// The kinds of record the broker keeps in its state.Store. Pending
// sign-ins are keyed by their elicitation id, started ones by the SHA-256
// of their state; tokens by session and upstream.
const (
	kindSecret  state.Kind = "broker_secret" // the key that derives session ids
	kindPending state.Kind = "broker_ask"    // sign-ins handed out, not yet started
	kindState   state.Kind = "broker_state"  // sign-ins started at /auth/start
	kindToken   state.Kind = "broker_token"  // upstream tokens, by session/upstream
)

// Bounds on pending sign-ins: past them Ask refuses (ErrTooManyPending).
const (
	// MaxPendingPerSession bounds the sign-ins one session may have
	// waiting (across upstreams).
	MaxPendingPerSession = 8
	// MaxPending bounds the sign-ins waiting across every session.
	MaxPending = 1000
)

// refreshMargin is how long before its expiry an upstream access token is
// refreshed rather than used.
const refreshMargin = 30 * time.Second

// DefaultTokenLifetime is how long a session's upstream tokens are kept
// after their last use or refresh when the upstream does not say when its
// refresh token expires (host config upstreamTokenLifetime).
const DefaultTokenLifetime = 720 * time.Hour

// maxSweep bounds the expired records one call deletes.
const maxSweep = 100

// Errors of the broker. ErrSignInNeeded means the session has no usable
// token for the upstream: hand out an Ask.
var (
	ErrSignInNeeded    = errors.New("the session is not signed in to the upstream")
	ErrUnknownSignIn   = errors.New("this sign-in link is unknown or was already used; ask the agent for a new one")
	ErrExpired         = errors.New("this sign-in link expired; ask the agent for a new one")
	ErrTooManyPending  = errors.New("too many sign-ins are waiting; finish or let expire the ones under way, then try again")
	ErrUnknownUpstream = errors.New("no such upstream")
	// ErrNotYours: a bound sign-in link opened by a browser not signed in
	// as the session's user.
	ErrNotYours = errors.New("this sign-in link belongs to another user's session")
)

// Upstream is a configured upstream with its endpoints resolved.
type Upstream struct {
	ID    string
	Label string
	// Issuer is the authorization server's issuer identifier, for the
	// RFC 9207 iss check; empty when it was configured by endpoints.
	Issuer string
	// IssRequired: the metadata says the upstream sends iss (RFC 9207 §3).
	IssRequired           bool
	AuthorizationEndpoint string
	TokenEndpoint         string
	RevocationEndpoint    string
	Client                flows.Client
	Scopes                []string
	PKCE                  bool
	Resource              string
	API                   string
}

// Host is the host name users see: the authorization endpoint's.
func (u *Upstream) Host() string {
	p, err := url.Parse(u.AuthorizationEndpoint)
	if err != nil {
		return ""
	}
	return p.Host
}

// Options configure a Broker.
type Options struct {
	Store     state.Store
	Upstreams []Upstream
	// Origin is serve's public origin: the redirect URI is
	// Origin + "/callback", the sign-in URLs Origin + "/auth/start".
	Origin string
	// StateLifetime bounds a pending sign-in (default 10 minutes).
	StateLifetime time.Duration
	// TokenLifetime is how long a session's upstream tokens are kept
	// after their last use or refresh when the upstream does not say when
	// its refresh token expires (default DefaultTokenLifetime).
	TokenLifetime time.Duration
	// Key, when set (32 bytes, the --state-key-file's), encrypts the
	// upstream tokens and PKCE verifiers at rest (AES-256-GCM).
	Key        []byte
	HTTPClient *http.Client
	Logger     *slog.Logger
	Now        func() time.Time
	// Browser, when set, tells who a browser is signed in as at serve's
	// embedded issuer: the sign-in links of sessions whose tokens that
	// issuer issued are then bound to the session's own user (see
	// Start). Without it, or for sessions of other authorization
	// servers, a link signs in whoever opens it first.
	Browser BrowserLogin
	// AutoConfirm skips the confirmation page of a bound link (serve
	// --auto-approve: tests and scripts); the link still opens only for
	// the session's own user.
	AutoConfirm bool
	// ClientName names a client id on the confirmation page; default
	// the id itself.
	ClientName func(ctx context.Context, clientID string) string
	// Telemetry, when set, counts the sign-ins and receives the audit
	// events of upstream sign-in and sign-out (nil: none).
	Telemetry *ops.Recorder
}

// BrowserLogin is serve's browser sign-in: the embedded issuer's login
// and its session cookie (*issuer.Issuer).
type BrowserLogin interface {
	// Origin is the issuer identifier of the tokens whose subject
	// SignedIn vouches for.
	Origin() string
	// SignedIn returns the subject the browser of r is signed in as.
	SignedIn(r *http.Request) (subject string, ok bool)
	// SignInURL signs a browser in and sends it back to returnTo, a path.
	SignInURL(returnTo string) string
}

// Broker signs sessions in to upstreams. Its methods are safe for
// concurrent use.
type Broker struct {
	opts      Options
	upstreams map[string]*Upstream
	order     []*Upstream
	sidKey    []byte
	log       *slog.Logger
	now       func() time.Time
	lifetime  time.Duration
	// tokenLifetime is Options.TokenLifetime or its default.
	tokenLifetime time.Duration

	mu       sync.Mutex
	locks    map[string]*keyLock // per session/upstream in use: one refresh at a time
	watchers []func(sid, upstream string)
	checks   clientChecks
	failed   failedSignIns
	waiting  map[string][]chan struct{}
}

// New makes a Broker, creating the session-id key in the store on first use.
func New(ctx context.Context, opts Options) (*Broker, error) {
	b := &Broker{opts: opts, upstreams: map[string]*Upstream{}, log: opts.Logger, now: opts.Now,
		lifetime: cmp.Or(opts.StateLifetime, 10*time.Minute), tokenLifetime: cmp.Or(opts.TokenLifetime, DefaultTokenLifetime), locks: map[string]*keyLock{}, waiting: map[string][]chan struct{}{}, checks: clientChecks{seen: map[string]clientCheck{}}, failed: failedSignIns{seen: map[string]failedSignIn{}}}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.opts.HTTPClient == nil {
		b.opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Key != nil && len(opts.Key) != 32 {
		return nil, errors.New("cannot start the broker: the state key must be 32 bytes")
	}
	b.opts.Origin = strings.TrimSuffix(opts.Origin, "/")
	for i := range opts.Upstreams {
		u := &opts.Upstreams[i]
		b.upstreams[u.ID] = u
		b.order = append(b.order, u)
	}
	err := opts.Store.Update(ctx, func(tx state.Tx) error {
		k, err := tx.Get(kindSecret, "session")
		if errors.Is(err, state.ErrNotFound) {
			k = []byte(rand.Text() + rand.Text())
			err = tx.Put(kindSecret, "session", k, time.Time{})
		}
		b.sidKey = k
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot start the broker: %w", err)
	}
	return b, nil
}

// Upstream returns the upstream id, or nil.
func (b *Broker) Upstream(id string) *Upstream { return b.upstreams[id] }

// Upstreams lists the upstreams in config order.
func (b *Broker) Upstreams() []*Upstream { return b.order }

// RedirectURI is the redirect URI to register with every upstream.
func (b *Broker) RedirectURI() string { return b.opts.Origin + "/callback" }

// Session is the opaque id of the broker session of a serve token's
// subject and client id: a keyed HMAC, never the subject itself, stable
// across restarts (the key is in the store).
func (b *Broker) Session(subject, clientID string) string {
	m := hmac.New(sha256.New, b.sidKey)
	m.Write([]byte(subject))
	m.Write([]byte{0})
	m.Write([]byte(clientID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// AuthStatusURL is where the session's client polls the sign-in's state.
func (b *Broker) AuthStatusURL(sid, upstream string) string {
	return b.opts.Origin + "/auth-status?" + url.Values{"session": {sid}, "upstream": {upstream}}.Encode()
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func tokenKey(sid, upstream string) string { return sid + "/" + upstream }

// getJSON decodes the record kind/key into a new T, or returns nil.
func getJSON[T any](tx state.Tx, kind state.Kind, key string) (*T, error) {
	raw, err := tx.Get(kind, key)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("cannot decode %s record: %w", kind, err)
	}
	return v, nil
}

func putJSON(tx state.Tx, kind state.Kind, key string, v any, expires time.Time) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode %s record: %w", kind, err)
	}
	return tx.Put(kind, key, raw, expires)
}
