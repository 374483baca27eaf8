package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// IndexerLockKey is the PostgreSQL advisory lock key held by the one
// process that indexes the chain into a database (see package election).
// It differs from the key of the migrations' lock.
const IndexerLockKey int64 = 0x5374616b65496478 // "StakeIdx"

// SessionLock is a PostgreSQL session-level advisory lock, held on a
// connection of its own for as long as that session lives: PostgreSQL
// releases it when the session ends, including when the holding process
// dies and its connection drops.
type SessionLock struct {
	conn *sql.Conn
	key  int64
}

// TryLock takes the session-level advisory lock key on a connection of its
// own, without waiting. It returns nil and no error when another session
// holds the lock. The session is named name in pg_stat_activity (its
// application_name), so that other processes can say who holds the lock
// (LockHolder), and it asks the server to probe the connection every few
// seconds, so that the lock of a process cut off by the network is
// released within seconds instead of the operating system's two hours.
func (db *DB) TryLock(ctx context.Context, key int64, name string) (*SessionLock, error) {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock connection: %w", Classify(err))
	}
	if _, err := conn.ExecContext(ctx, `
		SELECT set_config('application_name', $1, false),
		       set_config('tcp_keepalives_idle', '5', false),
		       set_config('tcp_keepalives_interval', '2', false),
		       set_config('tcp_keepalives_count', '3', false)`, name); err != nil {
		discard(conn)
		return nil, fmt.Errorf("lock session settings: %w", Classify(err))
	}
	var locked bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&locked); err != nil {
		discard(conn)
		return nil, fmt.Errorf("try advisory lock: %w", Classify(err))
	}
	if !locked {
		return nil, discard(conn)
	}
	return &SessionLock{conn: conn, key: key}, nil
}

// ErrLockLost is the error of SessionLock.Check when the lock's session
// no longer holds the lock.
var ErrLockLost = errors.New("the advisory lock is no longer held")

// Check reports whether the lock's session is alive and still holds the
// lock: an error means the lock may be held by another session by now.
func (l *SessionLock) Check(ctx context.Context) error {
	var held bool
	if err := l.conn.QueryRowContext(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
			  AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1
		)`, l.key).Scan(&held); err != nil {
		return fmt.Errorf("check advisory lock: %w", Classify(err))
	}
	if !held {
		return ErrLockLost
	}
	return nil
}

// Release gives the lock up and closes its session, which would release it
// too: an unlock that fails is not an error.
func (l *SessionLock) Release(ctx context.Context) error {
	_, _ = l.conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, l.key)
	return discard(l.conn)
}

// discard closes conn's session instead of returning it to the pool, where
// its settings (the application name) would mislabel other work.
func discard(conn *sql.Conn) error {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	if err := conn.Close(); err != nil && !errors.Is(err, sql.ErrConnDone) {
		return err
	}
	return nil
}

// LockHolder returns the application_name of the session that holds the
// advisory lock key, and false when no session holds it.
func (db *DB) LockHolder(ctx context.Context, key int64) (string, bool, error) {
	var names []string
	if err := db.selectContext(ctx, &names, `
		SELECT a.application_name
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted
		  AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid AND l.objsubid = 1`, key); err != nil {
		return "", false, fmt.Errorf("read advisory lock holder: %w", Classify(err))
	}
	if len(names) == 0 {
		return "", false, nil
	}
	return names[0], true, nil
}
