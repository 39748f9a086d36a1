// Package bounded keeps what a peer can make a server remember — the ids
// of DPoP proofs and JWT assertions already used (RFC 9449 §11.1,
// RFC 7523 §3 item 7), pending authorization codes, registrations per
// source — under two bounds: records per owner (a key, a client, a source
// address) and owners in all. A record is kept until its own expiry; when
// a bound is reached a new record is refused with a FullError saying when
// to retry, and a live record is never evicted to make room, since an
// evicted replay entry is a replay accepted.
//
// Memory keeps replay ids in one process; PutTx and RememberTx keep
// records in a state.Store, shared by the replicas that share it. bounded
// imports state only.
package bounded

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Limits are the bounds of one family of records.
type Limits struct {
	// PerOwner bounds the live records of one owner.
	PerOwner int
	// Owners bounds the owners that have live records.
	Owners int
	// Total, when set, bounds the live records of all owners in Memory
	// (in a store they are at most PerOwner times Owners).
	Total int
	// Retry is the Retry-After given when every owner slot is taken (a
	// per-owner refusal gives the time until that owner's first record
	// expires).
	Retry time.Duration
}

// ErrReplayed is returned for an id that was remembered already and has
// not expired.
var ErrReplayed = errors.New("already used")

// FullError refuses a new record at a bound.
type FullError struct {
	// Owner is true when the owner's own bound was reached, false when
	// every owner slot is taken.
	Owner bool
	// Limit is the bound reached.
	Limit int
	// RetryAfter is when a slot frees up, at the latest.
	RetryAfter time.Duration
}

func (e *FullError) Error() string {
	if e.Owner {
		return fmt.Sprintf("more than %d in use by one client; retry in %ss", e.Limit, e.RetrySeconds())
	}
	return fmt.Sprintf("more than %d in use at once; retry in %ss", e.Limit, e.RetrySeconds())
}

// RetrySeconds is RetryAfter in whole seconds, at least 1, for a
// Retry-After header (RFC 9110 §10.2.3).
func (e *FullError) RetrySeconds() string {
	s := int64((e.RetryAfter + time.Second - 1) / time.Second)
	return fmt.Sprint(max(s, 1))
}

// ownerHash names an owner in storage: fixed length, and nothing of the
// owner (a client id, an address) in the clear.
func ownerHash(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:16])
}
