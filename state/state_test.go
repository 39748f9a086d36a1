package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// stores returns every backend the tests can run here, each empty.
func stores(t *testing.T) map[string]Store {
	t.Helper()
	sq, err := OpenSQLite(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	out := map[string]Store{"memory": NewMemory(), "sqlite": sq}
	if pg := testPostgres(t); pg != nil {
		out["postgres"] = pg
	}
	return out
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	t0 := time.UnixMilli(1_700_000_000_000)
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			err := s.Update(ctx, func(tx Tx) error {
				if _, err := tx.Get("code", "a"); !errors.Is(err, ErrNotFound) {
					t.Errorf("Get of a missing record: %v, want ErrNotFound", err)
				}
				for k, exp := range map[string]time.Time{"a": t0.Add(time.Second), "b": t0.Add(2 * time.Second), "c": t0.Add(3 * time.Second), "never": {}} {
					if err := tx.Put("code", k, []byte("v"+k), exp); err != nil {
						return err
					}
				}
				return tx.Put("other", "a", []byte("x"), t0)
			})
			if err != nil {
				t.Fatal(err)
			}
			// A failed transaction leaves nothing behind.
			boom := errors.New("boom")
			err = s.Update(ctx, func(tx Tx) error {
				tx.Put("code", "a", []byte("changed"), time.Time{})
				tx.Put("code", "new", []byte("new"), time.Time{})
				tx.Delete("code", "b")
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Update = %v, want boom", err)
			}
			s.View(ctx, func(tx Tx) error {
				if v, err := tx.Get("code", "a"); string(v) != "va" || err != nil {
					t.Errorf("after a rollback, a = %q, %v; want va", v, err)
				}
				if _, err := tx.Get("code", "new"); !errors.Is(err, ErrNotFound) {
					t.Errorf("after a rollback, new exists: %v", err)
				}
				if n, _ := tx.Count("code", 100); n != 4 {
					t.Errorf("Count = %d, want 4", n)
				}
				if n, _ := tx.Count("code", 3); n != 3 {
					t.Errorf("Count up to 3 = %d, want 3", n)
				}
				return nil
			})
			s.Update(ctx, func(tx Tx) error {
				if err := tx.DeleteFirstExpiring("code"); err != nil {
					t.Error(err)
				}
				if _, err := tx.Get("code", "a"); !errors.Is(err, ErrNotFound) {
					t.Errorf("DeleteFirstExpiring kept a: %v", err)
				}
				if n, err := tx.DeleteExpired("code", t0.Add(2500*time.Millisecond), 10); n != 1 || err != nil {
					t.Errorf("DeleteExpired = %d, %v; want 1", n, err)
				}
				recs, err := tx.List("code")
				if err != nil || len(recs) != 2 || recs[0].Key != "c" || !recs[0].Expires.Equal(t0.Add(3*time.Second)) || recs[1].Key != "never" || !recs[1].Expires.IsZero() {
					t.Errorf("List = %+v, %v; want c and never", recs, err)
				}
				return nil
			})
			if n, err := s.Sweep(ctx, t0.Add(time.Hour), 1); n != 1 || err != nil {
				t.Errorf("Sweep with limit 1 = %d, %v; want 1", n, err)
			}
			if n, err := s.Sweep(ctx, t0.Add(time.Hour), 10); n != 1 || err != nil {
				t.Errorf("second Sweep = %d, %v; want 1", n, err)
			}
			s.View(ctx, func(tx Tx) error {
				if v, err := tx.Get("code", "never"); string(v) != "vnever" || err != nil {
					t.Errorf("Sweep deleted a record that never expires: %q, %v", v, err)
				}
				return nil
			})
		})
	}
}

func TestSQLiteFileModeAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx Tx) error { return tx.Put("k", "a", []byte("kept"), time.Time{}) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{dir, filepath.Join(dir, SQLiteFile)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no group or other access", p, fi.Mode().Perm())
		}
	}
	s, err = OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(ctx, func(tx Tx) error {
		if v, err := tx.Get("k", "a"); string(v) != "kept" || err != nil {
			t.Errorf("after reopening, a = %q, %v", v, err)
		}
		return nil
	})
}

// TestSQLiteMigrations: a newer binary (more migrations) migrates an older
// database; an older binary refuses a newer one and says why.
func TestSQLiteMigrations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	older := migrations
	newer := append(append([][]string{}, migrations...), []string{`CREATE TABLE added_later (x INTEGER)`})
	s, err := openSQLite(ctx, dir, older)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = openSQLite(ctx, dir, newer)
	if err != nil {
		t.Fatalf("a newer binary cannot open an older database: %v", err)
	}
	if _, err := s.one.ExecContext(ctx, `INSERT INTO added_later (x) VALUES (1)`); err != nil {
		t.Errorf("the newer migration did not run: %v", err)
	}
	s.Close()
	_, err = openSQLite(ctx, dir, older)
	var ne *NewerSchemaError
	if !errors.As(err, &ne) || ne.Have != len(newer) || ne.Know != len(older) {
		t.Fatalf("an older binary opened a newer database: %v", err)
	}
}

// TestTxReadsItsWrites: a transaction reads back what it wrote and deleted
// before committing (the SQL stores send writes at commit, in batches), a
// later write of a record replaces an earlier one, and more records than
// one batch holds all reach the store.
func TestTxReadsItsWrites(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			many := 2*maxBatchRows + 1
			err := s.Update(ctx, func(tx Tx) error {
				for k := range many {
					if err := tx.Put("grant", fmt.Sprint(k), []byte("old"), time.Time{}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Update(ctx, func(tx Tx) error {
				for k := range many {
					if err := tx.Delete("grant", fmt.Sprint(k)); err != nil {
						return err
					}
				}
				tx.Put("grant", "0", []byte("new"), time.Time{})
				tx.Put("grant", "0", []byte("newer"), time.Time{})
				if v, err := tx.Get("grant", "0"); err != nil || string(v) != "newer" {
					t.Errorf("Get of a record written twice in the transaction: %q, %v; want newer", v, err)
				}
				if _, err := tx.Get("grant", "1"); !errors.Is(err, ErrNotFound) {
					t.Errorf("Get of a record deleted in the transaction: %v, want ErrNotFound", err)
				}
				n, err := tx.Count("grant", 100)
				if err == nil && n != 1 {
					t.Errorf("Count in the transaction: %d, want 1", n)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			err = s.View(ctx, func(tx Tx) error {
				recs, err := tx.List("grant")
				if err == nil && (len(recs) != 1 || recs[0].Key != "0" || string(recs[0].Value) != "newer") {
					t.Errorf("after commit: %v, want only 0=newer", recs)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCancelledTransaction: a request cancelled in the middle of its
// transaction writes nothing and leaves the store usable; concurrent
// transactions (SQLite runs them in turn on one connection) all commit.
func TestCancelledTransaction(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			err := s.Update(ctx, func(tx Tx) error {
				if err := tx.Put("grant", "cancelled", []byte("x"), time.Time{}); err != nil {
					return err
				}
				cancel()
				_, err := tx.Get("grant", "other")
				return err
			})
			if err == nil {
				t.Fatal("a transaction whose context was cancelled committed")
			}
			done := make(chan error)
			for k := range 20 {
				go func() {
					done <- s.Update(context.Background(), func(tx Tx) error {
						return tx.Put("grant", fmt.Sprint(k), []byte("v"), time.Time{})
					})
				}()
			}
			for range 20 {
				if err := <-done; err != nil {
					t.Fatalf("concurrent Update after a cancelled one: %v", err)
				}
			}
			s.View(context.Background(), func(tx Tx) error {
				if _, err := tx.Get("grant", "cancelled"); !errors.Is(err, ErrNotFound) {
					t.Errorf("the cancelled transaction's write is stored: %v", err)
				}
				if n, err := tx.Count("grant", 100); n != 20 || err != nil {
					t.Errorf("Count = %d, %v; want the 20 concurrent writes", n, err)
				}
				return nil
			})
		})
	}
}
