package state

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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
	// listener's not included); see postgresConns.
	maxPostgresConns = 16
	// relistenDelay is the wait before the listener reconnects after
	// losing its connection.
	relistenDelay = time.Second
	// DefaultReconcileEvery is how often a replica reads the revocation
	// log for entries no notification announced (PostgresOptions).
	DefaultReconcileEvery = 2 * time.Second
	// failedSyncLogEvery spaces the warnings of a revocation log that
	// cannot be read.
	failedSyncLogEvery = 30 * time.Second
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
// replicas. Configuration changes published by one reach the others
// through LISTEN/NOTIFY on a connection of its own. Revocations reach
// them through the revocation log (Revocation): each replica reads the
// entries above the last sequence it applied when a notification
// announces new ones, whenever its listening connection is (re)made, and
// every ReconcileEvery, so that a notification lost with a connection
// (a restart of PostgreSQL, a failover, a killed backend) delays a
// revocation by ReconcileEvery at most while the database answers.
// StaleError says that a replica has not read the revocation log for
// longer than it may serve without it.
type StaleError struct {
	Behind, Max time.Duration
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("this replica has not read the revocation log for %s (at most %s): the database is unreachable, and tokens revoked meanwhile on other replicas would be accepted",
		e.Behind.Round(time.Millisecond), e.Max)
}

// Stale returns a *StaleError when the last complete read of the
// revocation log began more than max ago; nil otherwise. It takes no
// lock.
func (p *Postgres) Stale(max time.Duration) error {
	if behind := time.Since(p.base) - time.Duration(p.synced.Load()); behind > max {
		return &StaleError{Behind: behind, Max: max}
	}
	return nil
}

// RevocationFeed says how current the replica is, for the caller to
// refuse work when it falls too far behind (serve's
// --revocation-staleness).
type Postgres struct {
	*sqlStore
	target string
	// id names this process in its notifications, which it ignores.
	id    string
	every time.Duration
	log   *slog.Logger

	mu         sync.Mutex
	subs       []func([]string)
	configSubs []func()
	feed       FeedStatus
	// failures counts the reads of the log that failed in a row.
	failures int
	lastWarn time.Time

	// base and synced give FeedStatus.Synced on the monotonic clock, for
	// Stale without a lock: synced is its offset from base.
	base   time.Time
	synced atomic.Int64

	// kick asks the follower to read the log now.
	kick chan struct{}
	stop context.CancelFunc
	done sync.WaitGroup
}

// PostgresOptions tune OpenPostgresOptions.
type PostgresOptions struct {
	// ReconcileEvery is how often the revocation log is read although
	// no notification came (DefaultReconcileEvery when zero).
	ReconcileEvery time.Duration
	// Logger receives the revocation feed's lines (applied entries with
	// their lag, failures to read the log); none when nil.
	Logger *slog.Logger
}

// FeedStatus is how current a replica's copy of the revocation log is.
type FeedStatus struct {
	// Seq is the last sequence applied.
	Seq int64
	// Synced is when the last successful read of the log began: every
	// revocation committed before it has been applied.
	Synced time.Time
	// Lag is, for the newest entry the last read applied, the time from
	// its writing to its application here (by the two processes'
	// clocks); zero when that read applied nothing.
	Lag time.Duration
}

// notification is a NOTIFY payload: new entries in the revocation log,
// or a configuration change. JTIs, the revoked ids, is what earlier
// versions sent and is not read: a replica reads the ids from the log.
type notification struct {
	From   string   `json:"from"`
	JTIs   []string `json:"jtis,omitempty"`
	Config bool     `json:"config,omitempty"`
}

// OpenPostgres is OpenPostgresOptions with the default options.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	return OpenPostgresOptions(ctx, url, PostgresOptions{})
}

// OpenPostgresOptions connects to the database url (postgres://…),
// migrates it, and listens for the other replicas' revocations before
// returning. The revocation feed starts after the log's last entry at
// that moment: the caller loads the entries before it (RevokedSince 0)
// once it has registered with OnRevoked.
func OpenPostgresOptions(ctx context.Context, url string, opts PostgresOptions) (*Postgres, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the database URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(postgresConns())
	db.SetMaxIdleConns(postgresConns())
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to the database: %w", err)
	}
	d := dialect{blob: "BYTEA", forUpdate: " FOR UPDATE", lock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", migrationLock), dollars: true,
		retryable: postgresRetryable, writableCTE: true}
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
	p := &Postgres{sqlStore: s, id: base64.RawURLEncoding.EncodeToString(b), kick: make(chan struct{}, 1),
		every: cmp.Or(opts.ReconcileEvery, DefaultReconcileEvery), log: opts.Logger,
		target: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)) + "/" + cfg.Database}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	// A transaction that revokes announces it itself, at commit, in the
	// statement that draws its sequences (sqlTx.flushRevocations): the
	// notice names this process, which ignores its own, and no ids, which
	// a replica reads from the log.
	notice, _ := json.Marshal(notification{From: p.id})
	if s.revSeqNotify, err = db.PrepareContext(ctx, `WITH drawn AS (UPDATE `+revocationSeqTable+` SET seq = seq + $1 RETURNING seq)
		SELECT drawn.seq FROM drawn, pg_notify('`+revokedChannel+`', $2)`); err != nil {
		p.close()
		return nil, fmt.Errorf("cannot prepare the state queries: %w", err)
	}
	s.prepared, s.revNotice = append(s.prepared, s.revSeqNotify), string(notice)
	start := time.Now()
	p.base = start
	seq, err := p.LastRevocation(ctx)
	if err != nil {
		p.close()
		return nil, err
	}
	p.feed = FeedStatus{Seq: seq, Synced: start}
	conn, err := p.listen(ctx, cfg)
	if err != nil {
		p.close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.done.Add(2)
	go p.receive(lctx, cfg, conn)
	go p.follow(lctx)
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

// receive hands the other processes' configuration changes to the
// OnConfigChanged callbacks, and has the follower read the revocation log
// when a revocation is announced and each time the connection is made
// again (notifications sent meanwhile are lost), until ctx ends.
func (p *Postgres) receive(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer p.done.Done()
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				conn.Close(context.Background())
				conn = nil
				if ctx.Err() == nil {
					p.log.Warn("state: lost the connection listening for revocations; reconnecting", "database", p.target, "err", err)
				}
				break
			}
			var msg notification
			if json.Unmarshal([]byte(n.Payload), &msg) != nil || msg.From == p.id {
				continue
			}
			if !msg.Config {
				p.syncNow()
				continue
			}
			p.mu.Lock()
			configSubs := append([]func(){}, p.configSubs...)
			p.mu.Unlock()
			for _, fn := range configSubs {
				fn()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(relistenDelay):
		}
		if conn, _ = p.listen(ctx, cfg); conn != nil {
			p.syncNow()
		}
	}
}

// syncNow asks the follower to read the revocation log.
func (p *Postgres) syncNow() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// follow reads the revocation log when asked and every p.every, until
// ctx ends.
func (p *Postgres) follow(ctx context.Context) {
	defer p.done.Done()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
		p.sync(ctx)
	}
}

// sync applies the revocation log's entries above the last one applied:
// it hands their ids to the OnRevoked callbacks and, when it has read to
// the end, moves FeedStatus.Synced to when it began.
func (p *Postgres) sync(ctx context.Context) {
	start := time.Now()
	p.mu.Lock()
	seq := p.feed.Seq
	p.mu.Unlock()
	var applied int
	var newest time.Time
	for {
		// A read that does not answer within the interval fails: the
		// database is unreachable, and FeedStatus.Synced stays behind.
		qctx, cancel := context.WithTimeout(ctx, p.every)
		revs, err := p.RevokedSince(qctx, seq, maxRevocationPage)
		cancel()
		if err != nil {
			p.syncFailed(ctx, err)
			return
		}
		if len(revs) > 0 {
			ids := make([]string, len(revs))
			for k, r := range revs {
				ids[k] = r.ID
			}
			p.mu.Lock()
			subs := slices.Clone(p.subs)
			p.mu.Unlock()
			for _, fn := range subs {
				fn(ids)
			}
			seq, newest, applied = revs[len(revs)-1].Seq, revs[len(revs)-1].At, applied+len(revs)
			p.mu.Lock()
			p.feed.Seq = seq
			p.mu.Unlock()
		}
		if len(revs) < maxRevocationPage {
			break
		}
	}
	p.mu.Lock()
	recovered, down := p.failures > 0, start.Sub(p.feed.Synced)
	p.feed.Synced, p.feed.Lag, p.failures = start, 0, 0
	p.synced.Store(int64(start.Sub(p.base)))
	if applied > 0 && !newest.IsZero() {
		p.feed.Lag = max(time.Since(newest), 0)
	}
	lag := p.feed.Lag
	p.mu.Unlock()
	if recovered {
		p.log.Info("state: revocation log read again; this replica is current", "database", p.target, "behind_for", down.Round(time.Millisecond))
	}
	if applied > 0 {
		p.log.Info("state: revocations applied from the log", "entries", applied, "seq", seq, "lag", lag.Round(time.Millisecond))
	}
}

func (p *Postgres) syncFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	p.failures++
	behind := time.Since(p.feed.Synced)
	warn := p.failures == 1 || time.Since(p.lastWarn) >= failedSyncLogEvery
	if warn {
		p.lastWarn = time.Now()
	}
	p.mu.Unlock()
	if warn {
		p.log.Warn("state: cannot read the revocation log; revocations made on other replicas since then are not applied here",
			"database", p.target, "behind_for", behind.Round(time.Millisecond), "err", err)
	}
}

// RevocationFeed says how current this replica's copy of the revocation
// log is.
func (p *Postgres) RevocationFeed() FeedStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.feed
}

// PublishRevoked does nothing: the transaction that wrote the
// revocations to the log announced them at its commit.
func (p *Postgres) PublishRevoked(context.Context, []string) error { return nil }

// OnRevoked registers fn for the ids of the revocation log's new entries,
// this process's own included, as the follower reads them.
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
	p.done.Wait()
	return p.close()
}

// postgresConns is the size of a replica's pool: twice its CPUs, at least
// 4, at most maxPostgresConns. A transaction of the issuer is a few short
// statements, CPU-bound at both ends; more connections than that queue
// inside PostgreSQL rather than in the pool, with a longer tail: measured
// with testdata/bench/exchange.sh on 2 CPUs, 16 connections gave a p99 of
// POST /token about twice that of 4.
func postgresConns() int {
	return min(max(4, 2*runtime.GOMAXPROCS(0)), maxPostgresConns)
}
