package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/wire"
)

// CheckSecret reads the client's secret or key as serve will at start
// (serve --check): p names the backend (backends[i]).
func (x *TokenExchange) CheckSecret(p string) error {
	_, err := x.client(p)
	return err
}

// client reads the client's secret or key (a file or the environment).
func (x *TokenExchange) client(p string) (flows.Client, error) {
	c := flows.Client{ID: x.ClientID, Secret: x.ClientSecret, AuthMethod: x.AuthMethod}
	switch {
	case x.ClientSecretFile != "":
		b, err := os.ReadFile(x.ClientSecretFile)
		if err != nil {
			return c, fmt.Errorf("%s.tokenExchange.clientSecretFile: %w", p, err)
		}
		c.Secret = strings.TrimSpace(string(b))
	case x.ClientSecretEnv != "":
		c.Secret = os.Getenv(x.ClientSecretEnv)
	case x.PrivateKeyFile != "":
		b, err := os.ReadFile(x.PrivateKeyFile)
		if err != nil {
			return c, fmt.Errorf("%s.tokenExchange.privateKeyFile: %w", p, err)
		}
		c.PrivateKey, c.Audience = string(b), x.Issuer
	}
	if x.AuthMethod != flows.AuthMethodPrivateKeyJWT && c.Secret == "" {
		return c, fmt.Errorf("%s.tokenExchange: the client secret is empty (is %s set?)", p, x.ClientSecretEnv)
	}
	return c, nil
}

// exchanger gets one backend's tokens by token exchange and keeps them
// until shortly before they expire: by caller token (its SHA-256), so an
// entry belongs to one grant and is only ever reached through a request
// whose token serve has just accepted (a revoked or expired caller token
// is refused before it gets here), and never beyond the caller token's
// own expiry.
type exchanger struct {
	name     string
	cfg      TokenExchange
	resource string
	client   flows.Client
	hc       *http.Client
	now      func() time.Time
	flights  singleflight.Group

	mu       sync.Mutex
	endpoint string // discovered once
	entries  map[[32]byte]exchanged
}

type exchanged struct {
	token string
	until time.Time
}

func newExchanger(b Backend, p string) (*exchanger, error) {
	if b.TokenExchange == nil {
		return nil, fmt.Errorf("%s.tokenExchange: identity %q needs it: the authorization server, serve's client there and its secret", p, IdentityExchange)
	}
	if b.TokenExchange.Issuer == "" {
		return nil, fmt.Errorf("%s.tokenExchange.issuer: name the authorization server that issued the callers' tokens", p)
	}
	c, err := b.TokenExchange.client(p)
	if err != nil {
		return nil, err
	}
	x := &exchanger{name: b.Name, cfg: *b.TokenExchange, client: c, now: time.Now,
		resource: b.URL, endpoint: b.TokenExchange.TokenEndpoint, entries: map[[32]byte]exchanged{},
		hc: &http.Client{Timeout: exchangeTimeout}}
	if x.cfg.Resource != "" {
		x.resource = x.cfg.Resource
	}
	return x, nil
}

// exchangeError is a failed exchange: refused by the authorization
// server (code is its RFC 6749 §5.2 error code) or not done.
type exchangeError struct {
	backend, issuer string
	code            string // the server's error code; "" when it did not answer
	denied          bool   // refused (by the server, or by serve before asking)
	reason          string // for the audit record
	err             error
}

func (e *exchangeError) Error() string {
	if e.code != "" {
		return fmt.Sprintf("backend %s: the authorization server %s refused the token exchange for it: %s", e.backend, e.issuer, e.code)
	}
	return fmt.Sprintf("backend %s: cannot get a token for it from the authorization server %s: %v", e.backend, e.issuer, e.err)
}

// expirer is a Caller that knows when its token expires (zero: never).
type expirer interface{ Expiry() time.Time }

// token is the backend's token for the caller whose access token is
// subject: kept, or exchanged now (once for concurrent callers with the
// same token).
func (x *exchanger) token(ctx context.Context, c Caller, subject string) (string, error) {
	if iss := c.Issuer(); iss == "" || !flows.SameIssuer(iss, x.cfg.Issuer) {
		// RFC 8693 §2.1: the subject token goes to the server that can
		// validate it, and a token goes only to the server it was
		// issued for.
		from := "a scheme without an issuer"
		if iss != "" {
			from = wire.Clip(iss)
		}
		return "", &exchangeError{backend: x.name, issuer: x.cfg.Issuer, denied: true, reason: "token exchange not tried: caller's token is of another issuer",
			err: fmt.Errorf("the caller's token was issued by %s, and only tokens of %s are exchanged for this backend", from, x.cfg.Issuer)}
	}
	key := sha256.Sum256([]byte(subject))
	now := x.now()
	x.mu.Lock()
	e, ok := x.entries[key]
	if ok && !now.Before(e.until) {
		delete(x.entries, key)
		ok = false
	}
	x.mu.Unlock()
	if ok {
		return e.token, nil
	}
	scopes := x.cfg.Scopes
	if len(scopes) == 0 {
		scopes = c.Scopes()
	}
	// The exchange runs without the first caller's cancellation: others
	// may wait for it (exchangeTimeout bounds it). It keeps the token
	// before the flight lands, so a caller coming later finds it.
	v, err, _ := x.flights.Do(string(key[:]), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exchangeTimeout)
		defer cancel()
		t, err := x.exchange(fctx, subject, scopes)
		if err != nil {
			return nil, err
		}
		x.keep(key, t, c)
		return t.AccessToken, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// keep remembers an exchanged token until exchangeEarly (at most half its
// lifetime) before it expires, and not past the caller token's expiry. A
// token without an expiry is not kept. At MaxExchangedTokens expired
// entries are dropped; if none is, the token is not kept.
func (x *exchanger) keep(key [32]byte, t *flows.Token, c Caller) {
	if t.Expiry.IsZero() {
		return
	}
	now := x.now()
	until := t.Expiry.Add(-min(exchangeEarly, t.Expiry.Sub(now)/2))
	if ce, ok := c.(expirer); ok && !ce.Expiry().IsZero() && ce.Expiry().Before(until) {
		until = ce.Expiry()
	}
	if !now.Before(until) {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.entries) >= MaxExchangedTokens {
		for k, e := range x.entries {
			if !now.Before(e.until) {
				delete(x.entries, k)
			}
		}
		if len(x.entries) >= MaxExchangedTokens {
			return
		}
	}
	x.entries[key] = exchanged{token: t.AccessToken, until: until}
}

// exchange discovers the token endpoint (once) and runs the exchange.
func (x *exchanger) exchange(ctx context.Context, subject string, scopes []string) (*flows.Token, error) {
	endpoint, err := x.tokenEndpoint(ctx)
	if err != nil {
		return nil, &exchangeError{backend: x.name, issuer: x.cfg.Issuer, reason: "token exchange failed: no token endpoint", err: err}
	}
	t, err := flows.ExchangeToken(ctx, x.hc, flows.TokenExchangeRequest{
		TokenEndpoint: endpoint, Client: x.client, Party: "the authorization server",
		SubjectToken: subject, SubjectTokenType: flows.TokenTypeAccessToken, RequestedTokenType: flows.TokenTypeAccessToken,
		Resource: x.resource, Audience: x.cfg.Audience, Scopes: scopes,
	})
	if err != nil {
		// The server's words (a description, the start of a body) are
		// logged; should they quote the subject token, not that.
		msg := errors.New(strings.ReplaceAll(err.Error(), subject, "[redacted]"))
		if oe, ok := errors.AsType[*wire.OAuthError](err); ok {
			return nil, &exchangeError{backend: x.name, issuer: x.cfg.Issuer, code: wire.Truncate(oe.Code), denied: true, reason: "token exchange refused: " + wire.Truncate(oe.Code), err: msg}
		}
		return nil, &exchangeError{backend: x.name, issuer: x.cfg.Issuer, reason: "token exchange failed", err: msg}
	}
	return t, nil
}

// tokenEndpoint is the configured token endpoint, or the one of the
// issuer's metadata (RFC 8414 §3, OpenID Connect Discovery), fetched at
// the first exchange and kept; a failed fetch is tried again next time.
func (x *exchanger) tokenEndpoint(ctx context.Context) (string, error) {
	x.mu.Lock()
	ep := x.endpoint
	x.mu.Unlock()
	if ep != "" {
		return ep, nil
	}
	md, err := flows.FetchAuthServerMetadata(ctx, x.hc, x.cfg.Issuer)
	if err != nil {
		return "", err
	}
	if md.TokenEndpoint == "" {
		return "", fmt.Errorf("the metadata of %s names no token_endpoint", x.cfg.Issuer)
	}
	x.mu.Lock()
	x.endpoint = md.TokenEndpoint
	x.mu.Unlock()
	return md.TokenEndpoint, nil
}
