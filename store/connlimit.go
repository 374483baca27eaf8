package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"
	"golang.org/x/sync/semaphore"
)

// A request of the API may run many queries at once: gqlgen resolves the
// fields of a query concurrently, and each dataloader batch is a query. So
// that one request cannot take every connection of the pool, the server
// gives each request a context made by WithConnLimit, and the store's
// query methods (SelectContext, GetContext, ExecContext, InTx and the few
// methods that read rows themselves) hold one of its permits for as long
// as they use a connection. Work whose context has no limit (the indexer,
// migrations, bulk loads) is not limited.

type connLimitKey struct{}

// WithConnLimit returns a copy of ctx under which the store's methods use
// at most n connections of a pool at once; a query beyond them waits for
// one to be released, or for ctx to end (an error that wraps
// derrors.Timeout when its deadline passed). n < 1 returns ctx unchanged.
// The limit is shared by every goroutine that uses the returned context or
// one derived from it.
func WithConnLimit(ctx context.Context, n int) context.Context {
	if n < 1 {
		return ctx
	}
	return context.WithValue(ctx, connLimitKey{}, semaphore.NewWeighted(int64(n)))
}

// hold takes one connection permit of ctx's limit, waiting for one if
// needed, and returns the function that gives it back. Without a limit it
// returns at once.
func hold(ctx context.Context) (release func(), err error) {
	sem, _ := ctx.Value(connLimitKey{}).(*semaphore.Weighted)
	if sem == nil {
		return func() {}, nil
	}
	if err := sem.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("wait for a database connection: %w", Classify(err))
	}
	return func() { sem.Release(1) }, nil
}

// selectContext runs query and scans its rows into dest (a pointer to a
// slice), as sqlx does, within ctx's connection limit.
func (db *DB) selectContext(ctx context.Context, dest any, query string, args ...any) error {
	release, err := hold(ctx)
	if err != nil {
		return err
	}
	defer release()
	return db.sql.SelectContext(ctx, dest, query, args...)
}

// selectPrepared is selectContext for a hot statement whose best plan does
// not depend on its arguments, such as a batch read by key (`WHERE key =
// ANY($1)`): the statement is prepared once per connection of the keyed
// pool and kept, so PostgreSQL parses it once and, in that pool's
// sessions, plans it once instead of on every execution (see
// withGenericPlans). Planning the valued positions of a page of stakers
// took as long as running it (1.5 ms each under load on the bench data).
// One key's page read in the order of an index on the key and the sort
// columns, in a LATERAL per key, and a feed's page of a time range read
// in the order of the time index have that plan whatever their arguments
// and are kept prepared too, as are an AVS's staker pages without a date,
// an AVS's operator pages, the pages of slashings, the shallow pages of
// all the stakers and the pages of the stakers updated since a date
// (which start in their address bucket). A statement whose plan does depend on them (a page of
// a large list filtered by the request, a deep page, an AVS's stakers
// updated since a date) stays with selectContext. The bench's plan check
// explains the generic plan of every statement kept prepared.
func (db *DB) selectPrepared(ctx context.Context, dest any, query string, args ...any) error {
	return db.selectKept(ctx, false, dest, query, args...)
}

// selectKept runs the kept statement of query within ctx's connection
// limit and scans its rows into dest; ranked lets the rows carry columns
// that dest has no field for (see selectRanked).
func (db *DB) selectKept(ctx context.Context, ranked bool, dest any, query string, args ...any) error {
	stmt, release, err := db.heldStatement(ctx, query)
	if err != nil {
		return err
	}
	defer release()
	if ranked {
		stmt = stmt.Unsafe()
	}
	return stmt.SelectContext(ctx, dest, args...)
}

// heldStatement takes one connection permit of ctx's limit and returns
// the kept statement of query with the function that gives the permit
// back, for as long as the caller reads the statement's rows.
func (db *DB) heldStatement(ctx context.Context, query string) (*sqlx.Stmt, func(), error) {
	release, err := hold(ctx)
	if err != nil {
		return nil, nil, err
	}
	stmt, err := db.prepare(ctx, query)
	if err != nil {
		release()
		return nil, nil, err
	}
	return stmt, release, nil
}

// prepare returns the kept statement of query, preparing it the first
// time.
func (db *DB) prepare(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if stmt, ok := db.prepared.Load(query); ok {
		return stmt.(*sqlx.Stmt), nil
	}
	stmt, err := db.keyed.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if kept, loaded := db.prepared.LoadOrStore(query, stmt); loaded {
		stmt.Close()
		return kept.(*sqlx.Stmt), nil
	}
	return stmt, nil
}

// getContext runs query and scans its one row into dest, as sqlx does,
// within ctx's connection limit.
func (db *DB) getContext(ctx context.Context, dest any, query string, args ...any) error {
	release, err := hold(ctx)
	if err != nil {
		return err
	}
	defer release()
	return db.sql.GetContext(ctx, dest, query, args...)
}

// execContext runs a statement that returns no rows, within ctx's
// connection limit.
func (db *DB) execContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	release, err := hold(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return db.sql.ExecContext(ctx, query, args...)
}
