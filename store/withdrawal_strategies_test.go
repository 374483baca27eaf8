package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/pressly/goose/v3"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// withdrawalSideTableDiffs are the rows by which each trigger-kept side
// table of withdrawals (migration 00009) differs from what it derives from
// withdrawals, both ways.
var withdrawalSideTableDiffs = map[string]string{
	"withdrawal_strategies": `
		WITH kept AS (
		    SELECT withdrawal_root, strategy_address::text AS strategy, is_completed, created_at_block
		    FROM withdrawal_strategies
		), derived AS (
		    SELECT DISTINCT w.withdrawal_root, s.strategy::text, w.is_completed, w.created_at_block
		    FROM withdrawals w CROSS JOIN LATERAL unnest(w.strategies) AS s(strategy)
		)
		SELECT count(*) FROM ((TABLE kept EXCEPT ALL TABLE derived) UNION ALL (TABLE derived EXCEPT ALL TABLE kept)) d`,
	"withdrawal_pending_buckets": `
		WITH kept AS (
		    SELECT kind, key, bucket, n FROM withdrawal_pending_buckets
		), pending AS (
		    SELECT * FROM withdrawals WHERE NOT is_completed
		), derived AS (
		    SELECT 'all' AS kind, '' AS key, created_at_block / 7200 AS bucket, count(*) AS n
		    FROM pending GROUP BY 3
		    UNION ALL
		    SELECT 'operator', delegated_to, created_at_block / 7200, count(*) FROM pending GROUP BY 2, 3
		    UNION ALL
		    SELECT 'strategy', s.strategy, p.created_at_block / 7200, count(*)
		    FROM pending p CROSS JOIN LATERAL (SELECT DISTINCT unnest(p.strategies) AS strategy) s
		    GROUP BY 2, 3
		)
		SELECT count(*) FROM ((TABLE kept EXCEPT ALL TABLE derived) UNION ALL (TABLE derived EXCEPT ALL TABLE kept)) d`,
}

func checkWithdrawalSideTables(t *testing.T, db *store.DB, when string) {
	t.Helper()
	for table, query := range withdrawalSideTableDiffs {
		var n int
		if err := db.GetContext(context.Background(), &n, query); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: %s differs from what it derives from withdrawals by %d rows", when, table, n)
		}
	}
}

// TestWithdrawalSideTablesStayExact checks withdrawal_strategies and
// withdrawal_pending_buckets against withdrawals after a load, the
// migration's backfill of existing rows, completions applied, a rollback
// (deletes and reopened completions) and a truncation; and the lists and
// counts read from them against the rows.
func TestWithdrawalSideTablesStayExact(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	checkWithdrawalSideTables(t, db, "after the load")

	// The backfill of a database migrated with withdrawals in it.
	provider, err := goose.NewProvider(goose.DialectPostgres, db.DB.DB, store.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	checkWithdrawalSideTables(t, db, "after the migration's backfill")

	// Completions applied by ApplyBatch.
	var roots []string
	if err := db.SelectContext(ctx, &roots, `
		SELECT withdrawal_root FROM withdrawals WHERE NOT is_completed
		ORDER BY created_at_block DESC, withdrawal_root LIMIT 5`); err != nil {
		t.Fatal(err)
	}
	var head uint64
	if err := db.GetContext(ctx, &head, `SELECT max(block_number) FROM withdrawals`); err != nil {
		t.Fatal(err)
	}
	b := chain.Batch{Head: chain.Position{BlockNumber: head + 2, BlockTime: time.Now().UTC()}}
	for i, r := range roots {
		b.WithdrawalsDone = append(b.WithdrawalsDone, chain.WithdrawalCompleted{
			Position: chain.Position{BlockNumber: head + 1, BlockTime: time.Now().UTC(),
				TxHash: fmt.Sprintf("0x%064x", i+1), LogIndex: uint32(i)},
			Root: r,
		})
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyBatch(ctx, &b) }); err != nil {
		t.Fatal(err)
	}
	var open int
	if err := db.GetContext(ctx, &open, `SELECT count(*) FROM withdrawals WHERE withdrawal_root = ANY($1) AND NOT is_completed`, pq.Array(roots)); err != nil {
		t.Fatal(err)
	}
	if len(roots) == 0 || open != 0 {
		t.Fatalf("%d of %d withdrawals still pending after their completion", open, len(roots))
	}
	checkWithdrawalSideTables(t, db, "after completions")
	checkWithdrawalLists(t, db)
	checkHeads(t, db)

	// A rollback of the last third of the history.
	var first, last uint64
	if err := db.QueryRowContext(ctx, `SELECT min(block_number), max(block_number) FROM withdrawals`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.RollbackAfter(ctx, first+(last-first)*2/3) }); err != nil {
		t.Fatal(err)
	}
	checkWithdrawalSideTables(t, db, "after a rollback")
	checkWithdrawalLists(t, db)
	checkHeads(t, db)

	if _, err := db.ExecContext(ctx, `TRUNCATE withdrawals`); err != nil {
		t.Fatal(err)
	}
	checkWithdrawalSideTables(t, db, "after a truncation")
}

// checkHeads checks the queued_withdrawable counts with the head at several
// blocks around the block buckets' boundaries, and without a head.
func checkHeads(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	var head, delay int64
	if err := db.QueryRowContext(ctx, `SELECT head_block, min_withdrawal_delay_blocks FROM service_state`).Scan(&head, &delay); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := db.ExecContext(ctx, `UPDATE service_state SET head_block = $1`, head); err != nil {
			t.Fatal(err)
		}
	}()
	var withdrawable []store.WithdrawalFilter
	for _, f := range countFilters(t, db) {
		if f.Status == store.WithdrawalQueuedWithdrawable {
			withdrawable = append(withdrawable, f)
		}
	}
	x := (head - delay) / 7200 * 7200
	for _, h := range []int64{head, x + delay, x + delay - 1, x + delay + 7199, x + delay - 5000, delay - 10, 0} {
		if _, err := db.ExecContext(ctx, `UPDATE service_state SET head_block = $1`, h); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, db, withdrawable)
	}
}

// checkWithdrawalLists checks pages of the withdrawal list filtered by
// strategy, with every status, shallow and deep, against the plain
// ordering of the rows.
func checkWithdrawalLists(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	var strategies []string
	if err := db.SelectContext(ctx, &strategies, `
		SELECT s FROM withdrawals, unnest(strategies) s GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`); err != nil {
		t.Fatal(err)
	}
	strategies = append(strategies, "0x000000000000000000000000000000000000beef")
	statuses := []store.WithdrawalStatus{"", store.WithdrawalQueued, store.WithdrawalQueuedWithdrawable, store.WithdrawalCompleted}
	for _, s := range strategies {
		for _, st := range statuses {
			f := store.WithdrawalFilter{Strategy: s, Status: st}
			total := bruteCount(t, db, f)
			for _, skip := range []int{0, 7, total / 2, total - 5, total, total + 10, 1000, 1001} {
				skip = max(skip, 0)
				checkPage(t, db, f, skip, `
					SELECT w.withdrawal_root FROM withdrawals w
					WHERE $1 = ANY(w.strategies)
					  AND CASE $2
					      WHEN 'queued' THEN NOT w.is_completed
					      WHEN 'completed' THEN w.is_completed
					      WHEN 'queued_withdrawable' THEN NOT w.is_completed AND EXISTS (
					          SELECT 1 FROM service_state s
					          WHERE w.created_at_block + s.min_withdrawal_delay_blocks <= s.head_block)
					      ELSE true END
					ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
					LIMIT 12 OFFSET $3`, s, string(st), skip)
			}
		}
	}
}
