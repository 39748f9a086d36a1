package state

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The SQL stores (SQLite, PostgreSQL) on database/sql: the dialect, the
// prepared statements, running transactions (with their retries) and the
// sweep. Their schema is in sqlschema.go, a transaction's reads and
// writes in sqltx.go, the revocation log in sqlrevocations.go.

// dialect is what differs between SQLite and PostgreSQL.
type dialect struct {
	blob string
	// withoutRowID ends CREATE TABLE for a table clustered on its key.
	withoutRowID string
	forUpdate    string // appended to a SELECT of Update's Get
	// lock, when set, is run first in the migration transaction so that
	// replicas starting together migrate one at a time.
	lock    string
	dollars bool // placeholders are $1, $2… rather than ?
	// writableCTE: a DELETE may run in a WITH clause of an INSERT
	// (PostgreSQL), so a flush is one statement, one round trip.
	writableCTE bool
	// retryable, when set, reports an error on which the database rolled
	// the transaction back and a re-run may succeed.
	retryable func(error) bool
}

// Bounds on re-running an Update the database aborted (a deadlock, a
// serialization failure).
const (
	// maxUpdateAttempts bounds the runs of one Update.
	maxUpdateAttempts = 3
	// updateRetryBackoff is the base wait before a re-run: attempt n
	// waits n times it plus a random part of up to it, so transactions
	// that collided do not collide again in step.
	updateRetryBackoff = 20 * time.Millisecond
)

// maxBatchRows bounds the records one statement writes or deletes when a
// transaction's writes are flushed; more take several statements. A
// statement per size is prepared when the store opens.
const maxBatchRows = 4

// sqlStore is a Store on database/sql.
type sqlStore struct {
	db *sql.DB
	d  dialect
	// prepared statements, for the dialect
	get, getLocked, count, delExpired, delFirst, list, sweep, create *sql.Stmt
	// the revocation log's statements
	revSeq, revPut, revGet, revSince, revLast, revSweep *sql.Stmt
	// revSeqNotify, when set (PostgreSQL), is revSeq that also
	// announces the transaction's revocations to the other processes
	// with revNotice, its second argument: PostgreSQL delivers it at
	// commit, and never when the transaction rolls back.
	revSeqNotify *sql.Stmt
	revNotice    string
	// one, for SQLite, is the one connection every transaction runs on,
	// in turn (oneMu), between its own BEGIN and COMMIT statements: a
	// database/sql transaction costs a goroutine and a context per
	// transaction, a third of SQLite's time on the token endpoint. The
	// statements above are then prepared on it.
	one                                *sql.Conn
	oneMu                              sync.Mutex
	begin, beginRead, commit, rollback *sql.Stmt
	// savepoint, rollbackTo and release bracket each Update of a group
	// committed together; queue holds the Updates waiting (groupcommit.go).
	savepoint, rollbackTo, release *sql.Stmt
	queue                          updateQueue
	// afterCommit, when set, is called after each commit of a read-write
	// transaction on the one connection, under oneMu.
	afterCommit func()

	// batches holds the prepared statements that write or delete n
	// records at once, n from 1 to maxBatchRows.
	batches map[batchShape]*sql.Stmt
	// both holds, with dialect.writableCTE, the statements that delete d
	// and write p records at once: a DELETE in a WITH clause of the
	// INSERT (PostgreSQL). A transaction never deletes and writes one
	// record in one flush (sqlTx.buffer keeps the last), so the two parts
	// do not meet. They are prepared when the store opens: preparing one
	// inside a transaction would take a second connection from the pool,
	// and transactions holding every connection would wait for each
	// other.
	both map[[2]int]*sql.Stmt
	// prepared lists every statement, for close.
	prepared []*sql.Stmt
}

// batchShape names a batch statement: n upserts, or n deletions.
type batchShape struct {
	n   int
	del bool
}

// preparer is a *sql.DB or a *sql.Conn.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// newSQLStore prepares the statements of a migrated database; one asks
// for every transaction to run on one connection (SQLite). On failure it
// closes db.
func newSQLStore(ctx context.Context, db *sql.DB, d dialect, one bool) (*sqlStore, error) {
	s := &sqlStore{db: db, d: d, batches: map[batchShape]*sql.Stmt{}, both: map[[2]int]*sql.Stmt{}}
	var p preparer = db
	type query struct {
		stmt **sql.Stmt
		sql  string
	}
	var queries []query
	if one {
		conn, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("cannot open the state database: %w", err)
		}
		s.one, p = conn, conn
		// IMMEDIATE takes the write lock at once: a transaction that
		// reads before it writes cannot fail to upgrade its lock.
		queries = []query{{&s.begin, `BEGIN IMMEDIATE`}, {&s.beginRead, `BEGIN`}, {&s.commit, `COMMIT`}, {&s.rollback, `ROLLBACK`},
			{&s.savepoint, `SAVEPOINT g`}, {&s.rollbackTo, `ROLLBACK TO g`}, {&s.release, `RELEASE g`}}
	}
	get := `SELECT value FROM ` + table + ` WHERE kind = ? AND key = ?`
	for _, q := range append(queries, []query{
		{&s.get, get},
		{&s.getLocked, get + d.forUpdate},
		{&s.count, `SELECT count(*) FROM (SELECT key FROM ` + table + ` WHERE kind = ? ORDER BY key LIMIT ?) AS live`},
		{&s.delExpired, `DELETE FROM ` + table + ` WHERE kind = ? AND key IN
			(SELECT key FROM ` + table + ` WHERE kind = ? AND expires > 0 AND expires < ? LIMIT ?)`},
		{&s.delFirst, `DELETE FROM ` + table + ` WHERE kind = ? AND key IN
			(SELECT key FROM ` + table + ` WHERE kind = ? AND expires > 0 ORDER BY expires LIMIT 1)`},
		{&s.list, `SELECT key, value, expires FROM ` + table + ` WHERE kind = ? ORDER BY key`},
		{&s.sweep, `DELETE FROM ` + table + ` WHERE (kind, key) IN
			(SELECT kind, key FROM ` + table + ` WHERE expires > 0 AND expires < ? LIMIT ?)`},
		{&s.create, `INSERT INTO ` + table + ` (kind, key, value, expires) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO NOTHING`},
		// The sequence row stays locked until the transaction ends
		// (PostgreSQL): the next revoking transaction draws its sequences
		// after this one committed, so sequences appear in commit order.
		{&s.revSeq, `UPDATE ` + revocationSeqTable + ` SET seq = seq + ? RETURNING seq`},
		{&s.revPut, `INSERT INTO ` + revocationsTable + ` (seq, id, expires, at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, expires = excluded.expires, at = excluded.at`},
		{&s.revGet, `SELECT expires FROM ` + revocationsTable + ` WHERE id = ?`},
		{&s.revSince, `SELECT seq, id, expires, at FROM ` + revocationsTable + ` WHERE seq > ? ORDER BY seq LIMIT ?`},
		{&s.revLast, `SELECT seq FROM ` + revocationSeqTable},
		{&s.revSweep, `DELETE FROM ` + revocationsTable + ` WHERE seq IN
			(SELECT seq FROM ` + revocationsTable + ` WHERE expires < ? LIMIT ?)`},
	}...) {
		var err error
		if *q.stmt, err = p.PrepareContext(ctx, rebind(q.sql, d.dollars)); err != nil {
			s.close()
			return nil, fmt.Errorf("cannot prepare the state queries: %w", err)
		}
		s.prepared = append(s.prepared, *q.stmt)
	}
	for nd := 1; d.writableCTE && nd <= maxBatchRows; nd++ {
		for np := 1; np <= maxBatchRows; np++ {
			q := `WITH deleted AS (` + batchSQL(batchShape{n: nd, del: true}) + `) ` + batchSQL(batchShape{n: np})
			st, err := p.PrepareContext(ctx, rebind(q, d.dollars))
			if err != nil {
				s.close()
				return nil, fmt.Errorf("cannot prepare the state queries: %w", err)
			}
			s.both[[2]int{nd, np}] = st
			s.prepared = append(s.prepared, st)
		}
	}
	for n := 1; n <= maxBatchRows; n++ {
		for _, del := range []bool{false, true} {
			b := batchShape{n: n, del: del}
			st, err := p.PrepareContext(ctx, rebind(batchSQL(b), d.dollars))
			if err != nil {
				s.close()
				return nil, fmt.Errorf("cannot prepare the state queries: %w", err)
			}
			s.batches[b] = st
			s.prepared = append(s.prepared, st)
		}
	}
	return s, nil
}

// batchSQL is the statement of shape b.
func batchSQL(b batchShape) string {
	if b.del {
		return `DELETE FROM ` + table + ` WHERE (kind, key) IN (` + strings.Repeat(`(?, ?), `, b.n-1) + `(?, ?))`
	}
	return `INSERT INTO ` + table + ` (kind, key, value, expires) VALUES ` + strings.Repeat(`(?, ?, ?, ?), `, b.n-1) + `(?, ?, ?, ?)
		ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, expires = excluded.expires`
}

// close releases the statements and the database. Statements prepared on
// one connection must be closed before it, or SQLite cannot close the
// file (and checkpoint its WAL into it).
func (s *sqlStore) close() error {
	for _, st := range s.prepared {
		st.Close()
	}
	if s.one != nil {
		s.one.Close()
	}
	return s.db.Close()
}

// rebind turns ? placeholders into $n for PostgreSQL.
func rebind(q string, dollars bool) string {
	if !dollars {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Update runs fn in a read-write transaction. When the database aborts
// it for a deadlock or a serialization failure (dialect.retryable), fn
// is run again in a new transaction, at most maxUpdateAttempts times in
// all: fn must therefore have no effect outside the transaction (no
// logging of what it did, no in-memory changes, no requests) and must set
// every result it reports from scratch on each run.
func (s *sqlStore) Update(ctx context.Context, fn func(Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.run(ctx, false, fn)
		if err == nil || s.d.retryable == nil || !s.d.retryable(err) {
			return err
		}
		if attempt == maxUpdateAttempts {
			return fmt.Errorf("%w (the database aborted the transaction %d times; retry the request)", err, attempt)
		}
		wait := time.Duration(attempt)*updateRetryBackoff + rand.N(updateRetryBackoff)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

func (s *sqlStore) View(ctx context.Context, fn func(Tx) error) error {
	return s.run(ctx, true, fn)
}

func (s *sqlStore) run(ctx context.Context, readOnly bool, fn func(Tx) error) error {
	if s.one != nil && !readOnly {
		return s.updateOne(ctx, fn)
	}
	if s.one != nil {
		s.oneMu.Lock()
		defer s.oneMu.Unlock()
		return s.runOneLocked(ctx, readOnly, fn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin a state transaction: %w", err)
	}
	if err := s.apply(ctx, tx, readOnly, fn); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a state transaction: %w", err)
	}
	return nil
}

// apply runs fn on a new sqlTx in tx (a database/sql transaction, or
// nil for the one connection's) and sends the writes it buffered.
func (s *sqlStore) apply(ctx context.Context, tx *sql.Tx, readOnly bool, fn func(Tx) error) error {
	t := &sqlTx{s: s, tx: tx, ctx: ctx, readOnly: readOnly, pending: map[recordID]int{}}
	if err := fn(t); err != nil {
		return err
	}
	return t.flush()
}

// runOneLocked runs fn in a transaction of its own on the one
// connection; oneMu is held.
func (s *sqlStore) runOneLocked(ctx context.Context, readOnly bool, fn func(Tx) error) error {
	begin := s.begin
	if readOnly {
		begin = s.beginRead
	}
	if _, err := begin.ExecContext(ctx); err != nil {
		return fmt.Errorf("cannot begin a state transaction: %w", err)
	}
	// The end of a transaction is not cancelled with its request: the
	// connection must be left outside any transaction, also when fn
	// panics.
	end := context.WithoutCancel(ctx)
	defer func() {
		if p := recover(); p != nil {
			s.rollback.ExecContext(end)
			panic(p)
		}
	}()
	if err := s.apply(ctx, nil, readOnly, fn); err != nil {
		s.rollback.ExecContext(end)
		return err
	}
	if _, err := s.commit.ExecContext(end); err != nil {
		s.rollback.ExecContext(end)
		return fmt.Errorf("cannot commit a state transaction: %w", err)
	}
	if !readOnly && s.afterCommit != nil {
		s.afterCommit()
	}
	return nil
}

func (s *sqlStore) Sweep(ctx context.Context, now time.Time, limit int) (int, error) {
	if s.one != nil {
		s.oneMu.Lock()
		defer s.oneMu.Unlock()
	}
	res, err := s.revSweep.ExecContext(ctx, millis(now), limit)
	if err != nil {
		return 0, fmt.Errorf("cannot sweep the state database: %w", err)
	}
	revs, err := res.RowsAffected()
	if err != nil || int(revs) >= limit {
		return int(revs), err
	}
	if res, err = s.sweep.ExecContext(ctx, millis(now), limit-int(revs)); err != nil {
		return 0, fmt.Errorf("cannot sweep the state database: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n + revs), err
}
