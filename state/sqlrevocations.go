package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The revocation log of the SQL stores: reading it, and the revocations
// of a transaction.

// RevokedSince reads the revocation log above after.
func (s *sqlStore) RevokedSince(ctx context.Context, after int64, limit int) ([]Revocation, error) {
	if s.one != nil {
		s.oneMu.Lock()
		defer s.oneMu.Unlock()
	}
	rows, err := s.revSince.QueryContext(ctx, after, min(limit, maxRevocationPage))
	if err != nil {
		return nil, fmt.Errorf("cannot read the revocation log: %w", err)
	}
	defer rows.Close()
	var out []Revocation
	for rows.Next() {
		var r Revocation
		var exp, at int64
		if err := rows.Scan(&r.Seq, &r.ID, &exp, &at); err != nil {
			return nil, fmt.Errorf("cannot read the revocation log: %w", err)
		}
		r.Expires, r.At = fromMillis(exp), fromMillis(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the revocation log: %w", err)
	}
	return out, nil
}

// LastRevocation reads the last sequence drawn.
func (s *sqlStore) LastRevocation(ctx context.Context) (int64, error) {
	if s.one != nil {
		s.oneMu.Lock()
		defer s.oneMu.Unlock()
	}
	var seq int64
	if err := s.revLast.QueryRowContext(ctx).Scan(&seq); err != nil {
		return 0, fmt.Errorf("cannot read the revocation log: %w", err)
	}
	return seq, nil
}

// flushRevocations draws a sequence for each buffered revocation, writes
// them to the log and, on PostgreSQL, announces them at commit: NOTIFY
// in the statement that draws the sequences, where a notification sent
// after the commit cost a round trip and a transaction of its own, and
// was lost when the connection failed between the two.
func (t *sqlTx) flushRevocations() error {
	if len(t.revs) == 0 {
		return nil
	}
	var top int64
	draw, args := t.s.revSeq, []any{len(t.revs)}
	if t.s.revSeqNotify != nil {
		draw, args = t.s.revSeqNotify, append(args, t.s.revNotice)
	}
	if err := t.stmt(draw).QueryRowContext(t.ctx, args...).Scan(&top); err != nil {
		return fmt.Errorf("cannot write the revocation log: %w", err)
	}
	seq, at := top-int64(len(t.revs)), millis(time.Now())
	for _, id := range slices.Sorted(maps.Keys(t.revs)) {
		seq++
		if _, err := t.stmt(t.s.revPut).ExecContext(t.ctx, seq, id, millis(t.revs[id]), at); err != nil {
			return fmt.Errorf("cannot write the revocation log: %w", err)
		}
	}
	clear(t.revs)
	return nil
}

func (t *sqlTx) Revoke(id string, expires time.Time) error {
	if t.revs == nil {
		t.revs = map[string]time.Time{}
	}
	t.revs[id] = expires
	return nil
}

func (t *sqlTx) Revoked(id string, now time.Time) (bool, error) {
	if exp, ok := t.revs[id]; ok {
		return !exp.Before(now), nil
	}
	var exp int64
	err := t.stmt(t.s.revGet).QueryRowContext(t.ctx, id).Scan(&exp)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot read the revocation log: %w", err)
	}
	return exp >= millis(now), nil
}
