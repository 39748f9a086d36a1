package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/flows"
)

// ErrUpstreamRefusesClient means the upstream does not know or accept
// serve's client (invalid_client, RFC 6749 §5.2): a user sent there would
// see the upstream's error page ("Unknown client") and never come back, so
// no sign-in is handed out; the operator must fix the upstream's clientId
// or secret.
var ErrUpstreamRefusesClient = errors.New("the upstream refuses serve's client")

// How long a client check's answer is kept: a refusal briefly (the
// operator may be fixing it), an acceptance longer.
const (
	clientRefusedTTL  = time.Minute
	clientAcceptedTTL = 10 * time.Minute
)

// clientChecks caches checkClient's answer per upstream (bounded by the
// configured upstreams).
type clientChecks struct {
	mu   sync.Mutex
	seen map[string]clientCheck
}

type clientCheck struct {
	err     error
	expires time.Time
}

// checkClient asks u's token endpoint whether it knows serve's client,
// before a user is sent to u: it exchanges a code that does not exist. An
// authorization server checks the client first (RFC 6749 §3.2.1, §5.2),
// so a client it knows gets invalid_grant and one it does not (a wrong
// clientId, a wrong secret) invalid_client. Only invalid_client refuses;
// any other answer, or none (the upstream down), lets the sign-in go on.
// The sign-in pages cannot report the upstream's own error page, which
// never redirects back; this check is how the client learns at once.
func (b *Broker) checkClient(ctx context.Context, u *Upstream) error {
	now := b.now()
	b.checks.mu.Lock()
	if c, ok := b.checks.seen[u.ID]; ok && now.Before(c.expires) {
		b.checks.mu.Unlock()
		return c.err
	}
	b.checks.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	verifier := ""
	if u.PKCE {
		verifier = oauth2.GenerateVerifier()
	}
	_, err := flows.ExchangeCode(ctx, b.opts.HTTPClient, flows.CodeExchange{TokenEndpoint: u.TokenEndpoint, Client: u.Client,
		Code: "agentauth-client-check-" + rand.Text(), RedirectURI: b.RedirectURI(), Verifier: verifier, Resource: u.Resource})
	check := clientCheck{expires: now.Add(clientAcceptedTTL)}
	if errors.Is(err, flows.ErrInvalidClient) {
		b.log.Warn("broker: the upstream refuses serve's client; no sign-in is handed out", "upstream", u.ID, "client_id", u.Client.ID)
		check = clientCheck{expires: now.Add(clientRefusedTTL), err: fmt.Errorf("%w: %s (%s) does not accept the client %q (invalid_client): a sign-in there cannot complete; "+
			"the operator of this server must fix the upstream's clientId or client secret in its config", ErrUpstreamRefusesClient, u.Label, u.Host(), u.Client.ID)}
	}
	b.checks.mu.Lock()
	b.checks.seen[u.ID] = check
	b.checks.mu.Unlock()
	return check.err
}

// failedSignIns remembers, per session and upstream, the last sign-in the
// upstream refused (an error answer, a failed code exchange), so that a
// client waiting for it (/auth-status) stops and says why. In memory,
// bounded by MaxPending; a new ask or a completed sign-in clears it.
type failedSignIns struct {
	mu   sync.Mutex
	seen map[string]failedSignIn
}

type failedSignIn struct {
	msg     string
	expires time.Time
}

// recordFailure notes that the sign-in of sid to upstream failed, for why.
func (b *Broker) recordFailure(sid, upstream, why string) {
	b.failed.mu.Lock()
	defer b.failed.mu.Unlock()
	now := b.now()
	for k, f := range b.failed.seen {
		if !now.Before(f.expires) {
			delete(b.failed.seen, k)
		}
	}
	if len(b.failed.seen) >= MaxPending {
		return // a note for a waiting client, not a protection: skip it
	}
	b.failed.seen[tokenKey(sid, upstream)] = failedSignIn{msg: why, expires: now.Add(b.lifetime)}
}

func (b *Broker) clearFailure(sid, upstream string) {
	b.failed.mu.Lock()
	delete(b.failed.seen, tokenKey(sid, upstream))
	b.failed.mu.Unlock()
}

// Failed says why the last sign-in of sid to upstream failed, "" when it
// did not (or a newer one was asked for since).
func (b *Broker) Failed(sid, upstream string) string {
	b.failed.mu.Lock()
	defer b.failed.mu.Unlock()
	f, ok := b.failed.seen[tokenKey(sid, upstream)]
	if !ok || !b.now().Before(f.expires) {
		return ""
	}
	return f.msg
}
