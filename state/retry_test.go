package state

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestPostgresUpdateRetriesDeadlock: two Updates lock two records in
// opposite orders; PostgreSQL aborts one with a deadlock (40P01), and
// Update runs it again, so both succeed.
func TestPostgresUpdateRetriesDeadlock(t *testing.T) {
	s := testPostgres(t)
	ctx := context.Background()
	const kind = Kind("retry")
	err := s.Update(ctx, func(tx Tx) error {
		if err := tx.Put(kind, "a", []byte("0"), time.Time{}); err != nil {
			return err
		}
		return tx.Put(kind, "b", []byte("0"), time.Time{})
	})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	var first sync.WaitGroup // both hold their first lock
	first.Add(2)
	cross := func(own, other string) func(Tx) error {
		once := sync.Once{}
		return func(tx Tx) error {
			runs.Add(1)
			if _, err := tx.Get(kind, own); err != nil {
				return err
			}
			once.Do(func() { first.Done(); first.Wait() })
			if _, err := tx.Get(kind, other); err != nil {
				return err
			}
			return tx.Put(kind, own, []byte(other), time.Time{})
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- s.Update(ctx, cross("a", "b")) }()
	go func() { errs <- s.Update(ctx, cross("b", "a")) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Update: %v, want the deadlock victim run again", err)
		}
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("fn ran %d times, want 3 (one re-run)", n)
	}
}

// TestPostgresUpdateRetryBound: an Update aborted every time is run
// maxUpdateAttempts times, then fails saying so; other errors are not
// retried.
func TestPostgresUpdateRetryBound(t *testing.T) {
	s := testPostgres(t)
	ctx := context.Background()
	runs := 0
	err := s.Update(ctx, func(tx Tx) error {
		runs++
		return &pgconn.PgError{Code: sqlstateSerializationFailure, Message: "could not serialize access"}
	})
	if err == nil || runs != maxUpdateAttempts || !strings.Contains(err.Error(), "aborted the transaction 3 times") {
		t.Errorf("runs %d, err %v; want %d runs and the bound named", runs, err, maxUpdateAttempts)
	}
	runs = 0
	if err := s.Update(ctx, func(tx Tx) error { runs++; return ErrNotFound }); err != ErrNotFound || runs != 1 {
		t.Errorf("runs %d, err %v; want one run and the error as is", runs, err)
	}
}
