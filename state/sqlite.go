package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// SQLiteFile is the database's name inside a data directory.
const SQLiteFile = "state.db"

// sqliteBusyTimeoutMillis is how long a write waits for another process's
// lock before failing.
const sqliteBusyTimeoutMillis = 5000

// sqliteCacheKiB bounds SQLite's page cache (PRAGMA cache_size), in KiB.
// SQLite scans the whole cache's hash table at the end of many commits
// (pcache1TruncateUnsafe, whose table grows with the pages cached), so a
// big cache makes every commit slower as it fills: with 64 MiB it took a
// sixth of serve's CPU late in a sustained refresh run, and
// BenchmarkSQLiteGrowth's transaction (a random read, a write) cost 2.2×
// as much with 400,000 records as with none; with 8 MiB, 1.5× (records
// the cache misses are read from the kernel's page cache: a read(2) of a
// page). SQLite's default, 2 MiB, misses so often that refreshes slowed as
// the file grew.
const sqliteCacheKiB = 8 << 10

// SQLite is a Store in one SQLite file. Several processes on one machine
// may share the file (SQLite locks it), but they do not tell each other of
// revocations: replicas use PostgreSQL.
type SQLite struct {
	*sqlStore
	path string
	ckpt *checkpointer
}

// OpenSQLite opens (creating them) the directory dir, mode 0700, and its
// database file SQLiteFile, mode 0600, and migrates it. Neither is opened
// through a symbolic link; a directory of another user is refused and one
// open to others restricted (secureDir); a database that is not
// agentauth's is refused (claimSQLite). The database runs
// in WAL mode with synchronous=NORMAL: a committed transaction survives
// the process being killed; a power loss may lose the last ones but never
// corrupts the file.
func OpenSQLite(ctx context.Context, dir string) (*SQLite, error) {
	return openSQLite(ctx, dir, migrations)
}

func openSQLite(ctx context.Context, dir string, ms [][]string) (*SQLite, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot find the data directory: %w", err)
	}
	if err := secureDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, SQLiteFile)
	if err := secureFile(path); err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-%d)&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(%d)&_txlock=immediate",
		path, sqliteBusyTimeoutMillis, sqliteCacheKiB, walLimitBytes)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open the state database: %w", err)
	}
	// One connection: SQLite has one writer anyway, and transactions then
	// never wait on each other's locks within the process.
	db.SetMaxOpenConns(1)
	d := dialect{blob: "BLOB", withoutRowID: " WITHOUT ROWID"}
	if err := claimSQLite(ctx, db, d, ms); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := newSQLStore(ctx, db, d, true)
	if err != nil {
		return nil, err
	}
	ck, err := startCheckpointer(dsn, path+"-wal")
	if err != nil {
		s.close()
		return nil, err
	}
	s.afterCommit = ck.committed
	return &SQLite{sqlStore: s, path: path, ckpt: ck}, nil
}

// applicationID marks an SQLite file as agentauth's state (the header's
// application_id, https://sqlite.org/pragma.html#pragma_application_id):
// "AGAU".
const applicationID = 0x41474155

// ownTables are the tables agentauth's migrations create: a file holding
// only these (and no mark) is one an earlier agentauth wrote, or one
// another serve process is migrating right now.
var ownTables = []string{table, schemaTable, revocationsTable, revocationSeqTable}

// claimSQLite is claimOnce, tried again while another process holds the
// file: two serve processes starting on one new file both switch it to
// WAL (the DSN's journal_mode, applied as the connection opens), and
// SQLite answers that switch SQLITE_BUSY without waiting for busy_timeout.
// It gives up after sqliteBusyTimeoutMillis.
func claimSQLite(ctx context.Context, db *sql.DB, d dialect, ms [][]string) error {
	deadline := time.Now().Add(sqliteBusyTimeoutMillis * time.Millisecond)
	for {
		err := claimOnce(ctx, db, d, ms)
		var se interface{ Code() int }
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(sqliteBusyRetry):
		}
	}
}

// claimOnce checks that the database is agentauth's, or empty, before
// migrating it: its application_id is applicationID; or it is 0 and the
// file holds no tables but agentauth's (a new file, or one written before
// the mark existed), and then it is marked. Another program's database is
// refused, untouched.
func claimOnce(ctx context.Context, db *sql.DB, d dialect, ms [][]string) error {
	var id int64
	if err := db.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err != nil {
		return fmt.Errorf("cannot read the database: %w", err)
	}
	if id != applicationID {
		if id != 0 {
			return fmt.Errorf("this is not agentauth's state database (its application_id is %#x): move it away, or name another --data-dir", id)
		}
		rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
		if err != nil {
			return fmt.Errorf("cannot read the database: %w", err)
		}
		var foreign []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return fmt.Errorf("cannot read the database: %w", err)
			}
			if !slices.Contains(ownTables, name) {
				foreign = append(foreign, name)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("cannot read the database: %w", err)
		}
		if len(foreign) > 0 {
			return fmt.Errorf("this is not agentauth's state database (it holds tables %s): move it away, or name another --data-dir", strings.Join(foreign, ", "))
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d`, applicationID)); err != nil {
			return fmt.Errorf("cannot mark the state database: %w", err)
		}
	}
	return migrate(ctx, db, d, ms)
}

// sqliteBusy is SQLITE_BUSY, the primary result code of "database is
// locked"; sqliteBusyRetry is how long claimSQLite waits between tries.
const (
	sqliteBusy      = 5
	sqliteBusyRetry = 20 * time.Millisecond
)

// Path is the database file's absolute path.
func (s *SQLite) Path() string { return s.path }

// PublishRevoked does nothing: one process uses the file.
func (s *SQLite) PublishRevoked(context.Context, []string) error { return nil }

// OnRevoked does nothing: one process uses the file.
func (s *SQLite) OnRevoked(func([]string)) {}

// PublishConfigChanged does nothing: one process uses the file.
func (s *SQLite) PublishConfigChanged(context.Context) error { return nil }

// OnConfigChanged does nothing: one process uses the file.
func (s *SQLite) OnConfigChanged(func()) {}

// Close closes the database.
func (s *SQLite) Close() error {
	// No commit kicks the checkpointer once it stops (afterCommit is
	// called under oneMu).
	s.oneMu.Lock()
	s.afterCommit = nil
	s.oneMu.Unlock()
	s.ckpt.stop()
	return s.close()
}
