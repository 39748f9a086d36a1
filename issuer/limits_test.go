package issuer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/state/statetest"
	"github.com/agentauth/agentauth/wire"
)

// small are the bounds the replay tests fill: 3 per owner, 2 owners.
var small = bounded.Limits{PerOwner: 3, Owners: 2}

// stores opens each durable store the issuer runs on: SQLite, and
// PostgreSQL when installed.
func stores(t *testing.T) map[string]func(t *testing.T) state.Store {
	return map[string]func(t *testing.T) state.Store{
		"sqlite": func(t *testing.T) state.Store {
			s, err := state.OpenSQLite(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) state.Store {
			s, err := state.OpenPostgres(context.Background(), statetest.Postgres(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// wantFull checks a refusal at a bound: status, temporarily_unavailable
// and a Retry-After of whole seconds.
func wantFull(t *testing.T, r reply, status int) {
	t.Helper()
	wantError(t, r, status, "temporarily_unavailable")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
	}
}

// A DPoP proof id at the token endpoint is kept until it leaves the
// window: sending more proofs than a key may have live gets 429 for the
// extra ones, never the eviction of an earlier one, which stays a replay;
// another key is not crowded out, and once every owner slot is taken a
// new key gets 503.
func TestDPoPProofsAreNotEvicted(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := start(t, issuer.Options{Store: open(t), Limits: issuer.Limits{DPoPProofs: small}})
			reg := s.postJSON("/register", `{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}`)
			id, secret := reg.str(t, "client_id"), reg.str(t, "client_secret")
			send := func(proof string) reply {
				req, _ := http.NewRequest(http.MethodPost, s.url+"/token", strings.NewReader(url.Values{
					"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set(wire.HeaderDPoP, proof)
				return s.do(req)
			}
			newKey := func() *wire.DPoPKey {
				k, _, err := wire.NewDPoPKey()
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			a := newKey()
			first, _ := a.Proof(http.MethodPost, s.url+"/token", "", "", epoch)
			nonce := send(first).header.Get(wire.HeaderDPoPNonce)
			if nonce == "" {
				t.Fatal("no DPoP-Nonce")
			}
			proof := func(k *wire.DPoPKey) string {
				p, err := k.Proof(http.MethodPost, s.url+"/token", "", nonce, s.clock.Now())
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			var proofs []string
			for range small.PerOwner {
				proofs = append(proofs, proof(a))
				if tok := wantOK(t, send(proofs[len(proofs)-1])); tok["token_type"] != "DPoP" {
					t.Fatalf("token_type %v", tok["token_type"])
				}
			}
			for range 5 {
				wantFull(t, send(proof(a)), http.StatusTooManyRequests)
			}
			wantError(t, send(proofs[0]), http.StatusBadRequest, wire.ErrInvalidDPoPProof)
			wantOK(t, send(proof(newKey())))
			wantFull(t, send(proof(newKey())), http.StatusServiceUnavailable)
			// Past the window every slot is free again.
			s.advance(3 * issuer.DPoPWindow)
			fresh, _ := a.Proof(http.MethodPost, s.url+"/token", "", "", s.clock.Now())
			nonce = send(fresh).header.Get(wire.HeaderDPoPNonce)
			for range small.PerOwner {
				wantOK(t, send(proof(a)))
			}
		})
	}
}

// Client assertions (private_key_jwt) and JWT bearer assertions are kept
// until they expire, each in its own cache bounded per client or per
// issuer and subject: the extra ones are refused with 429, a used one
// stays a replay, and filling one cache leaves the other alone.
func TestAssertionsAreNotEvicted(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ciKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			s := start(t, issuer.Options{Store: open(t), Clients: []issuer.Client{rs},
				Limits:           issuer.Limits{ClientAssertions: small, GrantAssertions: small},
				AssertionIssuers: []issuer.AssertionIssuer{{Issuer: ciIssuer, Keys: &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ciKey.PublicKey}}}}}})
			register := func() (string, *ecdsa.PrivateKey) {
				key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, Algorithm: "ES256", Use: "sig"}}})
				r := s.postJSON("/register", `{"grant_types":["client_credentials","`+issuer.GrantJWTBearer+`"],"token_endpoint_auth_method":"private_key_jwt","jwks":`+string(jwks)+`}`)
				return r.str(t, "client_id"), key
			}
			n := 0
			clientAssertion := func(id string, key *ecdsa.PrivateKey) string {
				n++
				return assertionFor(t, key, jwt.Claims{Issuer: id, Subject: id, Audience: jwt.Audience{s.url + "/token"}, ID: fmt.Sprint("ca-", n),
					Expiry: jwt.NewNumericDate(epoch.Add(5 * time.Minute))})
			}
			credentials := func(id, assertion string) reply {
				return s.post("/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id},
					"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}})
			}
			id, key := register()
			var used []string
			for range small.PerOwner {
				used = append(used, clientAssertion(id, key))
				wantOK(t, credentials(id, used[len(used)-1]))
			}
			for range 5 {
				wantFull(t, credentials(id, clientAssertion(id, key)), http.StatusTooManyRequests)
			}
			wantError(t, credentials(id, used[0]), http.StatusUnauthorized, "invalid_client")
			other, otherKey := register()
			wantOK(t, credentials(other, clientAssertion(other, otherKey)))
			third, thirdKey := register()
			wantFull(t, credentials(third, clientAssertion(third, thirdKey)), http.StatusServiceUnavailable)

			// The JWT bearer grant's cache is separate, and bounded per
			// issuer and subject: the full client may still use it.
			bearer := func(jti string) reply {
				n++
				return s.post("/token", url.Values{"grant_type": {issuer.GrantJWTBearer}, "client_id": {issuer.CLIClientID},
					"assertion": {assertionFor(t, ciKey, jwt.Claims{Issuer: ciIssuer, Subject: "repo:acme/app", Audience: jwt.Audience{s.url},
						ID: jti, Expiry: jwt.NewNumericDate(epoch.Add(5 * time.Minute))})}})
			}
			for k := range small.PerOwner {
				wantOK(t, bearer(fmt.Sprint("jb-", k)))
			}
			wantFull(t, bearer("jb-extra"), http.StatusTooManyRequests)
			wantError(t, bearer("jb-0"), http.StatusBadRequest, "invalid_grant")

			// Once they expire, there is room again.
			s.advance(10 * time.Minute)
			wantOK(t, credentials(id, assertionFor(t, key, jwt.Claims{Issuer: id, Subject: id, Audience: jwt.Audience{s.url + "/token"}, ID: "late",
				Expiry: jwt.NewNumericDate(epoch.Add(15 * time.Minute))})))
		})
	}
}

// Unredeemed codes are kept per client until they expire: a burst of
// logins by 2000 clients all redeem their codes.
func TestBurstOfLoginsByDistinctClients(t *testing.T) {
	const n = 2000
	var clients []issuer.Client
	for k := range n {
		clients = append(clients, issuer.Client{ID: fmt.Sprint("app-", k), RedirectURIs: []string{"http://127.0.0.1/cb"}})
	}
	s := start(t, issuer.Options{AutoApprove: true, Clients: clients})
	var logins []*authz
	var codes []string
	for _, c := range clients {
		a := newAuthz(c.ID, "http://127.0.0.1:5000/cb")
		logins, codes = append(logins, a), append(codes, s.code(a))
	}
	for k, a := range logins {
		if r := s.exchange(a, codes[k]); r.status != http.StatusOK {
			t.Fatalf("login %d of %d: status %d; body %s", k, n, r.status, r.body)
		}
	}
}

// One client's pending codes are bounded: at the bound its next login is
// refused (temporarily_unavailable to its redirect URI), its pending codes
// stay valid, and other clients are not affected.
func TestPendingCodesAreBoundedPerClient(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{{ID: "other", RedirectURIs: []string{"http://127.0.0.1/cb"}}},
		Limits: issuer.Limits{Codes: bounded.Limits{PerOwner: 3, Owners: 10}}})
	var logins []*authz
	var codes []string
	for range 3 {
		a := newAuthz(issuer.CLIClientID, cliRedirect)
		logins, codes = append(logins, a), append(codes, s.code(a))
	}
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	if q := s.callback(s.authorize(a), a); q.Get("error") != "temporarily_unavailable" {
		t.Fatalf("fourth pending code: %v, want temporarily_unavailable", q)
	}
	o := newAuthz("other", "http://127.0.0.1:5000/cb")
	wantOK(t, s.exchange(o, s.code(o)))
	for k, a := range logins {
		wantOK(t, s.exchange(a, codes[k]))
	}
	a = newAuthz(issuer.CLIClientID, cliRedirect)
	wantOK(t, s.exchange(a, s.code(a)))
}

// fromSource returns a copy of s's client whose connections come from the
// loopback address ip (all of 127/8 is loopback).
func (s *testServer) fromSource(ip string) *testServer {
	return &testServer{t: s.t, iss: s.iss, url: s.url, clock: s.clock, client: &http.Client{
		Transport:     &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext},
		CheckRedirect: s.client.CheckRedirect,
	}}
}

// A registration flood from one source is refused (429, Retry-After) past
// that source's bound for the window, also after a restart on the same
// store, while a user registering from another source still logs in;
// the flood's unused clients expire, and the source may register again
// once the window has passed.
func TestRegistrationFloodFromOneSource(t *testing.T) {
	const perSource = 5
	store := stores(t)["sqlite"](t)
	opts := issuer.Options{AutoApprove: true, Store: store, Limits: issuer.Limits{Registrations: bounded.Limits{PerOwner: perSource, Owners: 10}}}
	s := start(t, opts)
	register := func(s *testServer) reply {
		return s.postJSON("/register", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`)
	}
	flood := s.fromSource("127.0.0.2")
	var flooded []string
	for range perSource {
		flooded = append(flooded, register(flood).str(t, "client_id"))
	}
	for range 50 {
		wantFull(t, register(flood), http.StatusTooManyRequests)
	}
	login := func(s *testServer) {
		t.Helper()
		r := register(s)
		if r.status != http.StatusCreated {
			t.Fatalf("registration from another source during the flood: %d %s", r.status, r.body)
		}
		a := newAuthz(r.str(t, "client_id"), "http://127.0.0.1:5000/cb")
		wantOK(t, s.exchange(a, s.code(a)))
	}
	login(s)

	// A restart on the same store keeps the bound.
	s = start(t, opts)
	s.advance(time.Minute)
	wantFull(t, register(s.fromSource("127.0.0.2")), http.StatusTooManyRequests)
	login(s)

	// The flood's clients, never used, expire; after the window the
	// source may register again.
	s.advance(issuer.UnusedClientTTL + time.Minute)
	s.tokens(nil) // sweeps
	a := newAuthz(flooded[0], "http://127.0.0.1:5000/cb")
	if r := s.authorize(a); r.status == http.StatusFound {
		t.Errorf("an unused flooded client still authorizes after %s", issuer.UnusedClientTTL)
	}
	if r := register(s.fromSource("127.0.0.2")); r.status != http.StatusCreated {
		t.Errorf("after the window: %d %s", r.status, r.body)
	}
}
