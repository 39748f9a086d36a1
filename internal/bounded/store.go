package bounded

import (
	"errors"
	"strconv"
	"time"

	"github.com/agentauth/agentauth/state"
)

// Kind is the state kind holding the records of owner in the family
// kind: one kind per owner, so that counting an owner's records reads
// its own rows only (the store's key is (kind, key)).
func Kind(kind state.Kind, owner string) state.Kind {
	return kind + "/" + state.Kind(ownerHash(owner))
}

// ownersKind lists the owners of family kind with live records, each
// until its last record expires (the value, in Unix milliseconds).
func ownersKind(kind state.Kind) state.Kind { return kind + "#owners" }

// PutTx stores key of owner in the family kind, with value, until
// expires, under l: it returns a *FullError, writing nothing, when the
// owner already holds l.PerOwner live records or l.Owners other owners
// hold some. Replacing a record of the owner is always allowed. Expired
// records are deleted to make room; a live one never is.
//
// Whether key is a replacement is asked only of a full owner: a new key
// (a random code) costs no read of it.
func PutTx(tx state.Tx, kind state.Kind, l Limits, owner, key string, value []byte, expires, now time.Time) error {
	k := Kind(kind, owner)
	if err := roomTx(tx, k, l.PerOwner, now); err != nil {
		full, ok := errors.AsType[*FullError](err)
		if !ok {
			return err
		}
		switch _, err := tx.Get(k, key); {
		case err == nil:
			return tx.Put(k, key, value, expires)
		case !errors.Is(err, state.ErrNotFound):
			return err
		}
		full.Owner, full.RetryAfter = true, firstExpiryTx(tx, k, now, l.Retry)
		return full
	}
	if err := ownerTx(tx, kind, l, owner, expires, now); err != nil {
		return err
	}
	return tx.Put(k, key, value, expires)
}

// ownerTx records that owner has a record of family kind until expires,
// or returns a *FullError when l.Owners other owners have live records.
// The owner's row keeps its last expiry rounded up to ownerExpiryStep and
// is read without a lock first: a record expiring within that step
// leaves it alone, so that an owner's concurrent records (one client's
// codes from many users) do not queue behind each other on its row
// (PostgreSQL holds a row read with Get until the transaction ends). Only
// to move the expiry on is the row read with Get and rewritten, to the
// later of the two, so it never moves back.
func ownerTx(tx state.Tx, kind state.Kind, l Limits, owner string, expires, now time.Time) error {
	ok, oh := ownersKind(kind), ownerHash(owner)
	switch b, err := tx.Peek(ok, oh); {
	case err == nil:
		if last, valid := parseMillis(b); valid && !last.Before(expires) {
			return nil
		}
	case !errors.Is(err, state.ErrNotFound):
		return err
	}
	last := expires
	if r := last.Truncate(ownerExpiryStep); !r.Equal(last) {
		last = r.Add(ownerExpiryStep)
	}
	switch b, err := tx.Get(ok, oh); {
	case err == nil:
		if stored, valid := parseMillis(b); valid && stored.After(last) {
			last = stored
		}
	case errors.Is(err, state.ErrNotFound):
		if err := roomTx(tx, ok, l.Owners, now); err != nil {
			if full, isFull := errors.AsType[*FullError](err); isFull {
				full.RetryAfter = l.Retry
			}
			return err
		}
	default:
		return err
	}
	return tx.Put(ok, oh, []byte(strconv.FormatInt(last.UnixMilli(), 10)), last)
}

// ownerExpiryStep is the granularity of an owner's last expiry: an owner
// keeps its slot up to this much longer than its last record.
const ownerExpiryStep = 10 * time.Second

// parseMillis reads an owner's last expiry.
func parseMillis(b []byte) (time.Time, bool) {
	ms, err := strconv.ParseInt(string(b), 10, 64)
	return time.UnixMilli(ms), err == nil
}

// RememberTx records the id of owner in the family kind until expires,
// under l: ErrReplayed when it is recorded already, a *FullError at a
// bound. A record past its expiry but not yet swept counts as used: the
// caller has refused anything that old already. Of transactions
// remembering one id at once (replicas on one PostgreSQL database), one
// succeeds and the others get ErrReplayed.
func RememberTx(tx state.Tx, kind state.Kind, l Limits, owner, id string, expires, now time.Time) error {
	k := Kind(kind, owner)
	switch _, err := tx.Get(k, id); {
	case err == nil:
		return ErrReplayed
	case !errors.Is(err, state.ErrNotFound):
		return err
	}
	if err := roomTx(tx, k, l.PerOwner, now); err != nil {
		if full, ok := errors.AsType[*FullError](err); ok {
			full.Owner, full.RetryAfter = true, firstExpiryTx(tx, k, now, l.Retry)
		}
		return err
	}
	if err := ownerTx(tx, kind, l, owner, expires, now); err != nil {
		return err
	}
	created, err := tx.Create(k, id, []byte("{}"), expires)
	if err == nil && !created {
		return ErrReplayed
	}
	return err
}

// roomTx returns a *FullError when kind holds max records that have not
// expired at now, deleting the expired ones first.
func roomTx(tx state.Tx, kind state.Kind, max int, now time.Time) error {
	n, err := tx.Count(kind, max)
	if err != nil || n < max {
		return err
	}
	// A record expiring at now has expired (the stores delete those
	// expiring before the given time).
	if _, err := tx.DeleteExpired(kind, now.Add(time.Millisecond), n); err != nil {
		return err
	}
	if n, err = tx.Count(kind, max); err != nil || n < max {
		return err
	}
	return &FullError{Limit: max}
}

// firstExpiryTx is how long until the first record of kind expires (at
// most fallback): when a full owner has room again.
func firstExpiryTx(tx state.Tx, kind state.Kind, now time.Time, fallback time.Duration) time.Duration {
	recs, err := tx.List(kind)
	if err != nil {
		return fallback
	}
	d := fallback
	for _, r := range recs {
		if left := r.Expires.Sub(now); !r.Expires.IsZero() && left < d {
			d = left
		}
	}
	return d
}
