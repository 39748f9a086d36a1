package issuer

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// Limits bound what clients can make the issuer remember. Each family is
// kept in the state store, shared by the replicas sharing it, and each
// record is kept until its own expiry: at a bound a new request is
// refused (429 when one owner's bound is reached, 503 when every owner
// slot is taken, both with Retry-After) and a live record is never
// evicted. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// DPoPProofs are the ids of DPoP proofs used at the token endpoint
	// (RFC 9449 §11.1), per key (jkt), each until iat + DPoPWindow.
	DPoPProofs bounded.Limits
	// ClientAssertions are the ids of private_key_jwt client assertions
	// used (RFC 7523 §3 item 7), per client, each until its exp.
	ClientAssertions bounded.Limits
	// GrantAssertions are the ids of JWT bearer grant assertions used,
	// per assertion issuer and sub, each until its exp.
	GrantAssertions bounded.Limits
	// Codes are the authorization codes issued and not yet redeemed, per
	// client, each until it expires (CodeTTL).
	Codes bounded.Limits
	// Registrations are the client registrations per source address (an
	// IPv4 address, or an IPv6 /64) within RegistrationWindow.
	Registrations      bounded.Limits
	RegistrationWindow time.Duration
	// ClientTokens are the access tokens from grants that keep no record
	// (client credentials, JWT bearer) that may still live, per client and
	// per process (see liveTokens): PerOwner per client, Owners clients
	// holding one; Retry is unused, a refusal's Retry-After being when the
	// client's oldest counted token expires.
	ClientTokens bounded.Limits
	// Clients bounds the clients registered at the registration endpoint
	// in all; beyond it a registration is refused with 503
	// temporarily_unavailable. A client never issued a token is dropped
	// unusedClientTTL after its last request.
	Clients int
}

// DefaultLimits are the limits an Options without Limits gets.
var DefaultLimits = Limits{
	DPoPProofs:         bounded.Limits{PerOwner: 100, Owners: 10000, Retry: 2 * DPoPWindow},
	ClientAssertions:   bounded.Limits{PerOwner: 100, Owners: 10000, Retry: maxAssertionLifetime + assertionLeeway},
	GrantAssertions:    bounded.Limits{PerOwner: 100, Owners: 10000, Retry: maxGrantAssertionLifetime + assertionLeeway},
	Codes:              bounded.Limits{PerOwner: 1000, Owners: 10000, Retry: DefaultCodeTTL},
	Registrations:      bounded.Limits{PerOwner: 100, Owners: 1000, Retry: 10 * time.Minute},
	ClientTokens:       bounded.Limits{PerOwner: 100000, Owners: 100000, Retry: time.Minute},
	RegistrationWindow: 10 * time.Minute,
	Clients:            10000,
}

// setDefaults fills the zero fields of l from DefaultLimits.
func (l *Limits) setDefaults() {
	for _, p := range []struct{ l, d *bounded.Limits }{
		{&l.DPoPProofs, &DefaultLimits.DPoPProofs},
		{&l.ClientAssertions, &DefaultLimits.ClientAssertions},
		{&l.GrantAssertions, &DefaultLimits.GrantAssertions},
		{&l.Codes, &DefaultLimits.Codes},
		{&l.Registrations, &DefaultLimits.Registrations},
		{&l.ClientTokens, &DefaultLimits.ClientTokens},
	} {
		setDefault(&p.l.PerOwner, p.d.PerOwner)
		setDefault(&p.l.Owners, p.d.Owners)
		setDefault(&p.l.Retry, p.d.Retry)
	}
	setDefault(&l.RegistrationWindow, DefaultLimits.RegistrationWindow)
	setDefault(&l.Clients, DefaultLimits.Clients)
}

// The record families kept under Limits (each owner's records under its
// own bounded.Kind).
const (
	kindDPoPJTI        state.Kind = "dpop_jti"         // token endpoint DPoP proof ids, per jkt
	kindAssertion      state.Kind = "client_assertion" // client assertion ids, per client
	kindGrantAssertion state.Kind = "grant_assertion"  // JWT bearer assertion ids, per issuer and sub
	kindRegSource      state.Kind = "registration"     // registrations, per source
)

// limitError is the answer to a request refused at a bound: 429 when the
// owner's own bound is reached, 503 when every owner slot is taken, both
// with Retry-After (RFC 6585 §4, RFC 9110 §10.2.3). what names the
// records ("DPoP proofs").
func limitError(full *bounded.FullError, what string) *oauthError {
	e := &oauthError{status: http.StatusServiceUnavailable, retryAfter: full.RetrySeconds(),
		body: wire.OAuthError{Code: "temporarily_unavailable"}}
	if full.Owner {
		e.status = http.StatusTooManyRequests
		e.body.Description = fmt.Sprintf("more than %d %s are in use for this client at once; retry in %s seconds", full.Limit, what, full.RetrySeconds())
	} else {
		e.body.Description = fmt.Sprintf("the issuer holds %s for %d clients already; retry in %s seconds", what, full.Limit, full.RetrySeconds())
	}
	return e
}

// rememberTx records a used id under l; replayed is the error for an id
// used before, what names the records for a refusal at a bound. A store
// failure is returned as err.
func rememberTx(tx state.Tx, kind state.Kind, l bounded.Limits, owner, id string, expires, now time.Time, replayed *oauthError, what string) (*oauthError, error) {
	err := bounded.RememberTx(tx, kind, l, owner, hash(id), expires, now)
	if errors.Is(err, bounded.ErrReplayed) {
		return replayed, nil
	}
	if full, ok := errors.AsType[*bounded.FullError](err); ok {
		return limitError(full, what), nil
	}
	return nil, err
}

// sourceOf names the source of a request for the per-source bounds: its
// peer's IPv4 address, or the /64 of its IPv6 address (one host commonly
// holds a whole /64). RemoteAddr is the peer's address, or behind a
// --trusted-proxy the client's as that proxy named it (ops.Forwarded):
// nothing the client writes in a header reaches it.
func sourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
