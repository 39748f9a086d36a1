package state

import (
	"context"
	"fmt"
	"sync"
)

// Group commit on the one connection (SQLite).
//
// Read-write transactions on SQLite run one at a time on one connection
// (sqlStore.one), and a commit is most of a short transaction's cost:
// SQLite writes every page the transaction changed to the WAL and ends
// the pager's transaction. Updates that arrive while another is running
// therefore wait in a queue, and the next one to get the connection runs
// every waiting Update's function in one SQLite transaction, each inside
// its own SAVEPOINT, and commits them together, as PostgreSQL's and
// MySQL's group commit share a log flush. Each function still sees
// exactly the state the Updates before it left, as when they ran one
// after another: a function that fails is rolled back to its savepoint
// and only its Update reports the error; the others commit. If the
// database fails the shared transaction itself (a savepoint or the
// commit fails, or SQLite rolled it back on an I/O error), nothing of it
// is kept and each function that had succeeded is run again alone, which
// Update's contract allows (fn has no effect outside its transaction).
// An Update returns only after its transaction committed.
//
// The queue holds only Updates whose callers are blocked in them, so it
// is bounded by the callers; one shared transaction runs at most
// maxGroupCommit functions, bounding how long a caller waits for others.

// maxGroupCommit bounds the Updates committed in one SQLite transaction.
const maxGroupCommit = 32

// queuedUpdate is an Update waiting for the connection.
type queuedUpdate struct {
	ctx context.Context
	fn  func(Tx) error
	err error
	// done is set when err is the result; wake is signalled when it is,
	// or when this Update is first in the queue and leads the next group.
	done bool
	wake chan struct{}
	// skipped: its caller had given up before its turn.
	skipped bool
	// panicked is what fn panicked with: the transaction goes on as if fn
	// had failed, and the panic is raised again in the caller's goroutine.
	panicked any
}

// call runs u's function in t, a panic becoming an error of the
// transaction's (see panicked).
func (u *queuedUpdate) call(t Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			u.panicked = p
			err = fmt.Errorf("the state transaction's function panicked: %v", p)
		}
	}()
	return u.fn(t)
}

// result is u's outcome in its caller's goroutine.
func (u *queuedUpdate) result() error {
	if u.panicked != nil {
		panic(u.panicked)
	}
	return u.err
}

// updateQueue is the Updates waiting for the one connection, oldest
// first. The first one leads: it takes the group of the oldest waiting
// Updates, commits it, and wakes its members and the next leader (the
// writer queue of LevelDB's DBImpl::Write, on channels).
type updateQueue struct {
	mu      sync.Mutex
	waiting []*queuedUpdate
}

// updateOne runs fn as one Update on the one connection, committed with
// whichever other Updates wait at the same time.
func (s *sqlStore) updateOne(ctx context.Context, fn func(Tx) error) error {
	u := &queuedUpdate{ctx: ctx, fn: fn, wake: make(chan struct{}, 1)}
	q := &s.queue
	q.mu.Lock()
	q.waiting = append(q.waiting, u)
	lead := len(q.waiting) == 1
	q.mu.Unlock()
	if !lead {
		if <-u.wake; u.done {
			return u.result()
		}
	}
	q.mu.Lock()
	n := min(len(q.waiting), maxGroupCommit)
	group := q.waiting[:n:n]
	q.mu.Unlock()
	s.oneMu.Lock()
	s.commitGroup(group)
	s.oneMu.Unlock()
	q.mu.Lock()
	q.waiting = q.waiting[n:]
	var next *queuedUpdate
	if len(q.waiting) == 0 {
		q.waiting = nil
	} else {
		next = q.waiting[0]
	}
	q.mu.Unlock()
	for _, m := range group[1:] {
		m.wake <- struct{}{}
	}
	if next != nil {
		next.wake <- struct{}{}
	}
	return u.result()
}

// commitGroup runs group's functions in one transaction and commits it;
// it sets every member's result. oneMu is held.
func (s *sqlStore) commitGroup(group []*queuedUpdate) {
	if len(group) == 1 {
		u := group[0]
		u.err, u.done = s.runOneLocked(u.ctx, false, u.call), true
		return
	}
	var ok []*queuedUpdate // the members whose function succeeded
	// The statements run without their callers' cancellation: SQLite
	// answers a cancelled statement by interrupting the connection, which
	// would roll back every member's work. A caller that gave up before
	// its turn is skipped.
	bg := context.Background()
	if _, err := s.begin.ExecContext(bg); err != nil {
		for _, u := range group {
			u.err, u.done = fmt.Errorf("cannot begin a state transaction: %w", err), true
		}
		return
	}
	failed := false
	for _, u := range group {
		if err := u.ctx.Err(); err != nil {
			u.err, u.done = err, true
			u.skipped = true
			continue
		}
		if _, err := s.savepoint.ExecContext(bg); err != nil {
			failed = true
			break
		}
		if err := s.apply(context.WithoutCancel(u.ctx), nil, false, u.call); err != nil {
			u.err, u.done = err, true
			if _, err := s.rollbackTo.ExecContext(bg); err != nil {
				failed = true
				break
			}
		}
		if _, err := s.release.ExecContext(bg); err != nil {
			failed = true
			break
		}
		if u.err == nil {
			ok = append(ok, u)
		}
	}
	if !failed {
		if _, err := s.commit.ExecContext(bg); err == nil {
			for _, u := range ok {
				u.done = true
			}
			if s.afterCommit != nil {
				s.afterCommit()
			}
			return
		}
	}
	// The shared transaction failed: none of it is kept, and a member's
	// own failure may have been the database's. Every member but those
	// whose callers gave up runs again, alone.
	s.rollback.ExecContext(bg)
	for _, u := range group {
		if !u.skipped {
			u.panicked = nil
			u.err, u.done = s.runOneLocked(u.ctx, false, u.call), true
		}
	}
}
