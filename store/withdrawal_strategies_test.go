package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/pressly/goose/v3"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// withdrawalSideTableDiffs are the rows by which each trigger-kept side
// table of withdrawals (migrations 00009 and 00011) differs from what it
// derives from withdrawals, both ways.
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
	"withdrawal_pending_buckets":   bucketDiff("withdrawal_pending_buckets", "NOT is_completed"),
	"withdrawal_completed_buckets": bucketDiff("withdrawal_completed_buckets", "is_completed"),
}

// bucketDiff returns the query counting the rows by which a table of
// withdrawal counts by block bucket differs from counting the withdrawals
// matching status.
func bucketDiff(table, status string) string {
	return `
		WITH kept AS (
		    SELECT kind, key, bucket, n FROM ` + table + `
		), matching AS (
		    SELECT * FROM withdrawals WHERE ` + status + `
		), derived AS (
		    SELECT 'all' AS kind, '' AS key, created_at_block / 7200 AS bucket, count(*) AS n
		    FROM matching GROUP BY 3
		    UNION ALL
		    SELECT 'operator', delegated_to, created_at_block / 7200, count(*) FROM matching GROUP BY 2, 3
		    UNION ALL
		    SELECT 'strategy', s.strategy, m.created_at_block / 7200, count(*)
		    FROM matching m CROSS JOIN LATERAL (SELECT DISTINCT unnest(m.strategies) AS strategy) s
		    GROUP BY 2, 3
		)
		SELECT count(*) FROM ((TABLE kept EXCEPT ALL TABLE derived) UNION ALL (TABLE derived EXCEPT ALL TABLE kept)) d`
}

func checkWithdrawalSideTables(t *testing.T, db *store.DB, when string) {
	t.Helper()
	for table, query := range withdrawalSideTableDiffs {
		var n int
		if err := storetest.SQL(t, db).GetContext(context.Background(), &n, query); err != nil {
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
	provider, err := goose.NewProvider(goose.DialectPostgres, storetest.SQL(t, db).DB, store.Migrations())
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
	if err := storetest.SQL(t, db).SelectContext(ctx, &roots, `
		SELECT withdrawal_root FROM withdrawals WHERE NOT is_completed
		ORDER BY created_at_block DESC, withdrawal_root LIMIT 5`); err != nil {
		t.Fatal(err)
	}
	var head uint64
	if err := storetest.SQL(t, db).GetContext(ctx, &head, `SELECT max(block_number) FROM withdrawals`); err != nil {
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
	if err := storetest.SQL(t, db).GetContext(ctx, &open, `SELECT count(*) FROM withdrawals WHERE withdrawal_root = ANY($1) AND NOT is_completed`, pq.Array(roots)); err != nil {
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
	if err := storetest.SQL(t, db).QueryRowContext(ctx, `SELECT min(block_number), max(block_number) FROM withdrawals`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.RollbackAfter(ctx, first+(last-first)*2/3) }); err != nil {
		t.Fatal(err)
	}
	checkWithdrawalSideTables(t, db, "after a rollback")
	checkWithdrawalLists(t, db)
	checkHeads(t, db)

	if _, err := storetest.SQL(t, db).ExecContext(ctx, `TRUNCATE withdrawals`); err != nil {
		t.Fatal(err)
	}
	checkWithdrawalSideTables(t, db, "after a truncation")
}

// checkHeads checks the queued_withdrawable counts and pages with the head
// at several blocks around the block buckets' boundaries, and without a
// head.
func checkHeads(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	var head, delay int64
	if err := storetest.SQL(t, db).QueryRowContext(ctx, `SELECT head_block, min_withdrawal_delay_blocks FROM service_state`).Scan(&head, &delay); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := storetest.SQL(t, db).ExecContext(ctx, `UPDATE service_state SET head_block = $1`, head); err != nil {
			t.Fatal(err)
		}
	}()
	var withdrawable []store.WithdrawalFilter
	for _, f := range countFilters(t, db) {
		if f.Status == store.WithdrawalQueuedWithdrawable {
			withdrawable = append(withdrawable, f)
		}
	}
	var lists []store.WithdrawalFilter
	for _, f := range listFilters(t, db) {
		if f.Status == store.WithdrawalQueuedWithdrawable {
			lists = append(lists, f)
		}
	}
	x := (head - delay) / 7200 * 7200
	for _, h := range []int64{head, x + delay, x + delay - 1, x + delay + 7199, x + delay - 5000, delay - 10, 0} {
		if _, err := storetest.SQL(t, db).ExecContext(ctx, `UPDATE service_state SET head_block = $1`, h); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, db, withdrawable)
		for _, f := range lists {
			checkListPages(t, db, f)
		}
	}
}

// checkWithdrawalLists checks pages of the withdrawal list, whole and
// filtered by operator and by strategy, with every status, shallow and deep,
// read by walking the index and from the block bucket counts, against the
// plain ordering of the rows.
func checkWithdrawalLists(t *testing.T, db *store.DB) {
	t.Helper()
	for _, f := range listFilters(t, db) {
		checkListPages(t, db, f)
	}
}

// listFilters returns the filters ListWithdrawals reads by block buckets:
// nothing, the two operators and strategies with the most withdrawals and
// one without, with every status.
func listFilters(t *testing.T, db *store.DB) []store.WithdrawalFilter {
	t.Helper()
	ctx := context.Background()
	var operators, strategies []string
	if err := storetest.SQL(t, db).SelectContext(ctx, &operators, `
		SELECT delegated_to FROM withdrawals GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`); err != nil {
		t.Fatal(err)
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &strategies, `
		SELECT s FROM withdrawals, unnest(strategies) s GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`); err != nil {
		t.Fatal(err)
	}
	operators = append(operators, "0x000000000000000000000000000000000000dead")
	strategies = append(strategies, "0x000000000000000000000000000000000000beef")
	var out []store.WithdrawalFilter
	for _, st := range []store.WithdrawalStatus{"", store.WithdrawalQueued, store.WithdrawalQueuedWithdrawable, store.WithdrawalCompleted} {
		out = append(out, store.WithdrawalFilter{Status: st})
		for _, o := range operators {
			out = append(out, store.WithdrawalFilter{DelegatedTo: o, Status: st})
		}
		for _, s := range strategies {
			out = append(out, store.WithdrawalFilter{Strategy: s, Status: st})
		}
	}
	return out
}

// plainPage selects one page of the withdrawal list by plain OFFSET: $1 the
// operator, $2 the strategy, $3 the status (” for any), $4 the skip.
const plainPage = `
	SELECT w.withdrawal_root FROM withdrawals w
	WHERE ($1 = '' OR w.delegated_to = $1)
	  AND ($2 = '' OR $2 = ANY(w.strategies))
	  AND CASE $3
	      WHEN 'queued' THEN NOT w.is_completed
	      WHEN 'completed' THEN w.is_completed
	      WHEN 'queued_withdrawable' THEN NOT w.is_completed AND EXISTS (
	          SELECT 1 FROM service_state s
	          WHERE w.created_at_block + s.min_withdrawal_delay_blocks <= s.head_block)
	      ELSE true END
	ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
	LIMIT 12 OFFSET $4`

// checkListPages checks pages of f's list at many skips (the first rows of
// block buckets and their neighbours among them), read both ways, against
// plainPage.
func checkListPages(t *testing.T, db *store.DB, f store.WithdrawalFilter) {
	t.Helper()
	ctx := context.Background()
	total := bruteCount(t, db, f)
	// The positions of the first rows of block buckets in the list.
	var starts []int
	if err := storetest.SQL(t, db).SelectContext(ctx, &starts, `
		SELECT pos FROM (
		    SELECT row_number() OVER o - 1 AS pos,
		           w.created_at_block / 7200 AS bucket, lag(w.created_at_block / 7200) OVER o AS prev
		    FROM withdrawals w
		    WHERE w.withdrawal_root = ANY(ARRAY(`+strings.Replace(plainPage, "LIMIT 12 OFFSET $4", "", 1)+`))
		    WINDOW o AS (ORDER BY w.created_at_block DESC, w.withdrawal_root DESC)
		) b
		WHERE prev IS DISTINCT FROM bucket
		ORDER BY pos`, f.DelegatedTo, f.Strategy, string(f.Status)); err != nil {
		t.Fatal(err)
	}
	skips := []int{0, 1, 7, 11, 12, total / 3, total / 2, total - 13, total - 12, total - 1, total, total + 10, 1000, 1001}
	for i, s := range starts {
		if i%max(1, len(starts)/6) == 0 || i == len(starts)-1 {
			skips = append(skips, s-1, s, s+1, s-12, s+11)
		}
	}
	for _, bucketSkip := range []int{0, 1 << 30} {
		restore := store.SetBucketSkip(bucketSkip)
		for _, skip := range skips {
			if skip >= 0 {
				checkPage(t, db, f, skip, plainPage, f.DelegatedTo, f.Strategy, string(f.Status), skip)
			}
		}
		restore()
	}
}
