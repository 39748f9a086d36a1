package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The SQL stores' schema: its tables, its migrations, and refusing a
// database a newer agentauth wrote.

// table holds every record; schemaTable its schema version;
// revocationsTable the revocation log, and revocationSeqTable its one
// row, the last sequence drawn.
const (
	table              = "agentauth_state"
	schemaTable        = "agentauth_schema"
	revocationsTable   = "agentauth_revocations"
	revocationSeqTable = "agentauth_revocation_seq"
)

// migrations build the schema; migration n (from 1) brings a database to
// version n. Append, never edit: a database records the last one applied.
// {{blob}} is the dialect's byte string type, {{without_rowid}} SQLite's
// clustered primary key (one b-tree to write rather than two).
var migrations = [][]string{
	{
		`CREATE TABLE ` + table + ` (kind TEXT NOT NULL, key TEXT NOT NULL, value {{blob}} NOT NULL,
			expires BIGINT NOT NULL, PRIMARY KEY (kind, key)){{without_rowid}}`,
		`CREATE INDEX ` + table + `_expires ON ` + table + ` (expires) WHERE expires > 0`,
	},
	// 2: the revocation log (see Revocation). The issuer's records of
	// kind "revoked" (revoked jtis until they expire) move into it.
	{
		`CREATE TABLE ` + revocationsTable + ` (seq BIGINT NOT NULL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
			expires BIGINT NOT NULL, at BIGINT NOT NULL)`,
		`CREATE INDEX ` + revocationsTable + `_expires ON ` + revocationsTable + ` (expires)`,
		`CREATE TABLE ` + revocationSeqTable + ` (seq BIGINT NOT NULL)`,
		`INSERT INTO ` + revocationSeqTable + ` (seq) SELECT count(*) FROM ` + table + ` WHERE kind = 'revoked'`,
		`INSERT INTO ` + revocationsTable + ` (seq, id, expires, at)
			SELECT row_number() OVER (ORDER BY key), key, expires, 0 FROM ` + table + ` WHERE kind = 'revoked'`,
		`DELETE FROM ` + table + ` WHERE kind = 'revoked'`,
	},
}

// NewerSchemaError is returned when a database was written by a newer
// agentauth than this one.
type NewerSchemaError struct {
	Have, Know int
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("the state database has schema version %d, newer than this agentauth knows (%d): a newer agentauth wrote it; run that version", e.Have, e.Know)
}

// migrate brings the database to the newest schema of ms, or refuses a
// newer one.
func migrate(ctx context.Context, db *sql.DB, d dialect, ms [][]string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot migrate the state database: %w", err)
	}
	defer tx.Rollback()
	if d.lock != "" {
		if _, err := tx.ExecContext(ctx, d.lock); err != nil {
			return fmt.Errorf("cannot migrate the state database: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+schemaTable+` (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("cannot migrate the state database: %w", err)
	}
	var version int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM `+schemaTable).Scan(&version); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+schemaTable+` (version) VALUES (0)`); err != nil {
			return fmt.Errorf("cannot migrate the state database: %w", err)
		}
	case err != nil:
		return fmt.Errorf("cannot read the state database's schema version: %w", err)
	}
	if version > len(ms) {
		return &NewerSchemaError{Have: version, Know: len(ms)}
	}
	for n := version; n < len(ms); n++ {
		for _, stmt := range ms[n] {
			stmt = strings.NewReplacer("{{blob}}", d.blob, "{{without_rowid}}", d.withoutRowID).Replace(stmt)
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("cannot migrate the state database to version %d: %w", n+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+schemaTable+` SET version = `+strconv.Itoa(len(ms))); err != nil {
		return fmt.Errorf("cannot migrate the state database: %w", err)
	}
	return tx.Commit()
}
