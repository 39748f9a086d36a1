//go:build unix

package state

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The data directory and its database are never reached through a
// symbolic link: a symlinked state.db or directory is refused with a
// message naming the path, and the file it points to is left as it was.
func TestSQLiteRefusesSymlinks(t *testing.T) {
	ctx := context.Background()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("someone's file"), 0o644); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, SQLiteFile)); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSQLite(ctx, dir)
	if err == nil {
		s.Close()
		t.Fatal("opened a state.db that is a symbolic link")
	}
	if want := filepath.Join(dir, SQLiteFile); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %q does not name %s as a symbolic link", err, want)
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target was chmod-ed to %04o", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(victim); string(b) != "someone's file" {
		t.Errorf("the link's target was written: %q", b)
	}

	linked := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(t.TempDir(), linked); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenSQLite(ctx, linked); err == nil {
		s.Close()
		t.Fatal("opened a data directory that is a symbolic link")
	} else if !strings.Contains(err.Error(), linked) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %q does not name %s as a symbolic link", err, linked)
	}
}

// An existing data directory open to others is restricted to its owner,
// as the README promises.
func TestSQLiteRestrictsTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	s, err := OpenSQLite(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Chmod(dir, 0o755) // and with the database in it
	if s, err = OpenSQLite(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{dir, filepath.Join(dir, SQLiteFile)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
	}

	// A directory open to others that holds other files (a home
	// directory, say) is refused, naming the fix, and left as it was.
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o755)
	os.Chmod(home, 0o755)
	os.WriteFile(filepath.Join(home, "notes.txt"), nil, 0o644)
	if s, err := OpenSQLite(context.Background(), home); err == nil {
		s.Close()
		t.Fatal("opened a shared directory holding other files")
	} else if !strings.Contains(err.Error(), "chmod 700 "+home) {
		t.Errorf("error %q does not name the fix", err)
	}
	if fi, _ := os.Stat(home); fi.Mode().Perm() != 0o755 {
		t.Errorf("the refused directory's mode became %04o", fi.Mode().Perm())
	}
}

// Another program's SQLite database is refused untouched, with a message
// naming it; a database an earlier agentauth wrote (its tables, no
// application_id) opens and is marked as agentauth's.
func TestSQLiteRefusesAForeignDatabase(t *testing.T) {
	ctx := context.Background()
	raw := func(dir string, stmts ...string) string {
		path := filepath.Join(dir, SQLiteFile)
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		return path
	}
	appID := func(path string) (id int64, tables int) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.QueryRow(`PRAGMA application_id`).Scan(&id)
		db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&tables)
		return id, tables
	}

	for name, stmts := range map[string][]string{
		"another program's tables": {`CREATE TABLE notes (body TEXT)`, `INSERT INTO notes VALUES ('keep me')`},
		"another application_id":   {`PRAGMA application_id = 1234`},
		"agentauth's and others":   {`CREATE TABLE agentauth_schema (version INTEGER NOT NULL)`, `CREATE TABLE notes (body TEXT)`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := raw(dir, stmts...)
			id0, tables0 := appID(path)
			s, err := OpenSQLite(ctx, dir)
			if err == nil {
				s.Close()
				t.Fatal("opened another program's database")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not agentauth's state database") {
				t.Errorf("error %q does not name %s as not agentauth's", err, path)
			}
			if id, tables := appID(path); id != id0 || tables != tables0 {
				t.Errorf("the foreign database was written: application_id %d→%d, tables %d→%d", id0, id, tables0, tables)
			}
		})
	}

	// A database of an earlier agentauth: its schema, no mark.
	dir := t.TempDir()
	path := raw(dir, `CREATE TABLE agentauth_schema (version INTEGER NOT NULL)`, `INSERT INTO agentauth_schema VALUES (1)`,
		`CREATE TABLE agentauth_state (kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, expires BIGINT NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID`,
		`INSERT INTO agentauth_state VALUES ('client', 'old', x'7b7d', 0)`)
	s, err := OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatalf("an earlier agentauth's database: %v", err)
	}
	err = s.View(ctx, func(tx Tx) error {
		_, err := tx.Get("client", "old")
		return err
	})
	s.Close()
	if err != nil {
		t.Errorf("the earlier record: %v", err)
	}
	if id, _ := appID(path); id != applicationID {
		t.Errorf("application_id %#x after opening, want %#x", id, applicationID)
	}
}

// Processes that start together on one new data directory all open it:
// the first to switch the new file to WAL makes the others' first read
// answer SQLITE_BUSY at once, which claimSQLite waits out (the check of
// the file's owner used to fail there: "database is locked").
func TestSQLiteOpenedTogether(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	const n = 8
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			st, err := OpenSQLite(context.Background(), dir)
			if err == nil {
				err = st.Close()
			}
			errs <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Every table the migrations create is one claimSQLite knows as ours, so
// a file another serve process is still migrating is never taken for a
// foreign database.
func TestSQLiteOwnTablesAreTheMigrations(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenSQLite(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, SQLiteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ownTables, name) {
			t.Errorf("the migrations create %s, which ownTables does not list", name)
		}
	}
}
