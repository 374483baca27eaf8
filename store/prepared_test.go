package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestPreparedStatements checks the statements kept prepared: each run
// counts as one statement whichever connection it gets, preparing does
// not count, they answer like the first run on every connection of the
// pool, and they are prepared again on the connections that replace
// connections the server ended.
func TestPreparedStatements(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var stakers []string
	if err := sql.SelectContext(ctx, &stakers, `
		SELECT staker_address FROM staker_shares WHERE shares > 0
		GROUP BY staker_address ORDER BY staker_address LIMIT 20`); err != nil {
		t.Fatal(err)
	}
	first, err := db.StakerSharesByStakers(ctx, stakers)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < len(stakers) {
		t.Fatalf("%d positions of %d stakers", len(first), len(stakers))
	}
	same := func(what string, got []store.StrategyShares) {
		t.Helper()
		if len(got) != len(first) {
			t.Fatalf("%s: %d positions; the first run had %d", what, len(got), len(first))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], first[i]) {
				t.Fatalf("%s: position %d is %+v; the first run had %+v", what, i, got[i], first[i])
			}
		}
	}
	// Eight runs at once take several connections, most of which have
	// not prepared the statement yet.
	before := db.StatementCount()
	results := make(chan []store.StrategyShares, 8)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := db.StakerSharesByStakers(ctx, stakers)
			errs <- err
			results <- got
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		same("concurrent run", <-results)
	}
	if n := db.StatementCount() - before; n != 8 {
		t.Errorf("8 runs counted %d statements; want 8", n)
	}
	// The server ends every connection of the handle: the next runs get
	// new connections and prepare the statement on them.
	if _, err := sql.ExecContext(ctx, `
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := db.StakerSharesByStakers(ctx, stakers)
		if err != nil {
			t.Fatalf("after the server ended the connections: %v", err)
		}
		same("run after the connections ended", got)
	}
}

// TestPreparedStatementsArePlannedOnce checks that the reads by key kept
// prepared (a staker's positions, a page of its events in a date range and
// of its withdrawals, with their totals, a page of the withdrawal events
// feed with its total, and an AVS's pages of stakers) are planned once for all their
// runs, even for one key, where PostgreSQL's own choice would plan every
// run again; and that the pool of the other statements keeps PostgreSQL's
// choice.
func TestPreparedStatementsArePlannedOnce(t *testing.T) {
	main := maintainedWorld(t)
	ctx := context.Background()
	db, err := main.NewPool(ctx, store.PoolConfig{MaxOpenConns: 1, MaxIdleConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var staker string
	if err := storetest.SQL(t, main).GetContext(ctx, &staker, `
		SELECT staker_address FROM staker_shares WHERE shares > 0
		ORDER BY staker_address LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	keys := []string{staker}
	var avs string
	if err := storetest.SQL(t, main).GetContext(ctx, &avs, `
		SELECT avs_address FROM avs_operators WHERE is_active
		ORDER BY avs_address LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	end := time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC)
	events := store.DelegationEventFilter{Start: end.AddDate(0, 0, -30), End: end}
	reads := []func(i int) error{
		func(int) error {
			got, err := db.StakerSharesByStakers(ctx, keys)
			if err == nil && len(got) == 0 {
				t.Fatalf("no positions of staker %s", staker)
			}
			return err
		},
		func(i int) error {
			f := events
			f.Start = f.Start.AddDate(0, 0, -i) // another range each run
			_, err := db.ListDelegationEventsByStakers(ctx, keys, f, store.Page{Skip: i, Take: 10})
			return err
		},
		func(int) error { _, err := db.CountDelegationEventsByStakers(ctx, keys, events); return err },
		func(i int) error {
			_, err := db.ListWithdrawalsByStakers(ctx, keys, "", store.Page{Skip: i, Take: 10})
			return err
		},
		func(int) error { _, err := db.CountWithdrawalsByStakers(ctx, keys, ""); return err },
		func(i int) error {
			_, err := db.ListWithdrawalEvents(ctx, store.WithdrawalEventFilter{Start: events.Start, End: events.End}, store.Page{Skip: i, Take: 10}, true)
			return err
		},
		func(int) error {
			_, err := db.CountWithdrawalEvents(ctx, store.WithdrawalEventFilter{Start: events.Start, End: events.End})
			return err
		},
		func(i int) error {
			// The first page, then later ones, which start at an operator.
			_, err := db.ListAVSStakers(ctx, []string{avs}, store.StakerFilter{}, store.Page{Skip: i, Take: 10})
			return err
		},
	}
	const runs = 8
	for i := range runs {
		for _, read := range reads {
			if err := read(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	generic, custom, err := db.KeyedPlansForTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(runs * len(reads)); custom != 0 || generic != want {
		t.Errorf("%d runs of %d reads made %d generic and %d custom plans; want %d generic, none custom", runs, len(reads), generic, custom, want)
	}
	var mode string
	if err := db.GetForTest(ctx, &mode, `SHOW plan_cache_mode`); err != nil {
		t.Fatal(err)
	}
	if mode != "auto" {
		t.Errorf("the pool of the other statements has plan_cache_mode %q, want auto", mode)
	}
}

// TestStakerPositionsWithoutValues checks that StakerPositionsByStakers
// answers StakerSharesByStakers's positions without what comes from their
// strategies, for stakers with positions in several strategies.
func TestStakerPositionsWithoutValues(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	var stakers []string
	if err := storetest.SQL(t, db).SelectContext(ctx, &stakers, `
		SELECT staker_address FROM staker_shares WHERE shares > 0
		GROUP BY staker_address ORDER BY count(*) DESC, staker_address LIMIT 30`); err != nil {
		t.Fatal(err)
	}
	want, err := db.StakerSharesByStakers(ctx, stakers)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.StakerPositionsByStakers(ctx, stakers)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= len(stakers) {
		t.Fatalf("%d positions of %d stakers: the test needs stakers with several", len(want), len(stakers))
	}
	if len(got) != len(want) {
		t.Fatalf("%d positions without values; %d with them", len(got), len(want))
	}
	for i := range want {
		w := want[i]
		w.Symbol, w.Kind, w.UnderlyingToken, w.UnderlyingValue, w.ETHValue = "", "", nil, "", ""
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("position %d without values is %+v; want %+v", i, got[i], w)
		}
	}
}
