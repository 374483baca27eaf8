package store_test

import (
	"context"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// A small, hand-computed history: every expected number below is worked out
// from the events by the rules in the package doc.
const (
	avsA    = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	opOne   = "0x1111111111111111111111111111111111111111"
	opTwo   = "0x2222222222222222222222222222222222222222"
	staker1 = "0x5100000000000000000000000000000000000001"
	staker2 = "0x5200000000000000000000000000000000000002"
	stETH   = "0x93c4b944d05dfe6df7645a86cd2206016c51564d"
	stToken = "0xae7ab96520de3a18e5e111b5eaab095312d7fe84"
	weth    = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"
	root1   = "0x00000000000000000000000000000000000000000000000000000000000000f1"
)

var genesis = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pos(block uint64, log uint32) chain.Position {
	return chain.Position{
		BlockNumber: block,
		BlockTime:   genesis.Add(time.Duration(block) * time.Hour),
		TxHash:      fmt.Sprintf("0x%064x", block*1000+uint64(log)),
		LogIndex:    log,
	}
}

func eth(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e18)) }

func scenario() chain.Batch {
	return chain.Batch{
		MetadataURIs: []chain.MetadataURIUpdated{
			{Position: pos(10, 0), Subject: chain.SubjectAVS, Address: avsA, URI: "https://a.example/meta.json"},
			{Position: pos(11, 1), Subject: chain.SubjectOperator, Address: opOne, URI: "https://one.example/meta.json"},
		},
		MetadataDocuments: []chain.MetadataDocument{
			{Position: pos(10, 0), Subject: chain.SubjectAVS, Address: avsA, Name: "Alpha AVS"},
			{Position: pos(11, 1), Subject: chain.SubjectOperator, Address: opOne, Name: "Operator One"},
		},
		AVSStrategies: []chain.AVSStrategies{
			{Position: pos(10, 1), AVS: avsA, Strategies: []string{chain.BeaconStrategy, stETH}},
		},
		OperatorsRegistered: []chain.OperatorRegistered{
			{Position: pos(11, 0), Operator: opOne},
			{Position: pos(12, 0), Operator: opTwo},
		},
		Registrations: []chain.RegistrationStatusUpdated{
			{Position: pos(13, 0), Operator: opOne, AVS: avsA, Registered: true},
			{Position: pos(14, 0), Operator: opTwo, AVS: avsA, Registered: true},
			{Position: pos(20, 0), Operator: opTwo, AVS: avsA, Registered: false},
		},
		Deposits: []chain.Deposit{
			{Position: pos(15, 0), Staker: staker1, Token: stToken, Strategy: stETH, Shares: eth(10)},
			{Position: pos(15, 2), Staker: staker2, Token: stToken, Strategy: stETH, Shares: eth(5)},
		},
		PodShares: []chain.PodSharesUpdated{
			{Position: pos(17, 0), PodOwner: staker1, SharesDelta: eth(32)},
		},
		Delegations: []chain.DelegationEvent{
			{Position: pos(16, 0), Type: chain.Delegation, Staker: staker1, Operator: opOne},
			{Position: pos(16, 1), Type: chain.SharesIncreased, Staker: staker1, Operator: opOne, Strategy: stETH, Shares: eth(10)},
			{Position: pos(17, 1), Type: chain.SharesIncreased, Staker: staker1, Operator: opOne, Strategy: chain.BeaconStrategy, Shares: eth(32)},
			{Position: pos(18, 0), Type: chain.Delegation, Staker: staker2, Operator: opTwo},
			{Position: pos(18, 1), Type: chain.SharesIncreased, Staker: staker2, Operator: opTwo, Strategy: stETH, Shares: eth(5)},
			{Position: pos(19, 0), Type: chain.SharesDecreased, Staker: staker1, Operator: opOne, Strategy: stETH, Shares: eth(4)},
		},
		WithdrawalsQueued: []chain.WithdrawalQueued{
			{Position: pos(19, 1), Root: root1, Nonce: big.NewInt(0), Staker: staker1, DelegatedTo: opOne,
				Withdrawer: staker1, StartBlock: 19, Strategies: []string{stETH}, Shares: []*big.Int{eth(4)}},
		},
		WithdrawalsDone: []chain.WithdrawalCompleted{{Position: pos(21, 0), Root: root1}},
		RewardsSubmissions: []chain.RewardsSubmission{{
			Position: pos(19, 2), AVS: avsA, Nonce: big.NewInt(0),
			Hash:  "0x00000000000000000000000000000000000000000000000000000000000000a1",
			Token: weth, Amount: eth(3), StartTimestamp: uint32(genesis.Unix()), Duration: 30 * 86400,
			Strategies: []chain.StrategyMultiplier{
				{Strategy: stETH, Multiplier: big.NewInt(2e18)},
				{Strategy: chain.BeaconStrategy, Multiplier: big.NewInt(1e18)},
			},
		}},
		Head: pos(22, 0),
	}
}

func loadScenario(t *testing.T, db *store.DB, batches ...chain.Batch) {
	t.Helper()
	loadScenarioWith(t, db, false, func(ctx context.Context, tx *store.Tx, _ *store.BulkApplier) error {
		for i := range batches {
			if err := tx.ApplyBatch(ctx, &batches[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// loadScenarioWith writes the scenario's reference data, runs apply and
// refreshes, in one transaction: a bulk one (InBulkTx) when bulk is set,
// else an ordinary one, and apply's BulkApplier nil.
func loadScenarioWith(t *testing.T, db *store.DB, bulk bool, apply func(context.Context, *store.Tx, *store.BulkApplier) error) {
	t.Helper()
	ctx := context.Background()
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		t.Fatal(err)
	}
	body := func(tx *store.Tx, a *store.BulkApplier) error {
		net := chain.Networks["mainnet"]
		var strategies []store.Strategy
		for _, s := range net.Strategies {
			price := "1"
			if s.Kind == chain.KindEigen {
				price = "0.001"
			}
			strategies = append(strategies, store.Strategy{Strategy: s, SharesToUnderlying: big.NewInt(1e18), ETHPrice: price})
		}
		if err := tx.UpsertStrategies(ctx, strategies); err != nil {
			return err
		}
		if err := tx.UpsertTokens(ctx, []store.Token{{Address: weth, Symbol: "WETH", Decimals: 18, ETHPrice: "1"}}); err != nil {
			return err
		}
		if err := apply(ctx, tx, a); err != nil {
			return err
		}
		return tx.Refresh(ctx, genesis.Add(48*time.Hour))
	}
	var err error
	if bulk {
		err = db.InBulkTx(ctx, body)
	} else {
		err = db.InTx(ctx, func(tx *store.Tx) error { return body(tx, nil) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

// query returns one text value.
func query(t *testing.T, db *store.DB, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := storetest.SQL(t, db).GetContext(context.Background(), &s, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func checkScenario(t *testing.T, db *store.DB) {
	t.Helper()
	checks := []struct {
		name, sql, want string
	}{
		{"staker1 shares", `SELECT string_agg(strategy_address || '=' || shares, ',' ORDER BY strategy_address) FROM staker_shares WHERE staker_address = '` + staker1 + `'`,
			stETH + "=6000000000000000000," + chain.BeaconStrategy + "=32000000000000000000"},
		{"staker operators", `SELECT string_agg(address || '>' || COALESCE(operator_address, '-'), ',' ORDER BY address) FROM stakers`,
			staker1 + ">" + opOne + "," + staker2 + ">" + opTwo},
		{"operator shares", `SELECT string_agg(operator_address || ':' || strategy_address || '=' || shares, ',' ORDER BY operator_address, strategy_address) FROM operator_shares`,
			opOne + ":" + stETH + "=6000000000000000000," + opOne + ":" + chain.BeaconStrategy + "=32000000000000000000," + opTwo + ":" + stETH + "=5000000000000000000"},
		{"operator totals", `SELECT string_agg(address || ' ' || total_stakers || ' ' || total_avs || ' ' || tvl_eth::numeric(20,2), ',' ORDER BY address) FROM operators`,
			opOne + " 1 1 38.00," + opTwo + " 1 0 5.00"},
		{"operator metadata", `SELECT metadata_name || ' ' || metadata_uri FROM operators WHERE address = '` + opOne + `'`, "Operator One https://one.example/meta.json"},
		// A registration's TVL is its operator's shares in the strategies it
		// restakes for the AVS: 6 stETH and 32 beacon ETH; 5 stETH.
		{"registrations", `SELECT string_agg(operator_address || ' ' || is_active || ' ' || array_to_string(restaked_strategies, '|') || ' ' || tvl_eth::numeric(20,2), ',' ORDER BY operator_address) FROM avs_operators`,
			opOne + " true " + stETH + "|" + chain.BeaconStrategy + " 38.00," + opTwo + " false " + stETH + " 5.00"},
		{"avs totals", `SELECT metadata_name || ' ' || total_operators || ' ' || total_stakers || ' ' || tvl_eth::numeric(20,2) FROM avs`, "Alpha AVS 1 1 38.00"},
		// stETH gets 2/3 of 3 ETH = 2 ETH over 30 days against 6 ETH: 2/6 × 365/30 × 100.
		{"apy", `SELECT round(apy, 4)::text FROM avs_strategy_apy WHERE strategy_address = '` + stETH + `'`, "405.5556"},
		{"avs max apy", `SELECT round(max_apy, 4)::text FROM avs`, "405.5556"},
		{"operator max apy", `SELECT string_agg(round(max_apy, 4)::text, ',' ORDER BY address) FROM operators`, "405.5556,0.0000"},
		{"withdrawal", `SELECT is_completed || ' ' || completed_block || ' ' || updated_at_block FROM withdrawals`, "true 21 21"},
		{"strategy totals", `SELECT total_shares || ' ' || delegated_shares FROM strategies WHERE address = '` + stETH + `'`, "11000000000000000000 11000000000000000000"},
		{"today snapshot", `SELECT total_avs || ' ' || total_operators || ' ' || total_stakers || ' ' || total_withdrawals || ' ' || completed_withdrawals || ' ' || tvl_eth::numeric(20,2) || ' ' || deployment_ratio::numeric(6,4) FROM daily_snapshots WHERE day = '2026-01-03'`,
			"1 2 2 1 1 43.00 1.0000"},
		{"first day snapshot", `SELECT total_stakers || ' ' || tvl_eth::numeric(20,2) FROM daily_snapshots WHERE day = '2026-01-01'`, "2 43.00"},
		{"head", `SELECT head_block::text FROM service_state`, "22"},
	}
	for _, c := range checks {
		if got := query(t, db, c.sql); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestApplyAndRefresh(t *testing.T) {
	db := storetest.New(t)
	loadScenario(t, db, scenario())
	checkScenario(t, db)
}

// Applying the same events twice, or split over several batches in any
// order of batches, gives the same state as applying them once.
func TestApplyIsIdempotentAndSplittable(t *testing.T) {
	db := storetest.New(t)
	all := scenario()
	first := chain.Batch{
		MetadataURIs: all.MetadataURIs, MetadataDocuments: all.MetadataDocuments, AVSStrategies: all.AVSStrategies,
		OperatorsRegistered: all.OperatorsRegistered, Registrations: all.Registrations[:2],
		Deposits: all.Deposits, Delegations: all.Delegations[:3],
	}
	second := chain.Batch{
		Registrations: all.Registrations[2:], PodShares: all.PodShares, Delegations: all.Delegations[3:],
		WithdrawalsQueued: all.WithdrawalsQueued, WithdrawalsDone: all.WithdrawalsDone,
		RewardsSubmissions: all.RewardsSubmissions, Head: all.Head,
	}
	loadScenario(t, db, first, second, all, second)
	checkScenario(t, db)
	if got := query(t, db, `SELECT count(*)::text FROM delegation_events`); got != "6" {
		t.Errorf("delegation events stored = %s, want 6", got)
	}
}

// An older metadata document never overwrites a newer one.
func TestMetadataDocumentsKeepNewest(t *testing.T) {
	db := storetest.New(t)
	b := scenario()
	newer := chain.Batch{MetadataDocuments: []chain.MetadataDocument{
		{Position: pos(30, 0), Subject: chain.SubjectAVS, Address: avsA, Name: "Alpha v2"},
	}}
	older := chain.Batch{MetadataDocuments: []chain.MetadataDocument{
		{Position: pos(25, 0), Subject: chain.SubjectAVS, Address: avsA, Name: "Alpha stale"},
	}}
	loadScenario(t, db, b, newer, older)
	if got := query(t, db, `SELECT metadata_name FROM avs`); got != "Alpha v2" {
		t.Errorf("AVS name = %q, want the newest document's", got)
	}
}

// Amounts outside uint256 are refused by the database, not truncated.
func TestAmountsOutOfRangeAreRefused(t *testing.T) {
	db := storetest.New(t)
	huge := new(big.Int).Lsh(big.NewInt(1), 256)
	b := chain.Batch{Deposits: []chain.Deposit{{Position: pos(1, 0), Staker: staker1, Strategy: stETH, Shares: huge}}}
	err := db.InTx(context.Background(), func(tx *store.Tx) error { return tx.ApplyBatch(context.Background(), &b) })
	if err == nil {
		t.Fatal("a deposit of 2^256 shares was accepted")
	}
}

// filterBatch keeps the events at or below block.
func filterBatch(b chain.Batch, block uint64) chain.Batch {
	keep := func(p chain.Position) bool { return p.BlockNumber <= block }
	var out chain.Batch
	for _, e := range b.MetadataURIs {
		if keep(e.Position) {
			out.MetadataURIs = append(out.MetadataURIs, e)
		}
	}
	for _, e := range b.MetadataDocuments {
		if keep(e.Position) {
			out.MetadataDocuments = append(out.MetadataDocuments, e)
		}
	}
	for _, e := range b.AVSStrategies {
		if keep(e.Position) {
			out.AVSStrategies = append(out.AVSStrategies, e)
		}
	}
	for _, e := range b.OperatorsRegistered {
		if keep(e.Position) {
			out.OperatorsRegistered = append(out.OperatorsRegistered, e)
		}
	}
	for _, e := range b.Registrations {
		if keep(e.Position) {
			out.Registrations = append(out.Registrations, e)
		}
	}
	for _, e := range b.Deposits {
		if keep(e.Position) {
			out.Deposits = append(out.Deposits, e)
		}
	}
	for _, e := range b.PodShares {
		if keep(e.Position) {
			out.PodShares = append(out.PodShares, e)
		}
	}
	for _, e := range b.Delegations {
		if keep(e.Position) {
			out.Delegations = append(out.Delegations, e)
		}
	}
	for _, e := range b.WithdrawalsQueued {
		if keep(e.Position) {
			out.WithdrawalsQueued = append(out.WithdrawalsQueued, e)
		}
	}
	for _, e := range b.WithdrawalsDone {
		if keep(e.Position) {
			out.WithdrawalsDone = append(out.WithdrawalsDone, e)
		}
	}
	for _, e := range b.RewardsSubmissions {
		if keep(e.Position) {
			out.RewardsSubmissions = append(out.RewardsSubmissions, e)
		}
	}
	return out
}

// entityState renders the entity and aggregate tables as text.
func entityState(t *testing.T, db *store.DB) string {
	t.Helper()
	return query(t, db, `SELECT concat_ws(E'\n',
	    (SELECT string_agg(concat_ws(' ', address, operator_address, created_at_block, updated_at_block), ',' ORDER BY address) FROM stakers),
	    (SELECT string_agg(concat_ws(' ', staker_address, strategy_address, shares), ',' ORDER BY staker_address, strategy_address) FROM staker_shares),
	    (SELECT string_agg(concat_ws(' ', operator_address, strategy_address, shares), ',' ORDER BY operator_address, strategy_address) FROM operator_shares),
	    (SELECT string_agg(concat_ws(' ', avs_address, operator_address, is_active, restaked_strategies, tvl_eth), ',' ORDER BY avs_address, operator_address) FROM avs_operators),
	    (SELECT string_agg(concat_ws(' ', address, metadata_name, metadata_uri, created_at_block, total_stakers, total_operators, max_apy, tvl_eth), ',' ORDER BY address) FROM avs),
	    (SELECT string_agg(concat_ws(' ', address, metadata_name, created_at_block, total_stakers, total_avs, max_apy, tvl_eth), ',' ORDER BY address) FROM operators),
	    (SELECT string_agg(concat_ws(' ', withdrawal_root, is_completed), ',' ORDER BY withdrawal_root) FROM withdrawals))`)
}

// Deleting the events above a block and recomputing the keys they touched
// gives exactly the state of applying only the events up to that block.
func TestRecomputeEntitiesAfterDeletingEvents(t *testing.T) {
	ctx := context.Background()
	const cut = 17
	want := storetest.New(t)
	loadScenario(t, want, filterBatch(scenario(), cut))

	got := storetest.New(t)
	loadScenario(t, got, scenario())
	for _, table := range []string{"delegation_events", "deposits", "pod_share_events", "registration_events",
		"metadata_uri_events", "operator_registered_events", "avs_strategy_events", "rewards_submissions", "withdrawals"} {
		if _, err := storetest.SQL(t, got).ExecContext(ctx, `DELETE FROM `+table+` WHERE block_number > $1`, cut); err != nil {
			t.Fatal(err)
		}
	}
	err := got.InTx(ctx, func(tx *store.Tx) error {
		err := tx.RecomputeEntities(ctx, store.EntityKeys{
			Stakers:               []string{staker1, staker2},
			RegistrationAVS:       []string{avsA, avsA},
			RegistrationOperators: []string{opOne, opTwo},
			AVS:                   []string{avsA},
			Operators:             []string{opOne, opTwo},
			DelegatedOperators:    []string{opOne, opTwo},
		})
		if err != nil {
			return err
		}
		return tx.Refresh(ctx, genesis.Add(48*time.Hour))
	})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := entityState(t, got), entityState(t, want); g != w {
		t.Errorf("state after recompute:\n%s\nwant:\n%s", g, w)
	}
}

// An AVS hidden by curated metadata is left out of the daily AVS counts,
// also for days already snapshotted before it was hidden.
func TestHiddenAVSLeavesTheCounts(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	loadScenario(t, db, scenario())
	if got := query(t, db, `SELECT total_avs::text FROM daily_snapshots WHERE day = '2026-01-01'`); got != "1" {
		t.Fatalf("AVS count before hiding = %s, want 1", got)
	}
	err := db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.UpsertCuratedMetadata(ctx, []store.CuratedMetadata{{AVSAddress: avsA, Name: "Alpha", IsVisible: false}}); err != nil {
			return err
		}
		return tx.Refresh(ctx, genesis.Add(48*time.Hour))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := query(t, db, `SELECT string_agg(total_avs::text, ',' ORDER BY day) FROM daily_snapshots`); got != "0,0,0" {
		t.Errorf("AVS counts after hiding = %s, want 0,0,0", got)
	}
}
