package store

import (
	"context"
	"database/sql"
)

// ExecForTest runs a statement through db's pool, within ctx's connection
// limit, for the external tests of the pool's own behaviour (connection
// limits, session settings).
func (db *DB) ExecForTest(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return db.execContext(ctx, query, args...)
}

// GetForTest is ExecForTest for a query of one row scanned into dest.
func (db *DB) GetForTest(ctx context.Context, dest any, query string, args ...any) error {
	return db.getContext(ctx, dest, query, args...)
}

// AVSDaysSQL is AVSDays' statement, for plans in tests.
var AVSDaysSQL = avsDaysSQL
