package state

import (
	"context"
	"testing"
	"time"

	"github.com/agentauth/agentauth/state/statetest"
)

// testPostgres starts a PostgreSQL server for t (or skips, see statetest).
func testPostgres(t *testing.T) Store {
	t.Helper()
	p, err := OpenPostgres(context.Background(), statetest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPostgresNotify: a revocation published by one replica reaches the
// others' OnRevoked callbacks, not its own.
func TestPostgresNotify(t *testing.T) {
	url := statetest.Postgres(t)
	ctx := context.Background()
	open := func() (*Postgres, chan []string) {
		p, err := OpenPostgres(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		got := make(chan []string, 10)
		p.OnRevoked(func(jtis []string) { got <- jtis })
		return p, got
	}
	a, fromA := open()
	_, toB := open()
	many := make([]string, 1000) // more than one notification holds
	for k := range many {
		many[k] = "jti-" + time.Duration(k).String() + "-0123456789012345678901"
	}
	if err := a.PublishRevoked(ctx, many); err != nil {
		t.Fatal(err)
	}
	var received []string
	for len(received) < len(many) {
		select {
		case jtis := <-toB:
			received = append(received, jtis...)
		case <-time.After(10 * time.Second):
			t.Fatalf("replica B received %d of %d revoked jtis", len(received), len(many))
		}
	}
	for k := range many {
		if received[k] != many[k] {
			t.Fatalf("jti %d: got %q, want %q", k, received[k], many[k])
		}
	}
	select {
	case jtis := <-fromA:
		t.Errorf("replica A was told of its own revocation: %v", jtis)
	default:
	}
}

// TestPostgresNotifyConfig: a configuration change published by one
// replica reaches the others' OnConfigChanged callbacks, not its own, and
// not their OnRevoked ones.
func TestPostgresNotifyConfig(t *testing.T) {
	url := statetest.Postgres(t)
	ctx := context.Background()
	open := func() (*Postgres, chan struct{}, chan []string) {
		p, err := OpenPostgres(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		changed, revoked := make(chan struct{}, 10), make(chan []string, 10)
		p.OnConfigChanged(func() { changed <- struct{}{} })
		p.OnRevoked(func(jtis []string) { revoked <- jtis })
		return p, changed, revoked
	}
	a, fromA, _ := open()
	_, toB, revokedB := open()
	if err := a.PublishConfigChanged(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-toB:
	case <-time.After(10 * time.Second):
		t.Fatal("replica B was not told of the configuration change")
	}
	// A's own notification came before any later one: publish a
	// revocation and wait for it, then nothing else may be pending.
	if err := a.PublishRevoked(ctx, []string{"jti-1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case jtis := <-revokedB:
		if len(jtis) != 1 || jtis[0] != "jti-1" {
			t.Errorf("replica B's revoked jtis: got %v, want [jti-1]", jtis)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replica B was not told of the revocation")
	}
	select {
	case <-fromA:
		t.Error("replica A was told of its own configuration change")
	default:
	}
}
