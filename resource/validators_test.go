package resource

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
)

func TestStaticLifetimeStartsAtFirstUse(t *testing.T) {
	clock := tokenfake.NewClock()
	s := Scheme{ID: "dev", AuthorizationServers: []string{"https://as.example"}, Validation: Validation{Type: ValidationStatic,
		Tokens: []StaticToken{{Token: "t-short", Subject: "shorty", Scopes: []string{"agent:use"}, ExpiresIn: Duration(2 * time.Second)}, {Token: "t-forever", Subject: "ever"}}}}
	v := newStaticValidator(s, clock.Now)
	ctx := context.Background()

	clock.Advance(time.Hour) // the process has run a while: the lifetime has not started yet
	start := clock.Now()
	g, err := v.Validate(ctx, "t-short")
	if err != nil {
		t.Fatal(err)
	}
	if !g.Expiry.Equal(start.Add(2*time.Second)) || g.Subject != "shorty" || g.Issuer != "https://as.example" {
		t.Errorf("grant = %+v, want expiry 2s after first use", g)
	}
	clock.Advance(1900 * time.Millisecond)
	if _, err := v.Validate(ctx, "t-short"); err != nil {
		t.Errorf("before expiry: %v", err)
	}
	clock.Advance(100 * time.Millisecond)
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

func TestGrantCache(t *testing.T) {
	clock := tokenfake.NewClock()
	ctx := context.Background()
	inner := &tokenfake.CountingValidator[Grant]{Grant: &Grant{Subject: "alice", JTI: "j1", Expiry: clock.Now().Add(time.Minute)}}
	c := &Checker{scheme: "dev", v: inner, cache: newGrantCache(clock.Now, 0)}

	g, err := c.Check(ctx, "tok", false)
	if err != nil || g.Scheme != "dev" {
		t.Fatalf("check = %+v, %v", g, err)
	}
	c.Check(ctx, "tok", false)
	if n := inner.Calls.Load(); n != 1 {
		t.Errorf("validated %d times, want 1 (the second from the cache)", n)
	}
	c.Check(ctx, "tok", true)
	if n := inner.Calls.Load(); n != 2 {
		t.Errorf("fresh check validated %d times in all, want 2", n)
	}
	// A dropped entry is validated again (a revoked token is dropped).
	c.Drop("tok")
	c.Check(ctx, "tok", false)
	if n := inner.Calls.Load(); n != 3 {
		t.Errorf("after a drop validated %d times, want 3", n)
	}
	// An entry does not outlive the grant.
	clock.Advance(time.Minute)
	c.Check(ctx, "tok", false)
	if n := inner.Calls.Load(); n != 4 {
		t.Errorf("after expiry validated %d times, want 4", n)
	}
	// A rejection is not cached.
	inner.Grant, inner.Err = nil, ErrRevoked
	if _, err := c.Check(ctx, "tok", true); !errors.Is(err, ErrRevoked) {
		t.Errorf("err = %v", err)
	}
	if _, err := c.Check(ctx, "tok", false); !errors.Is(err, ErrRevoked) || inner.Calls.Load() != 6 {
		t.Errorf("after a rejection: err %v, calls %d; want the validator asked again", err, inner.Calls.Load())
	}
}

func introspectionScheme(ti *tokenfake.Introspector, endpoint string) Scheme {
	return Scheme{ID: "corp", AuthorizationServers: []string{ti.URL}, Validation: Validation{Type: ValidationIntrospection,
		IntrospectionEndpoint: endpoint, ClientID: "rs:1", ClientSecret: "s cret", CacheTTL: Duration(30 * time.Second)}}
}

func TestIntrospection(t *testing.T) {
	ti := tokenfake.NewIntrospector(t)
	clock := tokenfake.NewClock()
	ctx := context.Background()
	exp := clock.Now().Add(time.Hour).Unix()
	ti.Set("good", map[string]any{"active": true, "sub": "alice", "client_id": "cli", "scope": "agent:use", "exp": exp, "iss": ti.URL, "aud": testResource, "jti": "j1"})
	ti.Set("expired", map[string]any{"active": true, "sub": "alice", "aud": testResource, "exp": clock.Now().Add(-time.Second).Unix()})
	ti.Set("other-aud", map[string]any{"active": true, "sub": "alice", "aud": []string{"https://other.example"}})
	ti.Set("other-iss", map[string]any{"active": true, "sub": "alice", "iss": "https://evil.example"})
	ti.Set("username", map[string]any{"active": true, "username": "bob", "aud": []string{"https://other.example", testResource}})

	// The endpoint is discovered from the RFC 8414 metadata.
	v := newIntrospectionValidator(introspectionScheme(ti, ""), testResource, ti.Client(), clock.Now)
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
	s := introspectionScheme(ti, ti.URL+"/introspect")
	s.Validation.ClientSecret = "wrong"
	_, err = newIntrospectionValidator(s, testResource, ti.Client(), clock.Now).Validate(ctx, "good")
	var te *TokenError
	if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("err = %v, want HTTP 401", err)
	}
	if strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "good") {
		t.Errorf("the error leaks a secret: %v", err)
	}
}

func TestIntrospectionCacheTTL(t *testing.T) {
	ti := tokenfake.NewIntrospector(t)
	clock := tokenfake.NewClock()
	ctx := context.Background()
	ti.Set("good", map[string]any{"active": true, "sub": "alice", "aud": testResource, "exp": clock.Now().Add(time.Hour).Unix()})
	s := introspectionScheme(ti, ti.URL+"/introspect")
	c := &Checker{scheme: "corp", v: newIntrospectionValidator(s, testResource, ti.Client(), clock.Now), cache: newGrantCache(clock.Now, 30*time.Second)}
	for range 3 {
		if _, err := c.Check(ctx, "good", false); err != nil {
			t.Fatal(err)
		}
	}
	if n := ti.Calls.Load(); n != 1 {
		t.Errorf("introspected %d times within the TTL, want 1", n)
	}
	ti.Set("good", map[string]any{"active": false})
	clock.Advance(30 * time.Second)
	_, err := c.Check(ctx, "good", false)
	var te *TokenError
	if !errors.As(err, &te) || te.Kind != TokenRevoked || ti.Calls.Load() != 2 {
		t.Errorf("after the TTL: err %v, calls %d; want revoked after a second introspection", err, ti.Calls.Load())
	}
}

// TestIntrospectionDPoPBinding: a cnf.jkt in the introspection response
// binds the grant to the key (RFC 9449 §6.2), and a cnf this host cannot
// check refuses the token rather than accept it as a bearer token.
func TestIntrospectionDPoPBinding(t *testing.T) {
	ti := tokenfake.NewIntrospector(t)
	clock := tokenfake.NewClock()
	ctx := context.Background()
	ti.Set("bound", map[string]any{"active": true, "sub": "alice", "aud": testResource, "token_type": "DPoP", "cnf": map[string]string{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}})
	ti.Set("mtls", map[string]any{"active": true, "sub": "alice", "cnf": map[string]string{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}})
	v := newIntrospectionValidator(introspectionScheme(ti, ""), testResource, ti.Client(), clock.Now)
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
