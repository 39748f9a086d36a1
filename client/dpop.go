package client

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// maxDPoPBindings bounds the DPoP-bound tokens a DPoPTransport knows.
const maxDPoPBindings = 64

// withDPoP is c with the DPoP key of the credential, if any.
func withDPoP(c flows.Client, cred *store.Credential) flows.Client {
	if cred.DPoPKey != "" {
		c.DPoP, _ = wire.ParseDPoPKey(cred.DPoPKey)
	}
	return c
}

// DPoPTransport presents DPoP-bound tokens (RFC 9449 §7.1): a request
// whose Authorization is Bearer with a token bound by Bind goes out with
// the DPoP scheme and a fresh proof (htm, htu, ath, and the server's last
// nonce), and is sent once more with the server's nonce when it answers
// 401 use_dpop_nonce (§9). Other requests pass unchanged.
type DPoPTransport struct {
	Base http.RoundTripper

	mu     sync.Mutex
	keys   map[string]*wire.DPoPKey // by access token
	order  []string
	nonces map[string]string // by origin
}

// WithDPoP is hc with a DPoPTransport around its transport.
func WithDPoP(hc *http.Client) *http.Client {
	c := *hc
	c.Transport = &DPoPTransport{Base: hc.Transport, keys: map[string]*wire.DPoPKey{}, nonces: map[string]string{}}
	return &c
}

// bindDPoP makes the DPoPTransport of hc, if it has one, present c's
// token with c's DPoP key.
func bindDPoP(hc *http.Client, c *store.Credential) {
	t, ok := hc.Transport.(*DPoPTransport)
	if !ok || c == nil || c.DPoPKey == "" {
		return
	}
	key, err := wire.ParseDPoPKey(c.DPoPKey)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.keys[c.AccessToken]; !ok {
		if len(t.order) >= maxDPoPBindings {
			delete(t.keys, t.order[0])
			t.order = t.order[1:]
		}
		t.order = append(t.order, c.AccessToken)
	}
	t.keys[c.AccessToken] = key
}

func (t *DPoPTransport) base() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

// RoundTrip implements http.RoundTripper.
func (t *DPoPTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	t.mu.Lock()
	key := t.keys[token]
	t.mu.Unlock()
	if !ok || key == nil {
		return t.base().RoundTrip(req)
	}
	origin := wire.Origin(req.URL.String())
	resp, err := t.send(req, key, token, origin)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get(wire.HeaderDPoPNonce) == "" || req.GetBody == nil && req.Body != nil {
		return resp, err
	}
	ch := wire.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if !slices.ContainsFunc(ch, func(c wire.AuthChallenge) bool { return c.Param("error") == wire.ErrUseDPoPNonce }) {
		return resp, nil
	}
	resp.Body.Close()
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.send(retry, key, token, origin)
}

// send sends req with the DPoP scheme and a proof, and keeps the nonce the
// server answers with.
func (t *DPoPTransport) send(req *http.Request, key *wire.DPoPKey, token, origin string) (*http.Response, error) {
	t.mu.Lock()
	nonce := t.nonces[origin]
	t.mu.Unlock()
	u := *req.URL
	proof, err := key.Proof(req.Method, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String(), token, nonce, time.Now())
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Header.Set("Authorization", wire.TokenTypeDPoP+" "+token)
	out.Header.Set(wire.HeaderDPoP, proof)
	resp, err := t.base().RoundTrip(out)
	if err == nil && resp.Header.Get(wire.HeaderDPoPNonce) != "" {
		t.mu.Lock()
		if len(t.nonces) < maxDPoPBindings || t.nonces[origin] != "" {
			t.nonces[origin] = resp.Header.Get(wire.HeaderDPoPNonce)
		}
		t.mu.Unlock()
	}
	return resp, err
}
