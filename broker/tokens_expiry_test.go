package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/state"
)

// TestTokenRecordsExpire: a session's upstream tokens live for
// TokenLifetime from their last use when the upstream gives no refresh
// token lifetime (each use past half of it renews the record), until the
// refresh token's refresh_expires_in when it does, and until the access
// token's expiry when there is no refresh token; a stale record is
// refused at once and swept by the next write.
func TestTokenRecordsExpire(t *testing.T) {
	ctx := context.Background()
	as := newFakeAS(t)
	as.expiresIn = 1000000 // no refresh within the test
	c := &clock{t: time.Now()}
	st := state.NewMemory()
	b := newBroker(t, as, st, nil, c)
	b.tokenLifetime = time.Hour
	alice := b.Session("alice", "cli")
	q, cookie := start(t, b, as, "alice")
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatal(err)
	}
	// Used at 40 minutes: renewed to 1h40; at 1h20 still signed in.
	for i := range 2 {
		c.add(40 * time.Minute)
		if _, err := b.Token(ctx, alice, "rally"); err != nil {
			t.Fatalf("Token at %d minutes: %v", 40*(i+1), err)
		}
	}
	// An hour without use: signed out, and the record swept by bob's
	// sign-in.
	c.add(61 * time.Minute)
	if _, err := b.Token(ctx, alice, "rally"); !errors.Is(err, ErrSignInNeeded) {
		t.Fatalf("Token after an idle hour: %v, want ErrSignInNeeded", err)
	}
	q, cookie = start(t, b, as, "bob")
	if _, err := b.Callback(ctx, q, cookie); err != nil {
		t.Fatal(err)
	}
	err := st.View(ctx, func(tx state.Tx) error { _, err := tx.Get(kindToken, tokenKey(alice, "rally")); return err })
	if !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("alice's stale record: %v, want swept", err)
	}

	// The upstream's refresh token lifetime wins, and a use does not
	// extend it; without a refresh token the access token's expiry ends it.
	now := c.now()
	for _, tok := range []*flows.Token{
		{AccessToken: "a", RefreshToken: "r", Expiry: now.Add(24 * time.Hour), RefreshExpiry: now.Add(50 * time.Minute)},
		{AccessToken: "a", Expiry: now.Add(50 * time.Minute)},
	} {
		c.t = now
		if err := b.putToken(ctx, alice, "rally", tok); err != nil {
			t.Fatal(err)
		}
		c.add(45 * time.Minute)
		if _, err := b.Token(ctx, alice, "rally"); err != nil {
			t.Fatalf("Token at 45 minutes: %v", err)
		}
		c.add(6 * time.Minute)
		if _, err := b.Token(ctx, alice, "rally"); !errors.Is(err, ErrSignInNeeded) {
			t.Fatalf("Token past the refresh token's expiry (%+v): %v, want ErrSignInNeeded", tok.RefreshExpiry, err)
		}
	}
}
