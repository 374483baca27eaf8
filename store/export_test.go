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

// KeyedPlansForTest returns how many generic and custom plans PostgreSQL
// made for the statements kept prepared on the keyed pool's connection the
// query gets (the only one, in a pool of one connection).
func (db *DB) KeyedPlansForTest(ctx context.Context) (generic, custom int64, err error) {
	err = db.keyed.QueryRowContext(ctx, `
		SELECT COALESCE(sum(generic_plans), 0), COALESCE(sum(custom_plans), 0)
		FROM pg_prepared_statements`).Scan(&generic, &custom)
	return generic, custom, err
}
