package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// seedDemos loads the demo with each of opts into a database of its own,
// all at once: the loads are the slowest part of the package's tests, and
// each waits on PostgreSQL part of the time.
func seedDemos(t *testing.T, opts ...Options) []*store.DB {
	t.Helper()
	dbs := make([]*store.DB, len(opts))
	for i := range opts {
		dbs[i] = storetest.New(t)
	}
	start := time.Now()
	var g errgroup.Group
	for i, o := range opts {
		g.Go(func() error { return SeedDemo(context.Background(), dbs[i], o) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d demo loads in %s", len(opts), time.Since(start).Round(time.Millisecond))
	return dbs
}

// count runs a query returning one integer.
func count(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := storetest.SQL(t, db).GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	return n
}

// dump hashes every table of the database, each row as text, in row order.
func dump(t *testing.T, db *store.DB) string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	err := storetest.SQL(t, db).SelectContext(ctx, &tables, `
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
		if err := storetest.SQL(t, db).SelectContext(ctx, &rows, fmt.Sprintf(`SELECT t::text FROM %q t ORDER BY 1`, table)); err != nil {
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
// into another database gives byte-identical tables. That another seed
// gives another world is TestGenerateIsDeterministic's to check; a load is
// a function of its world.
func TestSeedDemo(t *testing.T) {
	opts := Options{Now: testNow, Seed: 1}
	all := []Options{opts}
	if !testing.Short() {
		all = append(all, opts)
	}
	dbs := seedDemos(t, all...)
	db := dbs[0]
	checkDemoState(t, db)

	if err := SeedDemo(context.Background(), db, opts); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("seeding a loaded database: %v, want ErrNotEmpty", err)
	}

	if testing.Short() {
		return
	}
	a := dump(t, db)
	if b := dump(t, dbs[1]); a != b {
		t.Fatalf("two loads of the same options differ: %s vs %s", a, b)
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
	checkOperatorShares(t, db, w)
	zero("operator shares differing from the SHARES_INCREASED − SHARES_DECREASED − slashed ledger", `
		SELECT count(*) FROM (
		    SELECT operator_address, strategy_address, sum(shares) AS shares FROM (
		        SELECT operator_address, strategy_address,
		               CASE WHEN type = 'SHARES_INCREASED' THEN shares ELSE -shares END AS shares
		        FROM delegation_events WHERE type IN ('SHARES_INCREASED', 'SHARES_DECREASED')
		        UNION ALL
		        SELECT operator_address, strategy_address, -shares FROM slashed_operator_shares
		    ) e
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

	// The slashing era.
	within("operator sets", count(t, db, `SELECT count(*) FROM operator_sets`), 10, 40)
	within("operator set members", count(t, db, `SELECT count(*) FROM operator_set_members WHERE is_active`), 100, 2000)
	within("operator set strategies", count(t, db, `SELECT count(*) FROM operator_set_strategies`), 10, 120)
	within("allocations", count(t, db, `SELECT count(*) FROM allocations WHERE magnitude > 0`), 100, 3000)
	within("deallocations pending at the head", count(t, db,
		`SELECT count(*) FROM allocations WHERE pending_magnitude < magnitude AND effect_block > `+head), 1, 1000)
	within("operators with a max magnitude below WAD", count(t, db,
		`SELECT count(DISTINCT operator_address) FROM operator_max_magnitudes WHERE max_magnitude < 1000000000000000000`), 3, 12)
	within("slashings", count(t, db, `SELECT count(*) FROM slashings`), 3, 12)
	within("slashings without a slashed allocation in their transaction", count(t, db, `
		SELECT count(*) FROM slashings s
		WHERE NOT EXISTS (SELECT 1 FROM allocation_events a
		                  WHERE a.tx_hash = s.tx_hash AND a.operator_address = s.operator_address
		                    AND a.avs_address = s.avs_address AND a.operator_set_id = s.operator_set_id
		                    AND a.effect_block = s.block_number)`), 0, 0)
	within("positions whose deposit and withdrawable shares differ", count(t, db,
		`SELECT count(*) FROM staker_positions WHERE deposit_shares <> withdrawable_shares`), 50, 20_000)
	within("positions with a deposit scaling factor above WAD", count(t, db,
		`SELECT count(*) FROM staker_shares WHERE deposit_scaling_factor > 1000000000000000000`), 50, 20_000)
	within("stakers with a beacon-chain slashing factor below WAD", count(t, db,
		`SELECT count(*) FROM stakers WHERE beacon_slashing_factor < 1000000000000000000`), 50, 5000)
	within("slashing-era withdrawals with scaled shares", count(t, db,
		`SELECT count(*) FROM withdrawals WHERE scaled_shares IS NOT NULL`), 500, 10_000)
	for _, kind := range []string{"operator_directed_avs", "operator_directed_opset"} {
		within(kind+" submissions with operator rows", count(t, db, `
			SELECT count(*) FROM rewards_submissions r
			WHERE kind = $1 AND EXISTS (SELECT 1 FROM rewards_submission_operators o
			                            WHERE o.rewards_submission_hash = r.rewards_submission_hash)`, kind), 3, 100)
	}
	within("rewards submissions for all earners", count(t, db, `SELECT count(*) FROM rewards_submissions WHERE kind = 'for_all_earners'`), 2, 10)
	within("protocol events", count(t, db, `SELECT count(DISTINCT name) FROM protocol_events`), 4, 4)
	checkPositions(t, db, mustDemoGenerator(t))

	var tvl string
	if err := storetest.SQL(t, db).GetContext(context.Background(), &tvl, `SELECT round(tvl_eth)::text FROM daily_snapshots ORDER BY day DESC LIMIT 1`); err != nil {
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
	for _, table := range []string{"operator_sets", "allocation_events", "slashings", "deposit_scaling_factor_events",
		"beacon_slashing_factor_events", "rewards_submission_operators", "protocol_events"} {
		if n := count(t, bulk, `SELECT count(*) FROM `+table); n == 0 {
			t.Errorf("no rows in %s", table)
		}
	}
	if a, b := dump(t, bulk), dump(t, normal); a != b {
		t.Errorf("bulk load and ApplyBatch differ: %s vs %s", a, b)
	}
}

// checkOperatorShares compares every operator's shares with what its
// delegated stakers can withdraw (the withdrawable_shares of
// staker_positions). They are equal where neither a slash nor a
// beacon-chain slashing factor touched the operator's shares in the
// strategy. Elsewhere the contracts' rounding leaves them apart: each
// mulWad rounds down, and the deposit scaling factor, an 18-decimal
// fixed-point number, can be a unit off after every deposit or delegation,
// which is worth up to shares / 1e18 wei of a position (thousands of wei
// for a large pod), so the tolerance of a pair is the rounding budget the
// replay of the stream accumulates for it (see replay.allow): 4 + 4 ×
// position / 1e18 wei per slashing-era operation on a delegated position,
// plus a wei per delegated staker per slash.
func checkOperatorShares(t *testing.T, db *store.DB, w *World) {
	t.Helper()
	r := newReplay(chain.Networks["mainnet"], w)
	for i := range w.Batches {
		if err := r.apply(&w.Batches[i], clocks["mainnet"], testNow); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if err := r.finish(); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Operator string `db:"operator_address"`
		Strategy string `db:"strategy_address"`
		Diff     string `db:"diff"`
		Rounding bool   `db:"rounding"`
	}
	err := storetest.SQL(t, db).SelectContext(context.Background(), &rows, `
		SELECT operator_address, strategy_address, diff::text AS diff,
		       EXISTS (SELECT 1 FROM max_magnitude_events m
		               WHERE m.operator_address = p.operator_address AND m.strategy_address = p.strategy_address)
		       OR p.strategy_address = $1 AND EXISTS (
		           SELECT 1 FROM beacon_slashing_factor_events b
		           JOIN delegation_events d ON d.staker_address = b.staker_address AND d.type = 'DELEGATION'
		           WHERE d.operator_address = p.operator_address) AS rounding
		FROM (
		    SELECT operator_address, strategy_address, COALESCE(os.shares, 0) - COALESCE(x.shares, 0) AS diff
		    FROM (
		        SELECT operator_address, strategy_address, sum(withdrawable_shares) AS shares
		        FROM staker_positions WHERE operator_address IS NOT NULL AND withdrawable_shares > 0
		        GROUP BY 1, 2
		    ) x FULL JOIN operator_shares os USING (operator_address, strategy_address)
		) p
		WHERE diff <> 0`, chain.BeaconStrategy)
	if err != nil {
		t.Fatal(err)
	}
	var largest *big.Int
	for _, row := range rows {
		diff, _ := new(big.Int).SetString(row.Diff, 10)
		diff.Abs(diff)
		budget := r.budget[pair{row.Operator, row.Strategy}]
		switch {
		case !row.Rounding:
			t.Errorf("operator %s strategy %s: shares differ from Σ withdrawable by %s without a slash or beacon slashing", row.Operator, row.Strategy, row.Diff)
		case budget == nil || diff.Cmp(budget) > 0:
			t.Errorf("operator %s strategy %s: shares differ from Σ withdrawable by %s, more than rounding allows (%v)", row.Operator, row.Strategy, row.Diff, budget)
		}
		if largest == nil || diff.Cmp(largest) > 0 {
			largest = diff
		}
	}
	if len(rows) == 0 {
		t.Error("no operator's shares differ from what its stakers can withdraw: no rounding at all")
	}
	t.Logf("%d (operator, strategy) pairs differ from Σ withdrawable by rounding, by up to %v wei", len(rows), largest)
}

// checkPositions compares the staker state the store derived with the
// generator's own: every position's deposit shares, deposit scaling factor
// and withdrawable shares, every beacon-chain slashing factor, and every
// operator's shares.
func checkPositions(t *testing.T, db *store.DB, g *generator) {
	t.Helper()
	ctx := context.Background()
	var positions []struct {
		Staker       string `db:"staker_address"`
		Strategy     string `db:"strategy_address"`
		Deposit      string `db:"deposit_shares"`
		Factor       string `db:"deposit_scaling_factor"`
		Withdrawable string `db:"withdrawable_shares"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &positions, `
		SELECT staker_address, strategy_address, deposit_shares::text, deposit_scaling_factor::text, withdrawable_shares::text
		FROM staker_positions`); err != nil {
		t.Fatal(err)
	}
	type position struct{ deposit, factor, withdrawable string }
	want := map[pair]position{}
	beacon := map[string]string{}
	for _, s := range g.stakers {
		for i := range s.holdings {
			h := &s.holdings[i]
			want[pair{s.addr, g.strategies[h.strat].Address}] = position{h.shares.String(), h.factor().String(), g.withdrawable(s, h).String()}
		}
		if s.beaconFactor != 0 {
			beacon[s.addr] = fmt.Sprint(s.beaconFactor)
		}
	}
	bad := 0
	for _, p := range positions {
		k := pair{p.Staker, p.Strategy}
		got := position{p.Deposit, p.Factor, p.Withdrawable}
		if w, ok := want[k]; !ok || got != w {
			if bad++; bad <= 5 {
				t.Errorf("position of %s in %s: deposit, factor, withdrawable %v, the generator has %v", p.Staker, p.Strategy, got, w)
			}
		}
		delete(want, k)
	}
	for k := range want {
		if bad++; bad <= 5 {
			t.Errorf("position of %s in %s missing", k[0], k[1])
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d positions differ from the generator's", bad, len(positions))
	}

	var factors []struct {
		Staker string `db:"address"`
		Factor string `db:"beacon_slashing_factor"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &factors, `
		SELECT address, beacon_slashing_factor::text FROM stakers WHERE beacon_slashing_factor <> 1000000000000000000`); err != nil {
		t.Fatal(err)
	}
	for _, f := range factors {
		if beacon[f.Staker] != f.Factor {
			t.Errorf("staker %s beacon slashing factor %s, the generator has %q", f.Staker, f.Factor, beacon[f.Staker])
		}
		delete(beacon, f.Staker)
	}
	if len(beacon) > 0 {
		t.Errorf("%d beacon slashing factors missing", len(beacon))
	}

	var shares []struct {
		Operator string `db:"operator_address"`
		Strategy string `db:"strategy_address"`
		Shares   string `db:"shares"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &shares, `SELECT operator_address, strategy_address, shares::text FROM operator_shares`); err != nil {
		t.Fatal(err)
	}
	ledger := map[pair]string{}
	for _, op := range g.operators {
		for j, v := range op.shares {
			if v != nil && v.Sign() > 0 {
				ledger[pair{op.addr, g.strategies[j].Address}] = v.String()
			}
		}
	}
	for _, s := range shares {
		if ledger[pair{s.Operator, s.Strategy}] != s.Shares {
			t.Errorf("operator %s shares of %s: %s, the generator has %q", s.Operator, s.Strategy, s.Shares, ledger[pair{s.Operator, s.Strategy}])
		}
		delete(ledger, pair{s.Operator, s.Strategy})
	}
	if len(ledger) > 0 {
		t.Errorf("%d operator share rows missing", len(ledger))
	}
	t.Logf("%d positions, %d beacon slashing factors and %d operator share rows equal the generator's", len(positions), len(factors), len(shares))
}
