package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/demo"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// maintainedWorld returns a database holding a generated world with a few
// thousand withdrawals, queued and completed, and a few hundred rewards
// submissions: enough rows for the trigger-maintained aggregates to be
// checked against the rows.
func maintainedWorld(t *testing.T) *store.DB {
	t.Helper()
	return storetest.Template(t, "maintained_aggregates", func(ctx context.Context, db *store.DB) error {
		sc := demo.BenchScale
		sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 90, 8, 40, 6000, 300
		opts := demo.BenchOptions{Options: demo.Options{Now: time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC), Seed: 4, Network: chain.Networks["mainnet"]}, Scale: sc}
		return demo.SeedBench(ctx, db, opts, nil)
	})
}

// bruteCount counts the withdrawals matching f row by row.
func bruteCount(t *testing.T, db *store.DB, f store.WithdrawalFilter) int {
	t.Helper()
	query := `SELECT count(*) FROM withdrawals w WHERE true`
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if f.Staker != "" {
		query += " AND w.staker_address = " + arg(f.Staker)
	}
	if f.DelegatedTo != "" {
		query += " AND w.delegated_to = " + arg(f.DelegatedTo)
	}
	if f.Strategy != "" {
		query += " AND " + arg(f.Strategy) + " = ANY(w.strategies)"
	}
	switch f.Status {
	case store.WithdrawalQueued:
		query += " AND NOT w.is_completed"
	case store.WithdrawalCompleted:
		query += " AND w.is_completed"
	case store.WithdrawalQueuedWithdrawable:
		query += ` AND NOT w.is_completed AND EXISTS (SELECT 1 FROM service_state s
		           WHERE w.created_at_block + s.min_withdrawal_delay_blocks <= s.head_block)`
	}
	var n int
	if err := storetest.SQL(t, db).GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// countFilters returns filters covering every way CountWithdrawals counts:
// from the maintained totals (nothing, an operator or a strategy, with
// each status) and row by row (a staker, an operator with a strategy).
func countFilters(t *testing.T, db *store.DB) []store.WithdrawalFilter {
	t.Helper()
	ctx := context.Background()
	var keys struct {
		Operators  []string
		Strategies []string
		Stakers    []string
	}
	for _, q := range []struct {
		dst   *[]string
		query string
	}{
		{&keys.Operators, `SELECT delegated_to FROM withdrawals GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 3`},
		{&keys.Strategies, `SELECT s FROM withdrawals, unnest(strategies) s GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 3`},
		{&keys.Stakers, `SELECT staker_address FROM withdrawals GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`},
	} {
		if err := storetest.SQL(t, db).SelectContext(ctx, q.dst, q.query); err != nil {
			t.Fatal(err)
		}
	}
	// Addresses without withdrawals count 0.
	keys.Operators = append(keys.Operators, "0x000000000000000000000000000000000000dead")
	keys.Strategies = append(keys.Strategies, "0x000000000000000000000000000000000000beef")
	statuses := []store.WithdrawalStatus{"", store.WithdrawalQueued, store.WithdrawalQueuedWithdrawable, store.WithdrawalCompleted}
	var out []store.WithdrawalFilter
	for _, st := range statuses {
		out = append(out, store.WithdrawalFilter{Status: st})
		for _, o := range keys.Operators {
			out = append(out, store.WithdrawalFilter{DelegatedTo: o, Status: st})
		}
		for _, s := range keys.Strategies {
			out = append(out, store.WithdrawalFilter{Strategy: s, Status: st})
		}
		out = append(out,
			store.WithdrawalFilter{Staker: keys.Stakers[0], Status: st},
			store.WithdrawalFilter{DelegatedTo: keys.Operators[0], Strategy: keys.Strategies[0], Status: st})
	}
	return out
}

func checkCounts(t *testing.T, db *store.DB, filters []store.WithdrawalFilter) {
	t.Helper()
	for _, f := range filters {
		got, err := db.CountWithdrawals(context.Background(), f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		if want := bruteCount(t, db, f); got != want {
			t.Errorf("CountWithdrawals(%+v) = %d; counting the rows gives %d", f, got, want)
		}
	}
}

// TestWithdrawalCountsStayExact checks the maintained withdrawal counts
// against counting rows: after a load (inserts and completions), after a
// rollback (deletes and reopened completions) and after a truncation.
func TestWithdrawalCountsStayExact(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	filters := countFilters(t, db)
	var queued, completed int
	if err := storetest.SQL(t, db).GetContext(ctx, &queued, `SELECT count(*) FROM withdrawals WHERE NOT is_completed`); err != nil {
		t.Fatal(err)
	}
	if err := storetest.SQL(t, db).GetContext(ctx, &completed, `SELECT count(*) FROM withdrawals WHERE is_completed`); err != nil {
		t.Fatal(err)
	}
	if queued == 0 || completed == 0 {
		t.Fatalf("the world has %d queued and %d completed withdrawals; want both", queued, completed)
	}
	checkCounts(t, db, filters)

	// Roll back the last third of the history: withdrawals queued after the
	// block are deleted, those completed after it are queued again.
	var first, last uint64
	if err := storetest.SQL(t, db).QueryRowContext(ctx, `SELECT min(block_number), max(block_number) FROM withdrawals`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.RollbackAfter(ctx, first+(last-first)*2/3) }); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, filters)

	if _, err := storetest.SQL(t, db).ExecContext(ctx, `TRUNCATE withdrawals`); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, filters[:1])
}

// TestDeepWithdrawalPages checks that pages read by keyset (deep skips) are
// exactly the pages of the plain ordering.
func TestDeepWithdrawalPages(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	var total int
	if err := storetest.SQL(t, db).GetContext(ctx, &total, `SELECT count(*) FROM withdrawals`); err != nil {
		t.Fatal(err)
	}
	if total < 1100 {
		t.Fatalf("the world has %d withdrawals; the test needs more than 1100", total)
	}
	var operator string
	if err := storetest.SQL(t, db).GetContext(ctx, &operator, `SELECT delegated_to FROM withdrawals GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	filters := []store.WithdrawalFilter{{}, {Status: store.WithdrawalQueued}, {Status: store.WithdrawalCompleted}, {DelegatedTo: operator}}
	for _, f := range filters {
		for _, skip := range []int{998, 999, 1000, 1001, 1050, total - 5, total, total + 10} {
			checkPage(t, db, f, skip, `
				SELECT w.withdrawal_root FROM withdrawals w
				WHERE ($1 = '' OR w.delegated_to = $1)
				  AND ($2 = '' OR w.is_completed = ($2 = 'completed'))
				ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
				LIMIT 12 OFFSET $3`, f.DelegatedTo, string(f.Status), skip)
		}
	}
}

// checkPage reports how the page of ListWithdrawals(f, skip, take 12)
// differs from the roots that wantQuery selects with args.
func checkPage(t *testing.T, db *store.DB, f store.WithdrawalFilter, skip int, wantQuery string, args ...any) {
	t.Helper()
	ctx := context.Background()
	got, err := db.ListWithdrawals(ctx, f, store.Page{Skip: skip, Take: 12})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := storetest.SQL(t, db).SelectContext(ctx, &want, wantQuery, args...); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%+v skip %d: %d rows; want %d", f, skip, len(got), len(want))
		return
	}
	for i := range got {
		if got[i].WithdrawalRoot != want[i] {
			t.Errorf("%+v skip %d: row %d is %s; want %s", f, skip, i, got[i].WithdrawalRoot, want[i])
			return
		}
	}
}
