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
//
// Not meant for import by other modules: state is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
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
	// revocations (ids, committed to the revocation log with Tx.Revoke)
	// are there to read; a store no other process shares does nothing.
	PublishRevoked(ctx context.Context, jtis []string) error
	// OnRevoked registers fn to be called with the ids of the revocation
	// log's new entries as a process sharing the store reads them (this
	// process's own included); a store no other process shares never
	// calls it.
	OnRevoked(fn func(jtis []string))
	// PublishConfigChanged tells the other processes sharing the store
	// that serve's configuration was reloaded, so that each re-reads its
	// own; a store no other process shares does nothing.
	PublishConfigChanged(ctx context.Context) error
	// OnConfigChanged registers fn to be called when another process
	// publishes a configuration change.
	OnConfigChanged(fn func())
	// RevokedSince returns, in sequence order, at most limit entries
	// (at most maxRevocationPage) of the revocation log whose sequence is
	// above after, expired ones included until Sweep deletes them. Every
	// revocation committed before the call began is among the entries
	// above after that it and the calls after it return.
	RevokedSince(ctx context.Context, after int64, limit int) ([]Revocation, error)
	// LastRevocation is the highest sequence of the revocation log (0:
	// none yet).
	LastRevocation(ctx context.Context) (int64, error)
	// Close releases the store.
	Close() error
}

// Tx reads and writes records inside one transaction.
type Tx interface {
	// Get returns the value of a record, or ErrNotFound.
	Get(kind Kind, key string) ([]byte, error)
	// Peek is Get without holding the record: the value last committed
	// when it reads (or written by this transaction), which another
	// transaction may change before this one commits. Get in an Update
	// locks the record's row (PostgreSQL) until the transaction ends, so
	// every transaction that reads one hot record waits for the others;
	// Peek lets a caller that only needs a bound read it, and Get it only
	// to change it.
	Peek(kind Kind, key string) ([]byte, error)
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
	// Count returns how many records of kind are stored, counting no
	// further than limit: a caller comparing with a bound reads no more
	// records than the bound. (On PostgreSQL this also reads the kind's
	// key index in order, which marks the entries of deleted rows dead
	// as it meets them: an unbounded count read them all again on every
	// call until a vacuum, and grew slower with every record deleted.)
	Count(kind Kind, limit int) (int, error)
	// DeleteExpired deletes at most limit records of kind whose expiry
	// is before before, and says how many.
	DeleteExpired(kind Kind, before time.Time, limit int) (int, error)
	// DeleteFirstExpiring deletes the record of kind that expires first.
	DeleteFirstExpiring(kind Kind) error
	// List returns every record of kind.
	List(kind Kind) ([]Record, error)
	// Revoke adds id to the revocation log, to be refused until
	// expires, with the next sequence; an id there already gets a new
	// sequence and expiry.
	Revoke(id string, expires time.Time) error
	// Revoked reports whether id is in the revocation log and has not
	// expired at now.
	Revoked(id string, now time.Time) (bool, error)
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

// Revocation is one entry of a Store's revocation log: an identifier (an
// access token's jti, a token family's id) to refuse until Expires.
// Seq orders the log: an entry committed after another has a higher Seq,
// so a reader that has applied every entry up to Seq n and then reads the
// entries above n misses none (on PostgreSQL the sequence is drawn under
// a row lock held until commit, so sequences are visible in commit
// order). At is when it was written, by the writer's clock.
type Revocation struct {
	Seq     int64
	ID      string
	Expires time.Time
	At      time.Time
}

// maxRevocationPage bounds the entries one RevokedSince call returns
// when its caller asks for more.
const maxRevocationPage = 1000
