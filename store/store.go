package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a handle on the stakegraph database. It is safe for concurrent use.
type DB struct {
	*sqlx.DB
}

// PoolConfig tunes the connection pool.
type PoolConfig struct {
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
}

// DefaultPool is the pool used when Open is given no PoolConfig.
var DefaultPool = PoolConfig{MaxOpenConns: 16, MaxIdleConns: 16, ConnMaxLifetime: 30 * time.Minute}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, pool ...PoolConfig) (*DB, error) {
	registerCountingDriver()
	db, err := sqlx.Open(countingDriverName, url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	cfg := DefaultPool
	if len(pool) > 0 {
		cfg = pool[0]
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxIdleConns)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", Classify(err))
	}
	// sqlx picks its bind style from the driver name; ours is PostgreSQL's.
	return &DB{DB: sqlx.NewDb(db.DB, "postgres")}, nil
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

// Migrate applies every pending migration to this database and rebuilds
// any index that an interrupted bulk load left suspended.
func (db *DB) Migrate(ctx context.Context) error {
	if err := Migrate(ctx, db.DB.DB); err != nil {
		return err
	}
	return db.RestoreIndexes(ctx)
}

// Ping checks that the database answers; readiness probes use it.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.DB.PingContext(ctx); err != nil {
		return Classify(err)
	}
	return nil
}

// EnsureNetwork records the network this database serves on first use and
// refuses a different one afterwards.
func (db *DB) EnsureNetwork(ctx context.Context, network string) error {
	if _, err := db.ExecContext(ctx, `
		INSERT INTO service_state (network) VALUES ($1)
		ON CONFLICT (id) DO NOTHING`, network); err != nil {
		return fmt.Errorf("record network: %w", Classify(err))
	}
	var have string
	if err := db.GetContext(ctx, &have, `SELECT network FROM service_state`); err != nil {
		return fmt.Errorf("read network: %w", Classify(err))
	}
	if have != network {
		return fmt.Errorf("this database holds %s data; refusing to use it for %s", have, network)
	}
	return nil
}

// Tx is a database transaction of the store.
type Tx struct {
	*sqlx.Tx
}

// InTx runs fn in one transaction, committing when fn returns nil and
// rolling back otherwise.
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", Classify(err))
	}
	if err := fn(&Tx{tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", Classify(err))
	}
	return nil
}

// Classify wraps err with derrors.Unavailable when it says the database
// cannot be reached, so that callers answer 503 instead of 500.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, derrors.Unavailable) {
		return err
	}
	var netErr net.Error
	var pqErr *pq.Error
	switch {
	case errors.As(err, &pqErr):
		// Class 08: connection exception; 57P01..57P03: admin shutdown,
		// crash shutdown, cannot connect now.
		if pqErr.Code.Class() == "08" || pqErr.Code == "57P01" || pqErr.Code == "57P02" || pqErr.Code == "57P03" {
			return fmt.Errorf("%w: %v", derrors.Unavailable, err)
		}
		return err
	case errors.As(err, &netErr), errors.Is(err, sql.ErrConnDone), errors.Is(err, driverBadConn):
		return fmt.Errorf("%w: %v", derrors.Unavailable, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "bad connection") || strings.Contains(msg, "EOF") {
		return fmt.Errorf("%w: %v", derrors.Unavailable, err)
	}
	return err
}
