package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openGrouped opens an SQLite store and returns it with a function that
// holds its connection until n Updates wait in its queue, so that they
// are committed as one group.
func openGrouped(t *testing.T) (*SQLite, func(n int) func()) {
	t.Helper()
	s, err := OpenSQLite(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hold := func(n int) func() {
		s.oneMu.Lock()
		return func() {
			waitQueued(s, n)
			s.oneMu.Unlock()
		}
	}
	return s, hold
}

// waitQueued waits until n Updates wait in s's queue.
func waitQueued(s *SQLite, n int) {
	for {
		s.queue.mu.Lock()
		waiting := len(s.queue.waiting)
		s.queue.mu.Unlock()
		if waiting == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func read(t *testing.T, s Store, key string) string {
	t.Helper()
	var v []byte
	err := s.View(context.Background(), func(tx Tx) (err error) {
		v, err = tx.Get("test", key)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return "(none)"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// A group commits every member that succeeded; a member that failed is
// rolled back alone, and later members see what earlier ones wrote, as if
// they had run one after another.
func TestGroupCommitKeepsEachUpdateItsOwn(t *testing.T) {
	s, hold := openGrouped(t)
	const n = 8
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, n)
	unhold := hold(n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Update(ctx, func(tx Tx) error {
				// Each member appends its number to a shared record.
				v, err := tx.Get("test", "shared")
				if err != nil && !errors.Is(err, ErrNotFound) {
					return err
				}
				if err := tx.Put("test", "shared", fmt.Appendf(v, "%d,", i), time.Time{}); err != nil {
					return err
				}
				if err := tx.Put("test", fmt.Sprint("own", i), []byte("written"), time.Time{}); err != nil {
					return err
				}
				if i%3 == 1 {
					return fmt.Errorf("member %d fails", i)
				}
				return nil
			})
		})
	}
	unhold()
	wg.Wait()
	var kept int
	for i := range n {
		want, wantErr := "written", false
		if i%3 == 1 {
			want, wantErr = "(none)", true
		} else {
			kept++
		}
		if (errs[i] != nil) != wantErr {
			t.Errorf("member %d: error %v", i, errs[i])
		}
		if got := read(t, s, fmt.Sprint("own", i)); got != want {
			t.Errorf("member %d's own record: %q, want %q", i, got, want)
		}
	}
	// The shared record holds each committed member once: no failed
	// member's number, none lost.
	shared := strings.Split(strings.TrimSuffix(read(t, s, "shared"), ","), ",")
	for i := range n {
		if has := slices.Contains(shared, fmt.Sprint(i)); has != (i%3 != 1) {
			t.Errorf("shared record %q: member %d present %v", shared, i, has)
		}
	}
	if len(shared) != kept {
		t.Errorf("shared record %q: want %d numbers", shared, kept)
	}
}

// An Update whose caller gave up before its turn in a group is not run.
func TestGroupCommitSkipsCancelled(t *testing.T) {
	s, hold := openGrouped(t)
	ctx, cancel := context.WithCancel(context.Background())
	unhold := hold(3)
	var wg sync.WaitGroup
	var ran atomic.Int32
	errs := make([]error, 3)
	for i := range 3 {
		c := context.Background()
		if i == 1 {
			c = ctx
		}
		wg.Go(func() {
			errs[i] = s.Update(c, func(tx Tx) error {
				ran.Add(1)
				return tx.Put("test", fmt.Sprint("k", i), []byte("v"), time.Time{})
			})
		})
	}
	waitQueued(s, 3)
	cancel()
	unhold()
	wg.Wait()
	if !errors.Is(errs[1], context.Canceled) || errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors %v", errs)
	}
	if ran.Load() != 2 || read(t, s, "k1") != "(none)" || read(t, s, "k2") != "v" {
		t.Errorf("ran %d functions; k1 %q k2 %q", ran.Load(), read(t, s, "k1"), read(t, s, "k2"))
	}
}

// When the shared transaction itself fails, nothing of it is kept and
// each member runs again alone.
func TestGroupCommitFailureRunsEachAlone(t *testing.T) {
	s, hold := openGrouped(t)
	// RELEASE, run only in groups, now fails as the database would.
	broken, err := s.one.PrepareContext(context.Background(), `SELECT abs(-9223372036854775807 - 1)`)
	if err != nil {
		t.Fatal(err)
	}
	defer broken.Close()
	good := s.release
	s.release = broken
	defer func() { s.release = good }()

	const n = 4
	runs := make([]atomic.Int32, n)
	errs := make([]error, n)
	unhold := hold(n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Update(context.Background(), func(tx Tx) error {
				runs[i].Add(1)
				return tx.Put("test", fmt.Sprint("k", i), []byte("v"), time.Time{})
			})
		})
	}
	unhold()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || read(t, s, fmt.Sprint("k", i)) != "v" {
			t.Errorf("member %d: error %v, record %q", i, errs[i], read(t, s, fmt.Sprint("k", i)))
		}
	}
	// The group's first member ran in it before RELEASE failed, then
	// alone; the others alone only.
	var total int32
	for i := range n {
		total += runs[i].Load()
	}
	if total != n+1 {
		t.Errorf("%d runs of %d functions, want %d (the first in the group, then each alone)", total, n, n+1)
	}
}

// A function that panics fails alone: the others in its group commit, the
// panic reaches its own caller, and the store keeps working.
func TestGroupCommitPanicFailsOnlyItsCaller(t *testing.T) {
	s, hold := openGrouped(t)
	const n = 4
	errs := make([]error, n)
	panics := make([]any, n)
	unhold := hold(n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = s.Update(context.Background(), func(tx Tx) error {
				if err := tx.Put("test", fmt.Sprint("k", i), []byte("v"), time.Time{}); err != nil {
					return err
				}
				if i == 2 {
					panic("member 2 panics")
				}
				return nil
			})
		})
	}
	unhold()
	wg.Wait()
	for i := range n {
		want := "v"
		if i == 2 {
			want = "(none)"
			if panics[i] != "member 2 panics" {
				t.Errorf("member 2's caller recovered %v, want its panic", panics[i])
			}
		} else if errs[i] != nil || panics[i] != nil {
			t.Errorf("member %d: error %v, panic %v", i, errs[i], panics[i])
		}
		if got := read(t, s, fmt.Sprint("k", i)); got != want {
			t.Errorf("member %d's record: %q, want %q", i, got, want)
		}
	}
	if err := s.Update(context.Background(), func(tx Tx) error { return tx.Put("test", "after", []byte("v"), time.Time{}) }); err != nil || read(t, s, "after") != "v" {
		t.Fatalf("an Update after the panic: %v", err)
	}
}

// Commits are copied from the write-ahead log into the database file in
// the background, without closing the store, and the log stays bounded.
func TestBackgroundCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSQLite(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := filepath.Join(dir, SQLiteFile)
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 2000)
	for i := range 4 * checkpointEvery {
		if err := s.Update(context.Background(), func(tx Tx) error {
			return tx.Put("test", fmt.Sprint("k", i), value, time.Time{})
		}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, err := os.Stat(db)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() > before.Size()+int64(len(value))*checkpointEvery {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes after %d commits: nothing was checkpointed into it", after.Size(), 4*checkpointEvery)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWriteAheadLogBounded writes five times the log's limit: however
// slow the background checkpoints are, the writer's own keep the log
// file under twice the limit and a commit.
func TestWriteAheadLogBounded(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSQLite(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wal := filepath.Join(dir, SQLiteFile) + "-wal"
	value := make([]byte, 2000)
	var largest int64
	for i := 0; i < 5*walLimitBytes/len(value); i++ {
		if err := s.Update(context.Background(), func(tx Tx) error {
			return tx.Put("test", fmt.Sprint("k", i), value, time.Time{})
		}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(wal)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, st.Size())
	}
	if largest > 2*walLimitBytes+16*sqlitePageSize {
		t.Errorf("the write-ahead log grew to %d bytes (limit %d)", largest, walLimitBytes)
	}
}

// BenchmarkSQLiteGrowth is a refresh's work on the store (read the record
// of the token issued 16 refreshes earlier, as 16 refresh chains present
// theirs, write a new one, commit) with the table already holding 0,
// 100,000 and 400,000 records: on a store whose cost does not grow with
// its history the three take about as long (see sqliteCacheKiB for what
// they took). keys=hash keys the records by a hash, as refresh tokens
// were, so each write lands on a random page of the table;
// keys=issued puts the issue order first, as the issuer's refreshKey now
// does, so writes and reads stay in the table's last pages.
func BenchmarkSQLiteGrowth(b *testing.B) {
	hashed := func(i int) string { return fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15) }
	keys := map[string]func(int) string{
		"hash":   hashed,
		"issued": func(i int) string { return fmt.Sprintf("%016x.", uint64(i)) + hashed(i) },
	}
	for _, order := range []string{"hash", "issued"} {
		key := keys[order]
		for _, n := range []int{0, 100_000, 400_000} {
			b.Run(fmt.Sprintf("keys=%s/records=%d", order, n), func(b *testing.B) {
				s, err := OpenSQLite(context.Background(), b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				value := make([]byte, 150)
				ctx := context.Background()
				for i := 0; i < n; i += 1000 {
					if err := s.Update(ctx, func(tx Tx) error {
						for j := i; j < min(i+1000, n); j++ {
							if err := tx.Put("refresh", key(j), value, time.Now().Add(time.Hour)); err != nil {
								return err
							}
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				next := n
				b.ResetTimer()
				for range b.N {
					if err := s.Update(ctx, func(tx Tx) error {
						if next >= 16 {
							if _, err := tx.Peek("refresh", key(next-16)); err != nil {
								return err
							}
						}
						return tx.Put("refresh", key(next), value, time.Now().Add(time.Hour))
					}); err != nil {
						b.Fatal(err)
					}
					next++
				}
			})
		}
	}
}

// A View whose function panics leaves the connection outside any
// transaction: the next Update works.
func TestViewPanicEndsItsTransaction(t *testing.T) {
	s, _ := openGrouped(t)
	func() {
		defer func() { recover() }()
		s.View(context.Background(), func(Tx) error { panic("view panics") })
	}()
	if err := s.Update(context.Background(), func(tx Tx) error { return tx.Put("test", "after", []byte("v"), time.Time{}) }); err != nil {
		t.Fatalf("an Update after the panic: %v", err)
	}
}
