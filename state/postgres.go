package state

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// revokedChannel is the LISTEN/NOTIFY channel of revocations and
// configuration changes.
const revokedChannel = "agentauth_revoked"

// Bounds of the PostgreSQL store.
const (
	// maxPostgresConns bounds the connections of one process (the
	// listener's not included).
	maxPostgresConns = 16
	// maxNotifyBytes bounds one notification's payload (PostgreSQL
	// refuses 8000 bytes or more); longer lists are sent in parts.
	maxNotifyBytes = 7000
	// relistenDelay is the wait before the listener reconnects after
	// losing its connection.
	relistenDelay = time.Second
)

// SQLSTATEs of a transaction PostgreSQL aborted (PostgreSQL manual,
// Appendix A, class 40).
const (
	sqlstateSerializationFailure = "40001"
	sqlstateDeadlockDetected     = "40P01"
)

// postgresRetryable reports a transaction PostgreSQL rolled back for a
// serialization failure (SQLSTATE 40001) or a deadlock (40P01): run again,
// it may succeed (PostgreSQL manual, "Serialization Failure Handling").
func postgresRetryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == sqlstateSerializationFailure || pe.Code == sqlstateDeadlockDetected)
}

// migrationLock is the pg_advisory_xact_lock key under which replicas
// migrate one at a time.
const migrationLock = 0x61676175 // "agau"

// Postgres is a Store in a PostgreSQL database, shared by several serve
// replicas. Revocations and configuration changes published by one reach
// the others through LISTEN/NOTIFY on a connection of its own.
type Postgres struct {
	*sqlStore
	target string
	// id names this process in its notifications, which it ignores.
	id string

	mu         sync.Mutex
	subs       []func([]string)
	configSubs []func()

	stop context.CancelFunc
	done chan struct{}
}

// notification is a NOTIFY payload: revoked jtis, or a configuration
// change.
type notification struct {
	From   string   `json:"from"`
	JTIs   []string `json:"jtis"`
	Config bool     `json:"config,omitempty"`
}

// OpenPostgres connects to the database url (postgres://…), migrates it,
// and listens for the other replicas' revocations before returning.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the database URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxPostgresConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to the database: %w", err)
	}
	d := dialect{blob: "BYTEA", forUpdate: " FOR UPDATE", lock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", migrationLock), dollars: true,
		retryable: postgresRetryable}
	if err := migrate(ctx, db, d, migrations); err != nil {
		db.Close()
		return nil, err
	}
	s, err := newSQLStore(ctx, db, d, false)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 12)
	rand.Read(b)
	p := &Postgres{sqlStore: s, id: base64.RawURLEncoding.EncodeToString(b), done: make(chan struct{}),
		target: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)) + "/" + cfg.Database}
	conn, err := p.listen(ctx, cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	go p.receive(lctx, cfg, conn)
	return p, nil
}

// Target names the database (host, port, name) without credentials.
func (p *Postgres) Target() string { return p.target }

func (p *Postgres) listen(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to listen for revocations: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+revokedChannel); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("cannot listen for revocations: %w", err)
	}
	return conn, nil
}

// receive hands the other processes' notifications to the OnRevoked and
// OnConfigChanged callbacks, reconnecting when the connection drops, until ctx ends.
// Revocations sent while it was disconnected are missed: those tokens are
// refused by the issuer, and by this replica's host once its cache of them
// expires.
func (p *Postgres) receive(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer close(p.done)
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				conn.Close(context.Background())
				conn = nil
				break
			}
			var msg notification
			if json.Unmarshal([]byte(n.Payload), &msg) != nil || msg.From == p.id {
				continue
			}
			p.mu.Lock()
			subs := append([]func([]string){}, p.subs...)
			configSubs := append([]func(){}, p.configSubs...)
			p.mu.Unlock()
			if msg.Config {
				for _, fn := range configSubs {
					fn()
				}
				continue
			}
			for _, fn := range subs {
				fn(msg.JTIs)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(relistenDelay):
		}
		conn, _ = p.listen(ctx, cfg)
	}
}

// PublishRevoked notifies the other replicas, in parts of at most
// maxNotifyBytes.
func (p *Postgres) PublishRevoked(ctx context.Context, jtis []string) error {
	for len(jtis) > 0 {
		msg := notification{From: p.id}
		size := len(p.id) + 32
		for len(jtis) > 0 && (len(msg.JTIs) == 0 || size+len(jtis[0])+3 <= maxNotifyBytes) {
			size += len(jtis[0]) + 3
			msg.JTIs = append(msg.JTIs, jtis[0])
			jtis = jtis[1:]
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		if _, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, revokedChannel, string(b)); err != nil {
			return fmt.Errorf("cannot notify the other replicas: %w", err)
		}
	}
	return nil
}

// OnRevoked registers fn for the jtis other processes publish.
func (p *Postgres) OnRevoked(fn func(jtis []string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subs = append(p.subs, fn)
}

// PublishConfigChanged notifies the other replicas that serve's
// configuration was reloaded.
func (p *Postgres) PublishConfigChanged(ctx context.Context) error {
	b, err := json.Marshal(notification{From: p.id, Config: true})
	if err != nil {
		return err
	}
	if _, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, revokedChannel, string(b)); err != nil {
		return fmt.Errorf("cannot notify the other replicas: %w", err)
	}
	return nil
}

// OnConfigChanged registers fn for the configuration changes other
// processes publish.
func (p *Postgres) OnConfigChanged(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.configSubs = append(p.configSubs, fn)
}

// Close stops listening and closes the connections.
func (p *Postgres) Close() error {
	p.stop()
	<-p.done
	return p.db.Close()
}
