// Package ops is serve's operations surface: the Prometheus metrics
// registry (served on its own listener, --metrics-listen), the audit log
// and serve's buffered log output (LogWriter, which says what a crash may
// lose),
// the health endpoints (/healthz, /readyz), the landing page, forwarded
// headers from trusted proxies and the reloadable TLS certificate. It
// imports no other agentauth package. The server-side packages (issuer, broker, host) take a *Recorder in
// their Options and call it at the few places that matter; a nil *Recorder
// records nothing, so every method is safe to call on nil.
//
// # Audit events (schema version 1)
//
// An audit event is one log record with the message "audit", written to
// serve's log (text or --log-format json), with these attributes in this
// order:
//
//	audit_version  1 (this schema; a change that removes or renames a field raises it)
//	event          the event name, below
//	...            the event's fields, below (absent when unknown)
//
// Events and their fields:
//
//	login                   sub, method: a user signed in at the embedded issuer (method "dev": the development sign-in box, with client_id; "login_provider": at the configured OpenID Provider)
//	consent                 client_id, sub, scope, decision ("approved" or "denied"), flow ("code" or "device")
//	token_issued            client_id, sub, aud, scope, grant_type
//	refresh_token_reused    client_id, revoked (how many access tokens were revoked with the family)
//	token_revoked           client_id, revoked (how many access tokens)
//	upstream_signin         upstream: a session signed in to an upstream API through the broker
//	upstream_signout        upstream, revoked (whether the upstream revoked the token)
//	policy_denied           conn or face, method, scheme or upstream, reason: a call refused for want of a token, scope or upstream sign-in;
//	                        from the gateway (face "gateway"): sub, client_id, backend, method, tool, reason (also argument validation)
//
// No event carries a token, an authorization or device code, a PKCE
// verifier, a client secret or any other secret: only identifiers
// (client_id, sub, upstream, scheme) and counts.
//
// Not meant for import by other modules: ops is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
package ops

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AuditVersion is the audit events' schema version (see the package doc).
const AuditVersion = 1

// Audit event names (see the package doc for their fields).
const (
	EventLogin              = "login"
	EventConsent            = "consent"
	EventTokenIssued        = "token_issued"
	EventRefreshTokenReused = "refresh_token_reused"
	EventTokenRevoked       = "token_revoked"
	EventUpstreamSignIn     = "upstream_signin"
	EventUpstreamSignOut    = "upstream_signout"
	EventPolicyDenied       = "policy_denied"
)

// Recorder records metrics and audit events. A nil *Recorder records
// nothing.
type Recorder struct {
	audit *slog.Logger
	reg   *prometheus.Registry

	tokensIssued *prometheus.CounterVec
	validations  *prometheus.CounterVec
	refusals     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	// validated and observers keep validations' counter of each result
	// and latency's histogram of each label set.
	validated     labelCache[string, prometheus.Counter]
	observers     labelCache[latencyKey, prometheus.Observer]
	connections   prometheus.Gauge
	brokerSignIns *prometheus.CounterVec
	revocationLag atomic.Pointer[func() time.Duration]
}

// New makes a Recorder whose audit events go to audit (nil: none).
func New(audit *slog.Logger) *Recorder {
	r := &Recorder{audit: audit, reg: prometheus.NewRegistry()}
	r.tokensIssued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_tokens_issued_total", Help: "Access tokens issued by the embedded issuer, by grant type.",
	}, []string{"grant_type"})
	r.validations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_token_validations_total", Help: "Bearer token validations, by result (accepted, rejected, error).",
	}, []string{"result"})
	r.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_refusals_total", Help: "Requests and calls refused, by reason.",
	}, []string{"reason"})
	r.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "agentauth_http_request_duration_seconds", Help: "HTTP request latency on serve's listener, by route pattern, method and status code (WebSocket upgrades excluded).",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method", "code"})
	r.connections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agentauth_open_connections", Help: "Agent host connections open (WebSocket and stdio).",
	})
	r.brokerSignIns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_broker_signins_total", Help: "Upstream sign-ins through the broker, by result (signed_in, refused).",
	}, []string{"result"})
	revocationLag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "agentauth_replica_revocation_lag_seconds",
		Help: "How far behind this replica's view of revocations may be: the time since its last complete read of the shared revocation log began (0 without a shared store).",
	}, func() float64 {
		if lag := r.revocationLag.Load(); lag != nil {
			return (*lag)().Seconds()
		}
		return 0
	})
	r.reg.MustRegister(r.tokensIssued, r.validations, r.refusals, r.latency, r.connections, r.brokerSignIns, revocationLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Registry is the metrics registry, for tests and other collectors.
func (r *Recorder) Registry() *prometheus.Registry { return r.reg }

// MetricsHandler serves the metrics in the Prometheus text format.
func (r *Recorder) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// Audit writes one audit event (see the package doc): fields are
// key-value pairs as for slog, never a secret.
func (r *Recorder) Audit(event string, fields ...any) {
	if r == nil || r.audit == nil {
		return
	}
	args := append([]any{"audit_version", AuditVersion, "event", event}, fields...)
	r.audit.Log(context.Background(), slog.LevelInfo, "audit", args...)
}

// TokenIssued counts an access token issued with grantType.
func (r *Recorder) TokenIssued(grantType string) {
	if r != nil {
		r.tokensIssued.WithLabelValues(grantType).Inc()
	}
}

// Validation counts a token validation: accepted, rejected or error.
func (r *Recorder) Validation(result string) {
	if r != nil {
		r.validated.get(result, func() prometheus.Counter { return r.validations.WithLabelValues(result) }).Inc()
	}
}

// Refusal counts a refusal; reason is one of a small fixed set (the
// caller's constants: a label, never free text).
func (r *Recorder) Refusal(reason string) {
	if r != nil {
		r.refusals.WithLabelValues(reason).Inc()
	}
}

// ConnectionOpened and ConnectionClosed track the open connections.
func (r *Recorder) ConnectionOpened() {
	if r != nil {
		r.connections.Inc()
	}
}

// ConnectionClosed: see ConnectionOpened.
func (r *Recorder) ConnectionClosed() {
	if r != nil {
		r.connections.Dec()
	}
}

// BrokerSignIn counts an upstream sign-in: signed_in or refused.
func (r *Recorder) BrokerSignIn(result string) {
	if r != nil {
		r.brokerSignIns.WithLabelValues(result).Inc()
	}
}

// RevocationLagFrom makes the replica revocation lag gauge read lag at
// each scrape (serve passes the PostgreSQL store's time since its last
// complete read of the revocation log: a revoked token is refused here at
// most that long after its revocation).
func (r *Recorder) RevocationLagFrom(lag func() time.Duration) {
	if r != nil {
		r.revocationLag.Store(&lag)
	}
}

// Instrument wraps the listener's handler (an *http.ServeMux, which sets
// Request.Pattern) with the latency histogram and the access log
// (accessLog). WebSocket upgrades, which last as long as their
// connection, are not timed; they are logged as they start.
func (r *Recorder) Instrument(next http.Handler) http.Handler {
	if r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "" {
			r.accessLog(req, 0, 0)
			next.ServeHTTP(w, req)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, req)
		r.accessLog(req, sw.code, time.Since(start))
		// The mux's pattern, without its method ("POST /token"): a
		// bounded label, unlike the path.
		route := req.Pattern
		if _, path, ok := strings.Cut(route, " "); ok {
			route = path
		}
		if route == "" {
			route = "unmatched"
		}
		r.observer(route, req.Method, sw.code).Observe(time.Since(start).Seconds())
	})
}

// latencyKey is one label set of the latency histogram.
type latencyKey struct {
	route, method string
	code          int
}

// observer is the latency histogram of a route, method and status code.
// A method other than HTTP's own is counted as "other", so that a peer
// sending made-up methods cannot grow the metrics without bound (routes
// are the mux's patterns, codes three digits).
func (r *Recorder) observer(route, method string, code int) prometheus.Observer {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
	default:
		method = "other"
	}
	return r.observers.get(latencyKey{route, method, code}, func() prometheus.Observer {
		return r.latency.WithLabelValues(route, method, strconv.Itoa(code))
	})
}

// labelCache keeps the child of a metric vector for each label set its
// callers use (a bounded set: routes, methods, codes, results), so that a
// request finds it with one map read instead of hashing its labels.
type labelCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// get returns k's child, made by child the first time.
func (c *labelCache[K, V]) get(k K, child func() V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = child()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	c.m[k] = v
	c.mu.Unlock()
	return v
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes on to the wrapped writer (server-sent events on /mcp).
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
