package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A transaction of the SQL stores: its reads, and its writes buffered
// until they are flushed in as few statements as it can.

// sqlTx keeps its writes until it commits, or until a statement that
// reads many records needs them, and then sends them in as few statements
// as it can: one token request is one upsert of its records and one
// deletion.
type sqlTx struct {
	s        *sqlStore
	tx       *sql.Tx
	ctx      context.Context
	readOnly bool
	// writes are the records written (value set) or deleted (deleted)
	// and not yet sent, pending their index in writes by record.
	writes  []write
	pending map[recordID]int
	// revs are the revocations not yet sent, by id.
	revs map[string]time.Time
}

type recordID struct {
	kind Kind
	key  string
}

type write struct {
	recordID
	value   []byte
	expires time.Time
	deleted bool
}

// buffer records a write or deletion, replacing an earlier one of the
// same record.
func (t *sqlTx) buffer(w write) {
	if n, ok := t.pending[w.recordID]; ok {
		t.writes[n] = w
		return
	}
	t.pending[w.recordID] = len(t.writes)
	t.writes = append(t.writes, w)
}

// flush sends the buffered writes: the deletions, then the upserts, in
// statements of at most maxBatchRows records.
func (t *sqlTx) flush() error {
	if err := t.flushRevocations(); err != nil {
		return err
	}
	if len(t.writes) == 0 {
		return nil
	}
	var dels, puts []any
	for _, w := range t.writes {
		if w.deleted {
			dels = append(dels, string(w.kind), w.key)
		} else {
			puts = append(puts, string(w.kind), w.key, w.value, millis(w.expires))
		}
	}
	t.writes, t.pending = t.writes[:0], map[recordID]int{}
	if nd, np := len(dels)/2, len(puts)/4; t.s.d.writableCTE && nd > 0 && np > 0 && nd <= maxBatchRows && np <= maxBatchRows {
		if _, err := t.stmt(t.s.both[[2]int{nd, np}]).ExecContext(t.ctx, append(dels, puts...)...); err != nil {
			return fmt.Errorf("cannot write the state: %w", err)
		}
		return nil
	}
	for _, b := range []struct {
		args []any
		cols int
		del  bool
	}{{dels, 2, true}, {puts, 4, false}} {
		for len(b.args) > 0 {
			n := min(len(b.args)/b.cols, maxBatchRows)
			st := t.s.batches[batchShape{n: n, del: b.del}]
			if _, err := t.stmt(st).ExecContext(t.ctx, b.args[:n*b.cols]...); err != nil {
				return fmt.Errorf("cannot write the state: %w", err)
			}
			b.args = b.args[n*b.cols:]
		}
	}
	return nil
}

// stmt binds a prepared statement to the transaction; on the one
// connection it is bound already.
func (t *sqlTx) stmt(s *sql.Stmt) *sql.Stmt {
	if t.tx == nil {
		return s
	}
	return t.tx.StmtContext(t.ctx, s)
}

func (t *sqlTx) Get(kind Kind, key string) ([]byte, error) {
	q := t.s.getLocked
	if t.readOnly {
		q = t.s.get
	}
	return t.read(q, kind, key)
}

// Peek reads without a row lock (see Tx.Peek).
func (t *sqlTx) Peek(kind Kind, key string) ([]byte, error) { return t.read(t.s.get, kind, key) }

// read returns the record kind/key: as this transaction wrote it, else
// by q.
func (t *sqlTx) read(q *sql.Stmt, kind Kind, key string) ([]byte, error) {
	if n, ok := t.pending[recordID{kind, key}]; ok {
		if t.writes[n].deleted {
			return nil, ErrNotFound
		}
		return t.writes[n].value, nil
	}
	var v []byte
	err := t.stmt(q).QueryRowContext(t.ctx, string(kind), key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", kind, err)
	}
	return v, nil
}

func (t *sqlTx) Put(kind Kind, key string, value []byte, expires time.Time) error {
	t.buffer(write{recordID: recordID{kind, key}, value: value, expires: expires})
	return nil
}

func (t *sqlTx) Create(kind Kind, key string, value []byte, expires time.Time) (bool, error) {
	if err := t.flush(); err != nil {
		return false, err
	}
	res, err := t.stmt(t.s.create).ExecContext(t.ctx, string(kind), key, value, millis(expires))
	if err != nil {
		return false, fmt.Errorf("cannot write the state: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (t *sqlTx) Delete(kind Kind, key string) error {
	t.buffer(write{recordID: recordID{kind, key}, deleted: true})
	return nil
}

func (t *sqlTx) Count(kind Kind, limit int) (int, error) {
	if err := t.flush(); err != nil {
		return 0, err
	}
	var n int
	if err := t.stmt(t.s.count).QueryRowContext(t.ctx, string(kind), max(limit, 0)).Scan(&n); err != nil {
		return 0, fmt.Errorf("cannot count %s: %w", kind, err)
	}
	return n, nil
}

func (t *sqlTx) DeleteExpired(kind Kind, before time.Time, limit int) (int, error) {
	if err := t.flush(); err != nil {
		return 0, err
	}
	res, err := t.stmt(t.s.delExpired).ExecContext(t.ctx, string(kind), string(kind), millis(before), limit)
	if err != nil {
		return 0, fmt.Errorf("cannot delete expired %s: %w", kind, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (t *sqlTx) DeleteFirstExpiring(kind Kind) error {
	if err := t.flush(); err != nil {
		return err
	}
	if _, err := t.stmt(t.s.delFirst).ExecContext(t.ctx, string(kind), string(kind)); err != nil {
		return fmt.Errorf("cannot evict %s: %w", kind, err)
	}
	return nil
}

func (t *sqlTx) List(kind Kind) ([]Record, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	rows, err := t.stmt(t.s.list).QueryContext(t.ctx, string(kind))
	if err != nil {
		return nil, fmt.Errorf("cannot list %s: %w", kind, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var ms int64
		if err := rows.Scan(&r.Key, &r.Value, &ms); err != nil {
			return nil, fmt.Errorf("cannot list %s: %w", kind, err)
		}
		r.Expires = fromMillis(ms)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot list %s: %w", kind, err)
	}
	return out, nil
}
