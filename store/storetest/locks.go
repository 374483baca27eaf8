package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/store"
)

// LockTables takes ACCESS EXCLUSIVE locks on tables of db's database, in a
// transaction on a connection of db's pool, so that every statement that
// reads them waits until the returned function (which the test's cleanup
// also calls) rolls the transaction back. Tests of deadlines and timeouts
// use it to make statements hang.
func LockTables(t testing.TB, db *store.DB, tables ...string) (release func()) {
	t.Helper()
	// database/sql rolls a transaction back when the context of its
	// BeginTx ends; this one lasts until release.
	tx, err := SQL(t, db).BeginTxx(context.Background(), nil)
	if err != nil {
		t.Fatalf("storetest: lock %v: %v", tables, err)
	}
	quoted := make([]string, len(tables))
	for i, name := range tables {
		quoted[i] = pq.QuoteIdentifier(name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tx.ExecContext(ctx, `LOCK TABLE `+strings.Join(quoted, ", ")+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		_ = tx.Rollback()
		t.Fatalf("storetest: lock %v: %v", tables, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback() }) }
	t.Cleanup(release)
	return release
}

// LockWaiters returns the number of connections to db's database whose
// statement waits for a lock: those blocked by LockTables, say.
func LockWaiters(t testing.TB, db *store.DB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := SQL(t, db).GetContext(ctx, &n, `
		SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`); err != nil {
		t.Fatalf("storetest: count lock waiters: %v", err)
	}
	return n
}
