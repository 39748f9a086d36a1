package state

import (
	"context"
	"fmt"
	"sync"
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

// revokeAndPublish commits ids to p's revocation log and notifies the
// other replicas, as the issuer does.
func revokeAndPublish(t *testing.T, p *Postgres, ids ...string) {
	t.Helper()
	err := p.Update(context.Background(), func(tx Tx) error {
		for _, id := range ids {
			if err := tx.Revoke(id, time.Now().Add(time.Hour)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PublishRevoked(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
}

// twoReplicas opens two stores on one PostgreSQL database, as two
// replicas do, with the reconciliation interval set long (so what B
// receives came by notification): A, and what B's OnRevoked receives.
func twoReplicas(t *testing.T) (*Postgres, chan []string) {
	url := statetest.Postgres(t)
	open := func() *Postgres {
		p, err := OpenPostgresOptions(context.Background(), url, PostgresOptions{ReconcileEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	a, b := open(), open()
	got := make(chan []string, 100)
	b.OnRevoked(func(jtis []string) { got <- jtis })
	return a, got
}

// TestPostgresNotify: revocations committed by one replica reach the
// others' OnRevoked callbacks in commit order, more than one page of the
// log at once, announced by a notification (well before the
// reconciliation interval, set long here).
func TestPostgresNotify(t *testing.T) {
	a, toB := twoReplicas(t)
	many := make([]string, 2500) // more than one page of the log
	for k := range many {
		many[k] = fmt.Sprintf("jti-%04d-0123456789012345678901", k)
	}
	revokeAndPublish(t, a, many...)
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
}

// TestPostgresRevocationAnnouncedAtCommit: a transaction that revokes
// announces it itself when it commits, with nothing published after it:
// the other replica applies it at once (the reconciliation interval is
// set long here), and a notification can no longer be lost between the
// commit and a separate announcement.
func TestPostgresRevocationAnnouncedAtCommit(t *testing.T) {
	a, toB := twoReplicas(t)
	err := a.Update(context.Background(), func(tx Tx) error { return tx.Revoke("jti-at-commit", time.Now().Add(time.Hour)) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case jtis := <-toB:
		if len(jtis) != 1 || jtis[0] != "jti-at-commit" {
			t.Errorf("replica B's revoked jtis: got %v, want [jti-at-commit]", jtis)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replica B was not told of the revocation its transaction committed")
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
	revokeAndPublish(t, a, "jti-1")
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

// TestPostgresPoolNoSelfDeadlock: many more concurrent transactions than
// the pool has connections, each flushing deletions and writes of every
// shape, all commit (a statement prepared inside a transaction once took
// a second connection, and a full pool waited on itself forever).
func TestPostgresPoolNoSelfDeadlock(t *testing.T) {
	p := testPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8*postgresConns())
	for g := range 8 * postgresConns() {
		wg.Go(func() {
			errs <- p.Update(ctx, func(tx Tx) error {
				for k := range g%maxBatchRows + 1 {
					tx.Delete("code", fmt.Sprintf("old-%d-%d", g, k))
				}
				for k := range (g/maxBatchRows)%maxBatchRows + 1 {
					tx.Put("grant", fmt.Sprintf("new-%d-%d", g, k), []byte("v"), time.Time{})
				}
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkPostgresRevoke: one revocation as the issuer makes it (a
// transaction that writes it to the log, then PublishRevoked), with a
// second replica listening; ns/op is the time until the revocation
// endpoint could answer.
func BenchmarkPostgresRevoke(b *testing.B) {
	url := statetest.Postgres(b)
	ctx := context.Background()
	var ps []*Postgres
	for range 2 {
		p, err := OpenPostgres(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		ps = append(ps, p)
	}
	a := ps[0]
	b.ResetTimer()
	for k := range b.N {
		id := fmt.Sprintf("bench-%d", k)
		if err := a.Update(ctx, func(tx Tx) error { return tx.Revoke(id, time.Now().Add(time.Hour)) }); err != nil {
			b.Fatal(err)
		}
		if err := a.PublishRevoked(ctx, []string{id}); err != nil {
			b.Fatal(err)
		}
	}
}
