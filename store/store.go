package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a handle on the stakegraph database: a pool of connections. It is
// safe for concurrent use.
//
// The store's methods query through SelectContext, GetContext,
// ExecContext and InTx, which take a connection only within the limit of
// a context made by WithConnLimit; a method that reads rows itself takes
// a permit with hold and keeps it until it has closed them.
type DB struct {
	// sql is the connection pool. It is unexported so that only this
	// package speaks SQL.
	sql *sqlx.DB
	url string // for NewPool
	// statements counts the statements sent by this handle and by the
	// pools opened from it with NewPool.
	statements *atomic.Int64
	// keyed is the pool of the statements selectPrepared keeps prepared,
	// whose sessions plan each of them once (see withGenericPlans); sql
	// itself for a handle made by Wrap.
	keyed *sqlx.DB
	// prepared holds the statements prepared by selectPrepared, by their
	// text (a *sqlx.Stmt each, on keyed).
	prepared sync.Map
}

// Close closes the handle's connections.
func (db *DB) Close() error {
	if db.keyed != db.sql {
		db.keyed.Close()
	}
	return db.sql.Close()
}

// URL returns the connection URL the handle was opened with, for tools and
// tests that connect to the same database on their own.
func (db *DB) URL() string { return db.url }

// SetMaxIdleConns sets how many idle connections the handle keeps; 0 closes
// each connection when its work ends.
func (db *DB) SetMaxIdleConns(n int) {
	db.sql.SetMaxIdleConns(n)
	db.keyed.SetMaxIdleConns(n)
}

// VacuumAnalyze vacuums and analyzes every table, leaving a settled
// database: visibility maps set (index-only scans skip the heap) and fresh
// planner statistics, as after a bulk load.
func (db *DB) VacuumAnalyze(ctx context.Context) error {
	if _, err := db.sql.ExecContext(ctx, `VACUUM (ANALYZE)`); err != nil {
		return fmt.Errorf("vacuum: %w", Classify(err))
	}
	return nil
}

// StatementCount returns the number of SQL statements this handle, and
// the pools opened from it with NewPool, have sent so far. Take the
// difference of two readings to count the statements of one piece of
// work.
func (db *DB) StatementCount() int64 { return db.statements.Load() }

// PoolConfig tunes the connection pool and the sessions of its
// connections.
type PoolConfig struct {
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	// StatementTimeout, when positive, is PostgreSQL's statement_timeout on
	// every connection of the pool: a statement running longer is
	// cancelled by the server, and fails with an error that wraps
	// derrors.Timeout. Zero leaves the server's setting (by default no
	// limit), as migrations, the indexer and bulk loads need.
	StatementTimeout time.Duration
}

// DefaultPool is the pool used when Open is given no PoolConfig.
var DefaultPool = PoolConfig{MaxOpenConns: 16, MaxIdleConns: 16, ConnMaxLifetime: 30 * time.Minute}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, pool ...PoolConfig) (*DB, error) {
	cfg := DefaultPool
	if len(pool) > 0 {
		cfg = pool[0]
	}
	return open(ctx, url, cfg, new(atomic.Int64))
}

// open is Open with the statement counter of the handle.
func open(ctx context.Context, url string, cfg PoolConfig, statements *atomic.Int64) (*DB, error) {
	var runtime map[string]string
	if cfg.StatementTimeout > 0 {
		// In milliseconds, PostgreSQL's unit for it; at least 1, since 0
		// would turn the limit off.
		ms := max(1, (cfg.StatementTimeout+time.Millisecond-1)/time.Millisecond)
		runtime = map[string]string{"statement_timeout": strconv.FormatInt(int64(ms), 10)}
	}
	db, err := openPool(url, cfg, runtime, statements)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", Classify(err))
	}
	keyed, err := openPool(url, cfg, withGenericPlans(runtime), statements)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &DB{sql: db, keyed: keyed, url: url, statements: statements}, nil
}

// openPool returns a pool of cfg's size on the database at url whose
// sessions start with the settings of runtime. It connects only when a
// connection is first needed.
func openPool(url string, cfg PoolConfig, runtime map[string]string, statements *atomic.Int64) (*sqlx.DB, error) {
	connector, err := newCountingConnector(url, runtime, statements)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxIdleConns)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	// sqlx picks its bind style from the driver name; ours is PostgreSQL's.
	return sqlx.NewDb(db, "postgres"), nil
}

// withGenericPlans returns the session settings of runtime for the pool of
// the statements selectPrepared keeps prepared, whose plan is the same
// whatever their arguments: reads by key (`WHERE key = ANY($1)`), one key's
// pages, the feeds' pages of a time range. PostgreSQL would otherwise plan
// each execution again for good: it compares its generic plan's estimate,
// made for an array of unknown length, with the custom plans' estimates
// for the one or few keys usually asked for, and the generic one always
// looks dearer. Planning the staker positions' read by key took 0.5 ms
// alone and 2 ms under load, against 0.07 ms to run it. The statements
// whose best plan does depend on their arguments (a page of a whole list
// at a skip, an AVS's stakers) run on the other pool with PostgreSQL's
// usual choice.
func withGenericPlans(runtime map[string]string) map[string]string {
	out := maps.Clone(runtime)
	if out == nil {
		out = make(map[string]string, 1)
	}
	out["plan_cache_mode"] = "force_generic_plan"
	return out
}

// Wrap returns a handle on a pool opened with another driver (one that
// records its statements, say). It counts no statements and cannot open
// pools with NewPool.
func Wrap(pool *sql.DB) *DB {
	db := sqlx.NewDb(pool, "postgres")
	return &DB{sql: db, keyed: db, statements: new(atomic.Int64)}
}

// NewPool opens another handle on the same database, with a pool of its
// own configured by cfg: the API's connections with a statement timeout
// beside the indexer's without one, say, or a connection reserved for
// work that must not wait behind a busy pool. It shares db's statement
// counter. Close it when done.
func (db *DB) NewPool(ctx context.Context, cfg PoolConfig) (*DB, error) {
	if db.url == "" {
		return nil, errors.New("store: NewPool needs a DB made by Open")
	}
	return open(ctx, db.url, cfg, db.statements)
}

// NewPoolOn opens a pool of cfg's size on the database at url, a read
// replica of db's, say, whose statements count with db's (StatementCount).
func (db *DB) NewPoolOn(ctx context.Context, url string, cfg PoolConfig) (*DB, error) {
	return open(ctx, url, cfg, db.statements)
}

// Migrations returns the embedded migration files (goose SQL files named
// NNNNN_name.sql), for tools that key caches on their content.
func Migrations() fs.FS { return mustSub(migrations, "migrations") }

// Migrate applies every pending embedded migration. It is idempotent.
func Migrate(ctx context.Context, db *sql.DB) error {
	// A session-level advisory lock serialises concurrent migrators (two
	// processes starting on a fresh database, say).
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, Migrations(), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Migrate applies every pending migration to this database, rebuilds any
// index that an interrupted bulk load left suspended, and refreshes the
// derived figures if they are stale: a migration that adds a derived figure
// marks the days to recompute (service_state.dirty_since), which outside
// an indexing transaction is otherwise always clear.
func (db *DB) Migrate(ctx context.Context) error {
	if err := Migrate(ctx, db.sql.DB); err != nil {
		return err
	}
	if err := db.RestoreIndexes(ctx); err != nil {
		return err
	}
	return db.RefreshIfStale(ctx, time.Now())
}

// RefreshIfStale runs Refresh as of now when service_state.dirty_since is
// set.
func (db *DB) RefreshIfStale(ctx context.Context, now time.Time) error {
	var stale bool
	if err := db.getContext(ctx, &stale, `SELECT EXISTS (SELECT 1 FROM service_state WHERE id AND dirty_since IS NOT NULL)`); err != nil {
		return fmt.Errorf("read staleness: %w", Classify(err))
	}
	if !stale {
		return nil
	}
	return db.InTx(ctx, func(tx *Tx) error { return tx.Refresh(ctx, now) })
}

// Ping checks that the database answers; readiness probes use it.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.sql.PingContext(ctx); err != nil {
		return Classify(err)
	}
	return nil
}

// EnsureNetwork records the network this database serves on first use and
// refuses a different one afterwards.
func (db *DB) EnsureNetwork(ctx context.Context, network string) error {
	if _, err := db.execContext(ctx, `
		INSERT INTO service_state (network) VALUES ($1)
		ON CONFLICT (id) DO NOTHING`, network); err != nil {
		return fmt.Errorf("record network: %w", Classify(err))
	}
	var have string
	if err := db.getContext(ctx, &have, `SELECT network FROM service_state WHERE id`); err != nil {
		return fmt.Errorf("read network: %w", Classify(err))
	}
	if have != network {
		return fmt.Errorf("this database holds %s data; refusing to use it for %s", have, network)
	}
	return nil
}

// Tx is a database transaction of the store.
type Tx struct {
	// sql is the transaction, unexported like DB's pool.
	sql *sqlx.Tx
}

// InTx runs fn in one transaction, committing when fn returns nil and
// rolling back otherwise. The transaction's connection counts against the
// limit of ctx (WithConnLimit) until it ends, so fn must run its
// statements through tx, not db.
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	release, err := hold(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer release()
	tx, err := db.sql.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", Classify(err))
	}
	if err := fn(&Tx{sql: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", Classify(err))
	}
	return nil
}

// Classify wraps err with derrors.Unavailable when it says the database
// cannot be reached, so that callers answer 503 instead of 500, and with
// derrors.Timeout when the work ran out of time: the context's deadline
// passed, or PostgreSQL cancelled a statement (past statement_timeout, or
// on the cancel request lib/pq sends when the context ends).
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, derrors.Unavailable) || errors.Is(err, derrors.Timeout) {
		return err
	}
	var netErr net.Error
	var pqErr *pq.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// Before the net.Error case: context.DeadlineExceeded is one.
		return fmt.Errorf("%w: %w", derrors.Timeout, err)
	case errors.As(err, &pqErr):
		// Class 08: connection exception; 57P01..57P03: admin shutdown,
		// crash shutdown, cannot connect now.
		if pqErr.Code.Class() == "08" || pqErr.Code == "57P01" || pqErr.Code == "57P02" || pqErr.Code == "57P03" {
			return fmt.Errorf("%w: %v", derrors.Unavailable, err)
		}
		// 57014: query_canceled.
		if pqErr.Code == "57014" {
			return fmt.Errorf("%w: %w", derrors.Timeout, err)
		}
		return err
	case errors.As(err, &netErr), // refused, reset, unknown host, ...
		errors.Is(err, sql.ErrConnDone), errors.Is(err, driverBadConn),
		// The server closed the connection mid-message.
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %v", derrors.Unavailable, err)
	}
	return err
}

// execContext runs a statement of the transaction that returns no rows.
func (tx *Tx) execContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.sql.ExecContext(ctx, query, args...)
}

// selectContext runs a query of the transaction and scans its rows into
// dest, as sqlx does.
func (tx *Tx) selectContext(ctx context.Context, dest any, query string, args ...any) error {
	return tx.sql.SelectContext(ctx, dest, query, args...)
}

// getContext runs a query of the transaction and scans its one row into
// dest, as sqlx does.
func (tx *Tx) getContext(ctx context.Context, dest any, query string, args ...any) error {
	return tx.sql.GetContext(ctx, dest, query, args...)
}

// queryRowxContext runs a query of the transaction that returns one row.
func (tx *Tx) queryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	return tx.sql.QueryRowxContext(ctx, query, args...)
}
