package state

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
)

// Checkpoints of SQLite's write-ahead log, off the write path.
//
// In WAL mode a commit appends the changed pages to the log, and a
// checkpoint copies them back into the database file and syncs it
// (https://sqlite.org/wal.html#checkpointing). SQLite's automatic
// checkpoint runs in the connection that committed, right after its
// commit: on the one connection every Update waits for it, sync
// included (a sixth of the code exchange's time there). So a goroutine
// with a connection of its own runs a PASSIVE checkpoint, which waits for
// no reader or writer, after every checkpointEvery commits.
//
// A log that keeps being appended to while it is copied is never fully
// copied, so never started again from its beginning, and would grow
// without end. The backstop is the writer's: after a commit that left the
// log longer than walLimitPages, it runs a checkpoint itself while it
// holds the one connection, so no write runs and the copy completes
// (finding most pages copied by the background already); the next commit
// starts the log over and truncates the file to the limit
// (journal_size_limit). SQLite's own automatic checkpoint is off: it
// answers SQLITE_BUSY without waiting when the background goroutine is
// checkpointing, and when that goroutine's copies took longer than the
// writer's commits (a slow disk's sync) the log grew past its threshold
// unchecked. Here the writer waits for a running background checkpoint
// once the log is past twice the limit.

// checkpointEvery is how many commits on the one connection start a
// background checkpoint (a few pages each: a few hundred pages).
const checkpointEvery = 128

// walLimitPages is the log's length, in pages, past which the writer
// checkpoints: SQLite's default automatic checkpoint, 1,000 pages (4 MiB
// of log). A longer log made every read of a page it holds costlier as
// it grew: with 4,096, serve's CPU per refresh rose 21–23 % over six
// 10 s rounds of refresh.sh on SQLite (last round 0.79–0.81 of the
// first); with 1,000, 1–1.4 % (0.97–0.99).
const walLimitPages = 1000

// sqlitePageSize is SQLite's default page size, which agentauth's
// databases keep.
const sqlitePageSize = 4096

// walLimitBytes is walLimitPages as the size of the log file, whose
// header and frame headers make it a little longer.
const walLimitBytes = walLimitPages * sqlitePageSize

// checkpointer runs PASSIVE checkpoints on a connection of its own.
type checkpointer struct {
	db      *sql.DB
	wal     string     // the log's path
	running sync.Mutex // held while a checkpoint runs
	kick    chan struct{}
	done    chan struct{}
	commits int // since the last kick; the one connection's lock is held
}

// startCheckpointer opens a connection to the database of dsn, whose
// log is the file wal, and starts the goroutine that checkpoints it.
func startCheckpointer(dsn, wal string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open the state database: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, wal: wal, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	for range c.kick {
		c.running.Lock()
		c.checkpoint()
		c.running.Unlock()
	}
}

// checkpoint runs one PASSIVE checkpoint; c.running is held. One that
// fails or stops short (another process's checkpoint, a busy log) is
// harmless: the next one copies what this one did not.
func (c *checkpointer) checkpoint() {
	c.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
}

// committed counts a commit on the one connection (sqlStore.afterCommit,
// under its lock): it checkpoints at once if the log is past its limit
// (and a background checkpoint is not running, or the log is past twice
// the limit), and starts a background checkpoint every checkpointEvery
// commits, unless one is running already.
func (c *checkpointer) committed() {
	if st, err := os.Stat(c.wal); err == nil && st.Size() > walLimitBytes {
		if st.Size() > 2*walLimitBytes {
			c.running.Lock()
		} else if !c.running.TryLock() {
			return
		}
		c.checkpoint()
		c.running.Unlock()
		c.commits = 0
		return
	}
	if c.commits++; c.commits < checkpointEvery {
		return
	}
	c.commits = 0
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// stop ends the goroutine and closes its connection; the one connection,
// closed last, checkpoints what is left.
func (c *checkpointer) stop() {
	close(c.kick)
	<-c.done
	c.db.Close()
}
