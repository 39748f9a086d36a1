package resource

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestStaticLifetimeStartsAtFirstUse(t *testing.T) {
	clock := newFakeClock()
	s := Scheme{ID: "dev", AuthorizationServers: []string{"https://as.example"}, Validation: Validation{Type: ValidationStatic,
		Tokens: []StaticToken{{Token: "t-short", Subject: "shorty", Scopes: []string{"agent:use"}, ExpiresIn: Duration(2 * time.Second)}, {Token: "t-forever", Subject: "ever"}}}}
	v := newStaticValidator(s, clock.now)
	ctx := context.Background()

	clock.advance(time.Hour) // the process has run a while: the lifetime has not started yet
	start := clock.now()
	g, err := v.Validate(ctx, "t-short")
	if err != nil {
		t.Fatal(err)
	}
	if !g.Expiry.Equal(start.Add(2*time.Second)) || g.Subject != "shorty" || g.Issuer != "https://as.example" {
		t.Errorf("grant = %+v, want expiry 2s after first use", g)
	}
	clock.advance(1900 * time.Millisecond)
	if _, err := v.Validate(ctx, "t-short"); err != nil {
		t.Errorf("before expiry: %v", err)
	}
	clock.advance(100 * time.Millisecond)
	var te *TokenError
	if _, err := v.Validate(ctx, "t-short"); !errors.As(err, &te) || te.Kind != TokenExpired {
		t.Errorf("at expiry: err = %v, want expired", err)
	}
	if g, err := v.Validate(ctx, "t-forever"); err != nil || !g.Expiry.IsZero() {
		t.Errorf("token without expiresIn: %+v, %v", g, err)
	}
	if _, err := v.Validate(ctx, "t-unknown"); !errors.As(err, &te) || te.Kind != TokenInvalid {
		t.Errorf("unknown token: err = %v, want invalid", err)
	}
}

// countingValidator counts validations and returns a fixed answer.
type countingValidator struct {
	calls atomic.Int32
	grant *Grant
	err   error
}

func (c *countingValidator) Validate(context.Context, string) (*Grant, error) {
	c.calls.Add(1)
	return c.grant, c.err
}

func TestGrantCache(t *testing.T) {
	clock := newFakeClock()
	ctx := context.Background()
	inner := &countingValidator{grant: &Grant{Subject: "alice", JTI: "j1", Expiry: clock.now().Add(time.Minute)}}
	c := &Checker{scheme: "dev", v: inner, cache: newGrantCache(clock.now, 0)}

	g, err := c.Check(ctx, "tok", false)
	if err != nil || g.Scheme != "dev" {
		t.Fatalf("check = %+v, %v", g, err)
	}
	c.Check(ctx, "tok", false)
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("validated %d times, want 1 (the second from the cache)", n)
	}
	c.Check(ctx, "tok", true)
	if n := inner.calls.Load(); n != 2 {
		t.Errorf("fresh check validated %d times in all, want 2", n)
	}
	// A dropped entry is validated again (a revoked token is dropped).
	c.Drop("tok")
	c.Check(ctx, "tok", false)
	if n := inner.calls.Load(); n != 3 {
		t.Errorf("after a drop validated %d times, want 3", n)
	}
	// An entry does not outlive the grant.
	clock.advance(time.Minute)
	c.Check(ctx, "tok", false)
	if n := inner.calls.Load(); n != 4 {
		t.Errorf("after expiry validated %d times, want 4", n)
	}
	// A rejection is not cached.
	inner.grant, inner.err = nil, ErrRevoked
	if _, err := c.Check(ctx, "tok", true); !errors.Is(err, ErrRevoked) {
		t.Errorf("err = %v", err)
	}
	if _, err := c.Check(ctx, "tok", false); !errors.Is(err, ErrRevoked) || inner.calls.Load() != 6 {
		t.Errorf("after a rejection: err %v, calls %d; want the validator asked again", err, inner.calls.Load())
	}
}

// testIntrospector is an RFC 7662 endpoint with per-token answers.
type testIntrospector struct {
	srv   *httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	resp  map[string]map[string]any
}

func newTestIntrospector(t *testing.T) *testIntrospector {
	ti := &testIntrospector{resp: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		ti.calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != "rs%3A1" || secret != "s+cret" { // form-encoded (RFC 6749 §2.3.1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.FormValue("token_type_hint") != "access_token" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ti.mu.Lock()
		ans, ok := ti.resp[r.FormValue("token")]
		ti.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		json.NewEncoder(w).Encode(ans)
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "introspection_endpoint": ti.srv.URL + "/introspect"})
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

func (ti *testIntrospector) set(token string, ans map[string]any) {
	ti.mu.Lock()
	ti.resp[token] = ans
	ti.mu.Unlock()
}

func introspectionScheme(ti *testIntrospector, endpoint string) Scheme {
	return Scheme{ID: "corp", AuthorizationServers: []string{ti.srv.URL}, Validation: Validation{Type: ValidationIntrospection,
		IntrospectionEndpoint: endpoint, ClientID: "rs:1", ClientSecret: "s cret", CacheTTL: Duration(30 * time.Second)}}
}

func TestIntrospection(t *testing.T) {
	ti := newTestIntrospector(t)
	clock := newFakeClock()
	ctx := context.Background()
	exp := clock.now().Add(time.Hour).Unix()
	ti.set("good", map[string]any{"active": true, "sub": "alice", "client_id": "cli", "scope": "agent:use", "exp": exp, "iss": ti.srv.URL, "aud": testResource, "jti": "j1"})
	ti.set("expired", map[string]any{"active": true, "sub": "alice", "exp": clock.now().Add(-time.Second).Unix()})
	ti.set("other-aud", map[string]any{"active": true, "sub": "alice", "aud": []string{"https://other.example"}})
	ti.set("other-iss", map[string]any{"active": true, "sub": "alice", "iss": "https://evil.example"})
	ti.set("username", map[string]any{"active": true, "username": "bob"})

	// The endpoint is discovered from the RFC 8414 metadata.
	v := newIntrospectionValidator(introspectionScheme(ti, ""), testResource, ti.srv.Client(), clock.now)
	g, err := v.Validate(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	if g.Subject != "alice" || g.ClientID != "cli" || g.JTI != "j1" || g.Expiry.Unix() != exp || len(g.Scopes) != 1 {
		t.Errorf("grant = %+v", g)
	}
	if g, err := v.Validate(ctx, "username"); err != nil || g.Subject != "bob" {
		t.Errorf("username: %+v, %v", g, err)
	}
	for token, want := range map[string]struct {
		kind TokenErrorKind
		desc string
	}{
		"unknown":   {TokenRevoked, "not active"},
		"expired":   {TokenExpired, "expired"},
		"other-aud": {TokenInvalid, "audience does not include"},
		"other-iss": {TokenInvalid, "issuer"},
	} {
		_, err := v.Validate(ctx, token)
		var te *TokenError
		if !errors.As(err, &te) || te.Kind != want.kind || !strings.Contains(te.Description, want.desc) {
			t.Errorf("%s: err = %v, want kind %d %q", token, err, want.kind, want.desc)
		}
	}

	// Wrong client credentials: an error, not a token rejection.
	s := introspectionScheme(ti, ti.srv.URL+"/introspect")
	s.Validation.ClientSecret = "wrong"
	_, err = newIntrospectionValidator(s, testResource, ti.srv.Client(), clock.now).Validate(ctx, "good")
	var te *TokenError
	if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("err = %v, want HTTP 401", err)
	}
	if strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "good") {
		t.Errorf("the error leaks a secret: %v", err)
	}
}

func TestIntrospectionCacheTTL(t *testing.T) {
	ti := newTestIntrospector(t)
	clock := newFakeClock()
	ctx := context.Background()
	ti.set("good", map[string]any{"active": true, "sub": "alice", "exp": clock.now().Add(time.Hour).Unix()})
	s := introspectionScheme(ti, ti.srv.URL+"/introspect")
	c := &Checker{scheme: "corp", v: newIntrospectionValidator(s, testResource, ti.srv.Client(), clock.now), cache: newGrantCache(clock.now, 30*time.Second)}
	for range 3 {
		if _, err := c.Check(ctx, "good", false); err != nil {
			t.Fatal(err)
		}
	}
	if n := ti.calls.Load(); n != 1 {
		t.Errorf("introspected %d times within the TTL, want 1", n)
	}
	ti.set("good", map[string]any{"active": false})
	clock.advance(30 * time.Second)
	_, err := c.Check(ctx, "good", false)
	var te *TokenError
	if !errors.As(err, &te) || te.Kind != TokenRevoked || ti.calls.Load() != 2 {
		t.Errorf("after the TTL: err %v, calls %d; want revoked after a second introspection", err, ti.calls.Load())
	}
}

// TestIntrospectionDPoPBinding: a cnf.jkt in the introspection response
// binds the grant to the key (RFC 9449 §6.2), and a cnf this host cannot
// check refuses the token rather than accept it as a bearer token.
func TestIntrospectionDPoPBinding(t *testing.T) {
	ti := newTestIntrospector(t)
	clock := newFakeClock()
	ctx := context.Background()
	ti.set("bound", map[string]any{"active": true, "sub": "alice", "token_type": "DPoP", "cnf": map[string]string{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}})
	ti.set("mtls", map[string]any{"active": true, "sub": "alice", "cnf": map[string]string{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}})
	v := newIntrospectionValidator(introspectionScheme(ti, ""), testResource, ti.srv.Client(), clock.now)
	g, err := v.Validate(ctx, "bound")
	if err != nil || g.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Errorf("bound: grant %+v, err %v; want the cnf.jkt on the grant", g, err)
	}
	_, err = v.Validate(ctx, "mtls")
	var te *TokenError
	if !errors.As(err, &te) || te.Kind != TokenInvalid || !strings.Contains(te.Description, "cnf has no jkt") {
		t.Errorf("mtls: err = %v, want the token refused", err)
	}
}
