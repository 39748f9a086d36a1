package state

import (
	"context"
	"database/sql"
	"fmt"
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
// no reader or writer, after every checkpointEvery commits; the one
// connection's automatic checkpoint stays as a backstop at
// walBackstopPages, since a log that keeps being appended to while it is
// copied is never fully copied and so never restarted: then the
// backstop's checkpoint finds most pages copied already, completes, and
// the log starts again from its beginning.

// checkpointEvery is how many commits on the one connection start a
// background checkpoint (a few pages each: a few hundred pages).
const checkpointEvery = 128

// walBackstopPages is the one connection's wal_autocheckpoint: SQLite's
// default, 1,000 pages (4 MiB of log). A longer log made every read of a
// page it holds costlier as it grew: with 4,096, serve's CPU per refresh
// rose 21–23 % over six 10 s rounds of refresh.sh on SQLite (last round
// 0.79–0.81 of the first); with 1,000, 1–1.4 % (0.97–0.99).
const walBackstopPages = 1000

// checkpointer runs PASSIVE checkpoints on a connection of its own.
type checkpointer struct {
	db      *sql.DB
	kick    chan struct{}
	done    chan struct{}
	commits int // since the last kick; the one connection's lock is held
}

// startCheckpointer opens a connection to the database of dsn and starts
// the goroutine that checkpoints its log.
func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open the state database: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	for range c.kick {
		// A checkpoint that fails or stops short (another process's
		// checkpoint, a busy log) is harmless: the next one, or the
		// backstop, copies what this one did not.
		c.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

// committed counts a commit on the one connection (sqlStore.afterCommit,
// under its lock) and starts a checkpoint every checkpointEvery commits,
// unless one is running already.
func (c *checkpointer) committed() {
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
