// Package state is the server side's durable state: the records of the
// embedded issuer (clients, codes, device codes, grants, refresh tokens,
// access token ids, revocations, signing keys) kept in memory, in an
// embedded SQLite file, or in a PostgreSQL database shared by several
// `serve` replicas.
//
// A Store is a transactional table of opaque records, each named by a Kind
// and a key, with an optional expiry after which Sweep deletes it. What a
// record means, and which of its fields are secrets to hash or encrypt,
// is the caller's business: the issuer keys codes and refresh tokens by
// their SHA-256 and seals signing keys before they reach a Store.
//
// state owns the database schema and its migrations (versioned in the
// binary: a newer binary migrates an older database, an older binary
// refuses a newer schema). It imports no other agentauth package.
package state

import (
	"context"
	"errors"
	"time"
)

// Kind names a family of records, like a table.
type Kind string

// ErrNotFound is returned by Tx.Get for a missing record.
var ErrNotFound = errors.New("no such record")

// Record is one stored record. A zero Expires never expires.
type Record struct {
	Key     string
	Value   []byte
	Expires time.Time
}

// Store keeps records. Its methods are safe for concurrent use.
type Store interface {
	// Update runs fn in one read-write transaction: all of its writes
	// are committed when it returns nil, none otherwise. Records fn reads
	// stay as read until it returns (PostgreSQL locks their rows).
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Sweep deletes at most limit records that expired before now and
	// says how many it deleted.
	Sweep(ctx context.Context, now time.Time, limit int) (int, error)
	// PublishRevoked tells the other processes sharing the store that
	// the access tokens jtis were revoked; a store no other process
	// shares does nothing.
	PublishRevoked(ctx context.Context, jtis []string) error
	// OnRevoked registers fn to be called with the jtis that other
	// processes publish.
	OnRevoked(fn func(jtis []string))
	// PublishConfigChanged tells the other processes sharing the store
	// that serve's configuration was reloaded, so that each re-reads its
	// own; a store no other process shares does nothing.
	PublishConfigChanged(ctx context.Context) error
	// OnConfigChanged registers fn to be called when another process
	// publishes a configuration change.
	OnConfigChanged(fn func())
	// Close releases the store.
	Close() error
}

// Tx reads and writes records inside one transaction.
type Tx interface {
	// Get returns the value of a record, or ErrNotFound.
	Get(kind Kind, key string) ([]byte, error)
	// Put creates or replaces a record.
	Put(kind Kind, key string, value []byte, expires time.Time) error
	// Create creates a record unless one with its key exists (expired or
	// not) and reports whether it did. Of transactions creating one key
	// at once exactly one succeeds (PostgreSQL makes the others wait for
	// it to commit), which a Get then Put cannot promise: what a replay
	// cache needs.
	Create(kind Kind, key string, value []byte, expires time.Time) (bool, error)
	// Delete removes a record; a missing one is not an error.
	Delete(kind Kind, key string) error
	// Count returns how many records of kind are stored.
	Count(kind Kind) (int, error)
	// DeleteExpired deletes at most limit records of kind whose expiry
	// is before before, and says how many.
	DeleteExpired(kind Kind, before time.Time, limit int) (int, error)
	// DeleteFirstExpiring deletes the record of kind that expires first.
	DeleteFirstExpiring(kind Kind) error
	// List returns every record of kind.
	List(kind Kind) ([]Record, error)
}

// millis is how expiries are stored: Unix milliseconds, 0 for never.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
