package state

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRevocationLog: on every backend, revocations get increasing
// sequences in commit order, RevokedSince pages through them, a
// rolled-back transaction leaves none, a revoked id is Revoked until it
// expires, a revoked id revoked again moves to the end of the log, and
// Sweep deletes expired entries.
func TestRevocationLog(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			revoke := func(ids ...string) {
				t.Helper()
				err := s.Update(ctx, func(tx Tx) error {
					for _, id := range ids {
						if err := tx.Revoke(id, t0.Add(time.Hour)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			ids := make([]string, 2500) // more than one page
			for k := range ids {
				ids[k] = fmt.Sprintf("id-%04d", k)
			}
			for k := 0; k < len(ids); k += 500 {
				revoke(ids[k : k+500]...)
			}
			boom := errors.New("boom")
			err := s.Update(ctx, func(tx Tx) error {
				if err := tx.Revoke("rolled-back", t0.Add(time.Hour)); err != nil {
					return err
				}
				if ok, err := tx.Revoked("rolled-back", t0); !ok || err != nil {
					t.Errorf("a transaction does not read its own revocation: %v, %v", ok, err)
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatal(err)
			}
			var got []Revocation
			for seq := int64(0); ; {
				page, err := s.RevokedSince(ctx, seq, 5000)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > maxRevocationPage {
					t.Fatalf("a page of %d entries, want at most %d", len(page), maxRevocationPage)
				}
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				seq = page[len(page)-1].Seq
			}
			if len(got) != len(ids) {
				t.Fatalf("the log holds %d entries, want %d", len(got), len(ids))
			}
			seen := map[string]bool{}
			for k, r := range got {
				if k > 0 && r.Seq <= got[k-1].Seq {
					t.Fatalf("sequence %d after %d", r.Seq, got[k-1].Seq)
				}
				seen[r.ID] = true
			}
			if len(seen) != len(ids) || seen["rolled-back"] {
				t.Fatalf("the log holds %d distinct ids (rolled-back: %v), want %d", len(seen), seen["rolled-back"], len(ids))
			}
			last, err := s.LastRevocation(ctx)
			if err != nil || last != got[len(got)-1].Seq {
				t.Errorf("LastRevocation = %d, %v; want %d", last, err, got[len(got)-1].Seq)
			}
			err = s.View(ctx, func(tx Tx) error {
				for id, want := range map[string]bool{"id-0000": true, "id-2499": true, "rolled-back": false, "other": false} {
					if ok, err := tx.Revoked(id, t0); ok != want || err != nil {
						t.Errorf("Revoked(%s) = %v, %v; want %v", id, ok, err, want)
					}
				}
				if ok, _ := tx.Revoked("id-0000", t0.Add(2*time.Hour)); ok {
					t.Error("an expired revocation is still Revoked")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			revoke("id-0000")
			page, err := s.RevokedSince(ctx, last, 10)
			if err != nil || len(page) != 1 || page[0].ID != "id-0000" {
				t.Errorf("after revoking id-0000 again, the log's end is %v, %v", page, err)
			}
			n, err := s.Sweep(ctx, t0.Add(2*time.Hour), 10_000)
			if err != nil || n != len(ids) {
				t.Errorf("Sweep = %d, %v; want the %d expired entries", n, err, len(ids))
			}
			if page, err := s.RevokedSince(ctx, 0, 10); len(page) != 0 || err != nil {
				t.Errorf("after the sweep the log holds %v, %v", page, err)
			}
		})
	}
}
