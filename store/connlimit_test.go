package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// waitFor polls cond every 20 ms until it holds or limit passes, and
// reports whether it held.
func waitFor(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestConnLimit blocks queries on locked tables and counts the connections
// that wait: under WithConnLimit(ctx, 2) never more than 2 of 6 concurrent
// queries hold one (the rest wait for a permit, not for a connection of
// the pool), through the shadowed query methods and through a method that
// reads rows itself; without a limit all 6 do.
func TestConnLimit(t *testing.T) {
	db := storetest.New(t) // a pool of 8
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"limited", 2, 2},
		{"unlimited", 0, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := storetest.LockTables(t, db, "avs", "curated_avs_metadata")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ctx = store.WithConnLimit(ctx, tc.limit)
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for i := range 6 {
				wg.Go(func() {
					var err error
					switch i % 3 {
					case 0:
						_, err = db.AVSByAddresses(ctx, []string{"0x0000000000000000000000000000000000000001"})
					case 1:
						_, err = db.CuratedMetadataByAVS(ctx, []string{"0x0000000000000000000000000000000000000001"})
					default:
						_, err = db.ExecForTest(ctx, `SELECT count(*) FROM avs`)
					}
					errs <- err
				})
			}
			if !waitFor(10*time.Second, func() bool { return storetest.LockWaiters(t, db) >= tc.want }) {
				t.Fatalf("%d queries wait for the lock; want %d", storetest.LockWaiters(t, db), tc.want)
			}
			// Give a query beyond the limit the time to show up.
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if n := storetest.LockWaiters(t, db); n > tc.want {
					t.Fatalf("%d queries hold a connection at once; want at most %d", n, tc.want)
				}
			}
			release()
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("query after the lock was released: %v", err)
				}
			}
		})
	}
}

// TestRequestDeadlineCancelsStatement checks that a statement blocked on a
// lock fails with derrors.Timeout when its context's deadline passes, that
// the cancellation reaches PostgreSQL (the statement stops waiting), and
// that a query waiting for a permit of a connection limit gives up at the
// deadline too.
func TestRequestDeadlineCancelsStatement(t *testing.T) {
	db := storetest.New(t)
	storetest.LockTables(t, db, "avs")
	const deadline = 300 * time.Millisecond

	start := time.Now()
	ctx, cancel := context.WithTimeout(store.WithConnLimit(context.Background(), 1), deadline)
	defer cancel()
	var wg sync.WaitGroup
	var waited error
	wg.Go(func() {
		// Waits for the permit the blocked query below holds.
		time.Sleep(50 * time.Millisecond)
		_, waited = db.CountAVS(ctx, store.AVSFilter{})
	})
	_, err := db.AVSByAddresses(ctx, []string{"0x0000000000000000000000000000000000000001"})
	elapsed := time.Since(start)
	wg.Wait()
	if !errors.Is(err, derrors.Timeout) {
		t.Fatalf("blocked query past its deadline: %v; want a derrors.Timeout error", err)
	}
	t.Logf("blocked query failed after %v: %v", elapsed, err)
	// The timeout error shows the deadline fired (the permit is held
	// throughout); the failure cannot come before it.
	if elapsed < deadline {
		t.Errorf("blocked query failed after %v, before its %v deadline", elapsed, deadline)
	}
	if !errors.Is(waited, derrors.Timeout) {
		t.Errorf("query waiting for a connection permit past the deadline: %v; want a derrors.Timeout error", waited)
	}
	if !waitFor(5*time.Second, func() bool { return storetest.LockWaiters(t, db) == 0 }) {
		t.Errorf("the cancelled statement still waits for the lock on the server")
	}
}

// TestStatementTimeout checks that NewPool's StatementTimeout is set on the
// new pool's connections only, and that a statement past it fails with
// derrors.Timeout.
func TestStatementTimeout(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	limited, err := db.NewPool(ctx, store.PoolConfig{MaxOpenConns: 2, MaxIdleConns: 2, ConnMaxLifetime: time.Hour, StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Close()
	for _, tc := range []struct {
		db   *store.DB
		want string
	}{{db, "0"}, {limited, "200ms"}} {
		var got string
		if err := tc.db.GetForTest(ctx, &got, `SHOW statement_timeout`); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("statement_timeout = %q; want %q", got, tc.want)
		}
	}

	storetest.LockTables(t, db, "avs")
	start := time.Now()
	_, err = limited.AVSByAddresses(ctx, []string{"0x0000000000000000000000000000000000000001"})
	if !errors.Is(err, derrors.Timeout) {
		t.Fatalf("statement past the statement timeout: %v; want a derrors.Timeout error", err)
	}
	// The timeout error shows the statement timeout fired (the table
	// stays locked); the failure cannot come before it.
	if elapsed := time.Since(start); elapsed < 200*time.Millisecond {
		t.Errorf("statement failed after %v, before the 200 ms statement timeout", elapsed)
	} else {
		t.Logf("statement failed after %v: %v", elapsed, err)
	}
	if _, err := limited.ExecForTest(ctx, `SELECT pg_sleep(5)`); !errors.Is(store.Classify(err), derrors.Timeout) {
		t.Errorf("pg_sleep(5) under a 200ms statement timeout: %v", err)
	}
}
