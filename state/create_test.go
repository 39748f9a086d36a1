package state

import (
	"context"
	"testing"
	"time"
)

// Create writes a record only when its key is free, expired records
// included, and says whether it did; a rolled-back Create leaves the key
// free.
func TestCreate(t *testing.T) {
	ctx := context.Background()
	exp := time.UnixMilli(1_700_000_000_000)
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			create := func(key string, v string) (created bool) {
				t.Helper()
				if err := s.Update(ctx, func(tx Tx) (err error) {
					created, err = tx.Create("replay", key, []byte(v), exp)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				return created
			}
			if !create("a", "first") || create("a", "second") {
				t.Fatal("Create of a new key, then of the same key: want true, false")
			}
			s.View(ctx, func(tx Tx) error {
				if v, err := tx.Get("replay", "a"); err != nil || string(v) != "first" {
					t.Errorf("Get after a refused Create: %q %v, want the first value", v, err)
				}
				return nil
			})
			// A Put earlier in the same transaction counts.
			s.Update(ctx, func(tx Tx) error {
				tx.Put("replay", "b", []byte("put"), exp)
				if created, err := tx.Create("replay", "b", []byte("x"), exp); created || err != nil {
					t.Errorf("Create after a Put in one transaction: %v %v, want false", created, err)
				}
				return nil
			})
			s.Update(ctx, func(tx Tx) error {
				tx.Create("replay", "c", []byte("x"), exp)
				return context.Canceled // roll back
			})
			if !create("c", "after rollback") {
				t.Error("a rolled-back Create kept its key")
			}
		})
	}
}
