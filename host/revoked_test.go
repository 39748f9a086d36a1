package host

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
	"github.com/agentauth/agentauth/wire"
	jose "github.com/go-jose/go-jose/v4"
)

// TestRevocations: a revoked id is refused until its expiry and swept
// after; a held grant is found by its jti and by its family, and no longer
// once unheld; a grant held after its revocation is reported revoked.
func TestRevocations(t *testing.T) {
	r := newRevocations()
	t0 := time.Now()
	tab := &grantTable{}
	byJTI := &held{grant: &Grant{JTI: "j1", Family: "f1"}}
	byFamily := &held{grant: &Grant{JTI: "j2", Family: "f1"}}
	other := &held{grant: &Grant{JTI: "j3", Family: "f2"}}
	for _, e := range []*held{byJTI, byFamily, other} {
		if r.hold(tab, e) {
			t.Fatalf("%v held as revoked before any revocation", e.grant)
		}
	}
	hit := r.add(t0, t0.Add(time.Minute), map[string]bool{"f1": true})
	if len(hit) != 2 || hit[byJTI] == nil || hit[byFamily] == nil {
		t.Errorf("revoking family f1 hit %d grants, want its 2", len(hit))
	}
	if !r.revoked(byJTI.grant) || r.revoked(other.grant) {
		t.Error("revoked() does not follow the family")
	}
	r.unhold(other)
	if hit := r.add(t0, t0.Add(time.Minute), map[string]bool{"j3": true}); len(hit) != 0 {
		t.Errorf("an unheld grant was hit: %d", len(hit))
	}
	if !r.hold(tab, &held{grant: &Grant{JTI: "j9", Family: "f1"}}) {
		t.Error("a grant of a revoked family held afterwards is not reported revoked")
	}
	// A later revocation sweeps the expired ids.
	r.add(t0.Add(2*time.Minute), t0.Add(3*time.Minute), map[string]bool{"x": true})
	if r.has("f1") || r.has("j3") || !r.has("x") {
		t.Errorf("after expiry: f1 %v, j3 %v, x %v; want only x", r.has("f1"), r.has("j3"), r.has("x"))
	}
}

// BenchmarkRevocations: the cost of one revocation and of one check with
// n revocations already in force does not grow with n (it was a copy of
// the whole set per revocation). Run with:
//
//	go test -run '^$' -bench Revocations ./host/
func BenchmarkRevocations(b *testing.B) {
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("prior=%d", n), func(b *testing.B) {
			r := newRevocations()
			now := time.Now()
			for k := range n {
				r.add(now, now.Add(time.Hour), map[string]bool{fmt.Sprintf("prior-%d", k): true})
			}
			g := &Grant{JTI: "live", Family: "family"}
			k := 0
			for b.Loop() {
				r.add(now, now.Add(time.Hour), map[string]bool{fmt.Sprintf("new-%d", k): true})
				if r.revoked(g) {
					b.Fatal("a live grant is revoked")
				}
				k++
			}
		})
	}
}

func TestNotifyRevoked(t *testing.T) {
	ti := tokenfake.NewIssuer(t)
	k := tokenfake.NewKey(t, "k", jose.ES256)
	ti.Publish(k)
	config := `{"resource": "` + testResource + `", "schemes": [{"id": "as", "authorizationServers": ["` + ti.URL + `"], "validation": {"type": "jwt"}}]}`
	c, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: c, HTTPClient: ti.Client()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	ctx := context.Background()
	tok := k.Sign(t, tokenfake.Claims(ti.URL, testResource, time.Now()), "at+jwt")
	a := initialized(t, h, wire.DialectDesign)
	b := initialized(t, h, wire.DialectPublished)
	for _, cl := range []*wire.Client{a, b} {
		if err := wire.Authenticate(ctx, cl, wire.DialectDesign, wire.Requirement{SchemeID: "as"}, tok); err != nil {
			t.Fatal(err)
		}
	}
	h.NotifyRevoked(time.Time{}, "other-jti")
	noPush(t, a)
	h.NotifyRevoked(time.Time{}, "jti-1")
	if got := designPush(t, nextPush(t, a)); got.State != wire.StateRevoked || got.Challenge.ErrorDescription != "The access token was revoked" {
		t.Errorf("push = %+v", got)
	}
	if m := nextPush(t, b); m.Method != wire.MethodAuthRequired || !strings.Contains(string(m.Params), `"reason":"expired"`) {
		t.Errorf("published push = %s %s", m.Method, m.Params)
	}
	// The revoked token is refused from now on.
	got := challenges(t, authenticate(t, a, "as", tok))
	if got[0].Error != wire.ErrInvalidToken || got[0].ErrorDescription != "The access token was revoked" {
		t.Errorf("re-authenticate: %+v", got)
	}
}

func TestIntrospectedTokenTurningInactiveIsPushed(t *testing.T) {
	ti := tokenfake.NewIntrospector(t)
	ti.Set("live", map[string]any{"active": true, "sub": "alice", "aud": "http://127.0.0.1:7777/mcp"})
	config := `{"schemes": [{"id": "corp", "authorizationServers": ["` + ti.URL + `"], "validation": {"type": "introspection",
	  "clientId": "rs:1", "clientSecret": "s cret", "cacheTTL": "50ms"}}]}`
	h := newTestHost(t, config, Options{HTTPClient: ti.Client()})
	c := initialized(t, h, wire.DialectDesign)
	if err := authenticate(t, c, "corp", "live"); err != nil {
		t.Fatal(err)
	}
	ti.Set("live", map[string]any{"active": false})
	got := designPush(t, nextPush(t, c))
	if got.State != wire.StateRevoked || !strings.Contains(got.Challenge.ErrorDescription, "not active") {
		t.Errorf("push = %+v", got)
	}
}

// An introspected token whose answer names no audience is refused with
// the usual invalid_token; the operator's log names the option that would
// accept it (validation.allowMissingAudience), the client's challenge
// does not.
func TestIntrospectionWithoutAudienceIsRefused(t *testing.T) {
	ti := tokenfake.NewIntrospector(t)
	ti.Set("no-aud", map[string]any{"active": true, "sub": "alice"})
	config := `{"schemes": [{"id": "corp", "authorizationServers": ["` + ti.URL + `"], "validation": {"type": "introspection",
	  "clientId": "rs:1", "clientSecret": "s cret"}}]}`
	var log strings.Builder
	h := newTestHost(t, config, Options{HTTPClient: ti.Client(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	g, ch, err := h.ValidateBearer(context.Background(), "no-aud")
	if err != nil || g != nil || ch == nil || ch.Error != wire.ErrInvalidToken || strings.Contains(ch.ErrorDescription, "allowMissingAudience") {
		t.Fatalf("grant %+v, challenge %+v, err %v; want invalid_token without the option's name", g, ch, err)
	}
	if !strings.Contains(log.String(), "outcome=rejected") || !strings.Contains(log.String(), "allowMissingAudience") {
		t.Errorf("the log does not name the option:\n%s", log.String())
	}
}

// A JTI revoked before the host ever saw its token stays refused until the
// time NotifyRevoked was given, even past the 24-hour default.
func TestRevokedUnseenTokenStaysRefusedUntilItExpires(t *testing.T) {
	ti := tokenfake.NewIssuer(t)
	k := tokenfake.NewKey(t, "k", jose.ES256)
	ti.Publish(k)
	clock := tokenfake.NewClock()
	config := `{"resource": "` + testResource + `", "schemes": [{"id": "as", "authorizationServers": ["` + ti.URL + `"], "validation": {"type": "jwt"}}]}`
	c, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: c, HTTPClient: ti.Client(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	cl := tokenfake.Claims(ti.URL, testResource, clock.Now())
	cl["exp"] = clock.Now().Add(72 * time.Hour).Unix()
	tok := k.Sign(t, cl, "at+jwt")

	h.NotifyRevoked(clock.Now().Add(72*time.Hour), "jti-1")
	clock.Advance(48 * time.Hour)
	h.NotifyRevoked(time.Time{}, "another-jti") // prunes what has run out
	if _, ch, err := h.ValidateBearer(context.Background(), tok); err != nil || ch == nil || ch.ErrorDescription != "The access token was revoked" {
		t.Errorf("a revoked token 48h later: challenge %+v, err %v; want it refused as revoked", ch, err)
	}
}
