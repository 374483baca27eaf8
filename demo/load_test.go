package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

func seedDemo(t *testing.T, opts Options) *store.DB {
	t.Helper()
	db := storetest.New(t)
	start := time.Now()
	if err := SeedDemo(context.Background(), db, opts); err != nil {
		t.Fatal(err)
	}
	t.Logf("demo (seed %d) loaded in %s", opts.Seed, time.Since(start).Round(time.Millisecond))
	return db
}

// count runs a query returning one integer.
func count(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	return n
}

// dump hashes every table of the database, each row as text, in row order.
func dump(t *testing.T, db *store.DB) string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	err := db.SelectContext(ctx, &tables, `
		SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'goose_db_version'
		ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 20 {
		t.Fatalf("only %d tables: %v", len(tables), tables)
	}
	h := sha256.New()
	for _, table := range tables {
		var rows []string
		if err := db.SelectContext(ctx, &rows, fmt.Sprintf(`SELECT t::text FROM %q t ORDER BY 1`, table)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", table, len(rows))
		for _, r := range rows {
			h.Write([]byte(r))
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSeedDemo loads the demo and checks that the state the store derived
// from it is consistent, then (unless -short) that loading the same options
// into another database gives byte-identical tables and another seed does
// not.
func TestSeedDemo(t *testing.T) {
	opts := Options{Now: testNow, Seed: 1}
	db := seedDemo(t, opts)
	checkDemoState(t, db)

	if err := SeedDemo(context.Background(), db, opts); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("seeding a loaded database: %v, want ErrNotEmpty", err)
	}

	if testing.Short() {
		return
	}
	a := dump(t, db)
	if b := dump(t, seedDemo(t, opts)); a != b {
		t.Fatalf("two loads of the same options differ: %s vs %s", a, b)
	}
	if c := dump(t, seedDemo(t, Options{Now: testNow, Seed: 2})); c == a {
		t.Fatal("seeds 1 and 2 loaded identical databases")
	}
}

func checkDemoState(t *testing.T, db *store.DB) {
	t.Helper()
	w := mustDemo(t)

	zero := func(what, query string, args ...any) {
		t.Helper()
		if n := count(t, db, query, args...); n != 0 {
			t.Errorf("%s: %d", what, n)
		}
	}
	zero("operator shares differing from Σ delegated staker shares", `
		SELECT count(*) FROM (
		    SELECT s.operator_address, ss.strategy_address, sum(ss.shares) AS shares
		    FROM stakers s JOIN staker_shares ss ON ss.staker_address = s.address
		    WHERE s.operator_address IS NOT NULL AND ss.shares > 0
		    GROUP BY 1, 2
		) x FULL JOIN operator_shares os
		  ON os.operator_address = x.operator_address AND os.strategy_address = x.strategy_address
		WHERE x.shares IS DISTINCT FROM os.shares`)
	zero("operator shares differing from the SHARES_INCREASED − SHARES_DECREASED ledger", `
		SELECT count(*) FROM (
		    SELECT operator_address, strategy_address,
		           sum(CASE WHEN type = 'SHARES_INCREASED' THEN shares ELSE -shares END) AS shares
		    FROM delegation_events WHERE type IN ('SHARES_INCREASED', 'SHARES_DECREASED')
		    GROUP BY 1, 2
		) l FULL JOIN operator_shares os USING (operator_address, strategy_address)
		WHERE COALESCE(l.shares, 0) <> COALESCE(os.shares, 0)`)
	zero("negative staker shares", `SELECT count(*) FROM staker_shares WHERE shares < 0`)
	zero("operators whose totalAvs is not their active registrations", `
		SELECT count(*) FROM operators o
		WHERE total_avs <> (SELECT count(*) FROM avs_operators WHERE operator_address = o.address AND is_active)`)
	zero("operators whose totalStakers is not their delegated stakers", `
		SELECT count(*) FROM operators o
		WHERE total_stakers <> (SELECT count(*) FROM stakers WHERE operator_address = o.address)`)
	zero("AVS whose totalOperators is not their active registrations", `
		SELECT count(*) FROM avs a
		WHERE total_operators <> (SELECT count(*) FROM avs_operators WHERE avs_address = a.address AND is_active)`)
	zero("completed withdrawals completed before they were queued or before the delay", `
		SELECT count(*) FROM withdrawals w, service_state s
		WHERE is_completed AND (completed_block < start_block + s.min_withdrawal_delay_blocks
		                        OR (completed_block, completed_log_index) <= (block_number, log_index))`)
	zero("withdrawals of a delegated staker without a SHARES_DECREASED in their transaction", `
		SELECT count(*) FROM withdrawals w
		WHERE delegated_to <> '0x0000000000000000000000000000000000000000'
		  AND NOT EXISTS (SELECT 1 FROM delegation_events d
		                  WHERE d.tx_hash = w.tx_hash AND d.type = 'SHARES_DECREASED' AND d.staker_address = w.staker_address)`)

	within := func(what string, got, lo, hi int) {
		t.Helper()
		if got < lo || got > hi {
			t.Errorf("%s = %d, want %d..%d", what, got, lo, hi)
		}
	}
	within("AVS", count(t, db, `SELECT count(*) FROM avs`), 40, 40)
	within("operators", count(t, db, `SELECT count(*) FROM operators`), 400, 400)
	within("stakers", count(t, db, `SELECT count(*) FROM stakers`), 20_000, 21_000)
	within("curated metadata", count(t, db, `SELECT count(*) FROM curated_avs_metadata`), len(w.Curated), len(w.Curated))
	within("invisible AVS", count(t, db, `SELECT count(*) FROM curated_avs_metadata WHERE NOT is_visible`), 2, 10)
	within("head block", count(t, db, `SELECT head_block FROM service_state`), int(w.Head.BlockNumber), int(w.Head.BlockNumber))
	within("strategies without shares", count(t, db, `SELECT count(*) FROM strategies WHERE total_shares = 0`), 0, 0)
	within("AVS with a positive APY", count(t, db, `SELECT count(*) FROM avs WHERE max_apy > 0`), 15, 40)
	within("daily snapshots", count(t, db, `SELECT count(*) FROM daily_snapshots`), 400, 402)

	head := `(SELECT head_block FROM service_state)`
	delay := `(SELECT min_withdrawal_delay_blocks FROM service_state)`
	within("completed withdrawals", count(t, db, `SELECT count(*) FROM withdrawals WHERE is_completed`), 5_000, 30_000)
	within("withdrawable withdrawals", count(t, db,
		`SELECT count(*) FROM withdrawals WHERE NOT is_completed AND start_block + `+delay+` <= `+head), 500, 10_000)
	within("withdrawals not yet withdrawable", count(t, db,
		`SELECT count(*) FROM withdrawals WHERE NOT is_completed AND start_block + `+delay+` > `+head), 300, 10_000)
	for _, typ := range []string{"DELEGATION", "UNDELEGATION", "SHARES_INCREASED", "SHARES_DECREASED"} {
		within(typ+" in the last 7 days", count(t, db,
			`SELECT count(*) FROM delegation_events WHERE type = $1 AND block_time > $2`, typ, testNow.Add(-7*24*time.Hour)), 20, 100_000)
	}
	within("rewards submissions in the last 7 days", count(t, db,
		`SELECT count(*) FROM rewards_submissions WHERE block_time > $1`, testNow.Add(-7*24*time.Hour)), 3, 100)

	var tvl string
	if err := db.GetContext(context.Background(), &tvl, `SELECT round(tvl_eth)::text FROM daily_snapshots ORDER BY day DESC LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	t.Logf("TVL at now: %s ETH", tvl)
}

func TestSeedBenchSmall(t *testing.T) {
	sc := BenchScale
	sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 60, 8, 40, 2_000, 100
	db := storetest.New(t)
	var progress bytes.Buffer
	opts := BenchOptions{Options: Options{Now: testNow, Seed: 3}, Scale: sc}
	if err := SeedBench(context.Background(), db, opts, &progress); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(progress.String()))
	if !strings.Contains(progress.String(), "day 60/60") || !strings.Contains(progress.String(), "loaded") {
		t.Errorf("progress output:\n%s", progress.String())
	}

	// The streamed load holds exactly the events of the in-memory world.
	w, err := GenerateScale(opts.Options, sc)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Counts()
	if n := count(t, db, `SELECT count(*) FROM delegation_events`); n != c.Delegations {
		t.Errorf("%d delegation events stored, generated %d", n, c.Delegations)
	}
	if n := count(t, db, `SELECT count(*) FROM withdrawals`); n != c.WithdrawalsQueued {
		t.Errorf("%d withdrawals stored, generated %d", n, c.WithdrawalsQueued)
	}
	if n := count(t, db, `SELECT count(*) FROM withdrawals WHERE is_completed`); n != c.WithdrawalsCompleted {
		t.Errorf("%d completed withdrawals stored, generated %d", n, c.WithdrawalsCompleted)
	}
	if n := count(t, db, `SELECT head_block FROM service_state`); n != int(w.Head.BlockNumber) {
		t.Errorf("head %d, want %d", n, w.Head.BlockNumber)
	}
	if n := count(t, db, `SELECT count(*) FROM daily_snapshots`); n < sc.Days {
		t.Errorf("%d daily snapshots", n)
	}
}

// TestSeedBenchMatchesApplyBatch checks the bulk path: SeedBench
// (a store.BulkApplier) leaves every table exactly as applying the
// same days with ApplyBatch, a few days per transaction, does.
func TestSeedBenchMatchesApplyBatch(t *testing.T) {
	ctx := context.Background()
	sc := BenchScale
	sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 90, 8, 40, 3_000, 150
	opts := Options{Now: testNow, Seed: 6}.withDefaults()

	bulk := storetest.New(t)
	if err := SeedBench(ctx, bulk, BenchOptions{Options: opts, Scale: sc}, nil); err != nil {
		t.Fatal(err)
	}

	w, err := GenerateScale(opts, sc)
	if err != nil {
		t.Fatal(err)
	}
	normal := storetest.New(t)
	if err := prepare(ctx, normal, opts.Network.Name); err != nil {
		t.Fatal(err)
	}
	if err := normal.InTx(ctx, func(tx *store.Tx) error { return writeReference(ctx, tx, w.Reference) }); err != nil {
		t.Fatal(err)
	}
	const daysPerTx = 7
	for i := 0; i < len(w.Batches); i += daysPerTx {
		err := normal.InTx(ctx, func(tx *store.Tx) error {
			for j := i; j < min(i+daysPerTx, len(w.Batches)); j++ {
				if err := tx.ApplyBatch(ctx, &w.Batches[j]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := normal.InTx(ctx, func(tx *store.Tx) error { return finish(ctx, tx, w.Reference, w.Head, opts.Now) }); err != nil {
		t.Fatal(err)
	}

	if n := count(t, bulk, `SELECT count(*) FROM staker_shares`); n < 1000 {
		t.Fatalf("only %d staker shares", n)
	}
	if a, b := dump(t, bulk), dump(t, normal); a != b {
		t.Errorf("bulk load and ApplyBatch differ: %s vs %s", a, b)
	}
}
