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

// A slashing-era history worked out by hand with the contracts' rules.
// Operator opOne joins the AVS avsB only through its operator set 1
// (strategy stETH), allocates half its magnitude to it and is slashed for
// half of that allocation: its max magnitude falls from 1 to 0.75.
//
//   - staker1 deposits 15 stETH shares and delegates to opOne: operator
//     shares 15.
//   - The slash takes 15 − ⌈15 × 0.75⌉ = 3.75 operator shares. staker1 still
//     has 15 deposit shares, now worth 15 × 0.75 = 11.25.
//   - staker1 queues 10 deposit shares: scaled 10, withdrawable 7.5 (the
//     operator loses 7.5). Deposit shares left 5, withdrawable 3.75.
//   - staker1 deposits 3 more: its deposit scaling factor becomes
//     (3.75 + 3) ÷ 8 ÷ 0.75 = 1.125; 8 deposit shares, 8 × 1.125 × 0.75 =
//     6.75 withdrawable; operator shares +3.
//   - staker1 queues 4 deposit shares: scaled 4 × 1.125 = 4.5, withdrawable
//     4.5 × 0.75 = 3.375. Deposit shares left 4, withdrawable 3.375;
//     operator shares 15 − 3.75 − 7.5 + 3 − 3.375 = 3.375.
const (
	avsB     = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	rootS1   = "0x00000000000000000000000000000000000000000000000000000000000000e1"
	rootS2   = "0x00000000000000000000000000000000000000000000000000000000000000e2"
	rewardV2 = "0x00000000000000000000000000000000000000000000000000000000000000b2"
)

// spos is pos with a block hash, which the cursor records.
func spos(block uint64, log uint32) chain.Position {
	p := pos(block, log)
	p.BlockHash = fmt.Sprintf("0x%064x", block)
	return p
}

// milli returns n/1000 × 1e18.
func milli(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e15)) }

func slashingPrefix() chain.Batch {
	set := chain.OperatorSet{AVS: avsB, ID: 1}
	return chain.Batch{
		MetadataURIs: []chain.MetadataURIUpdated{
			{Position: spos(10, 0), Subject: chain.SubjectAVS, Address: avsB, URI: "https://b.example/meta.json"},
		},
		OperatorsRegistered: []chain.OperatorRegistered{{Position: spos(11, 0), Operator: opOne}},
		OperatorSetsCreated: []chain.OperatorSetCreated{{Position: spos(12, 0), Set: set}},
		OperatorSetStrategies: []chain.OperatorSetStrategy{
			{Position: spos(12, 1), Set: set, Strategy: stETH, Added: true},
		},
		AllocationDelays: []chain.AllocationDelaySet{{Position: spos(13, 0), Operator: opOne, Delay: 1, EffectBlock: 14}},
		OperatorSetMemberships: []chain.OperatorSetMembership{
			{Position: spos(14, 0), Operator: opOne, Set: set, Added: true},
		},
		Deposits: []chain.Deposit{{Position: spos(15, 0), Staker: staker1, Strategy: stETH, Shares: eth(15)}},
		DepositScalingFactors: []chain.DepositScalingFactorUpdated{
			{Position: spos(15, 1), Staker: staker1, Strategy: stETH, Factor: eth(1)},
		},
		Delegations: []chain.DelegationEvent{
			{Position: spos(16, 0), Type: chain.Delegation, Staker: staker1, Operator: opOne},
			{Position: spos(16, 1), Type: chain.SharesIncreased, Staker: staker1, Operator: opOne, Strategy: stETH, Shares: eth(15)},
		},
		Allocations: []chain.AllocationUpdated{
			{Position: spos(17, 0), Operator: opOne, Set: set, Strategy: stETH, Magnitude: 5e17, EffectBlock: 18},
		},
		EncumberedMagnitudes: []chain.EncumberedMagnitudeUpdated{
			{Position: spos(17, 1), Operator: opOne, Strategy: stETH, EncumberedMagnitude: 5e17},
		},
		Head: spos(19, 0),
	}
}

func slashingSuffix() chain.Batch {
	set := chain.OperatorSet{AVS: avsB, ID: 1}
	slash := spos(20, 0)
	at := func(log uint32) chain.Position { p := slash; p.LogIndex = log; return p }
	return chain.Batch{
		Allocations: []chain.AllocationUpdated{
			{Position: at(0), Operator: opOne, Set: set, Strategy: stETH, Magnitude: 25e16, EffectBlock: 20},
			// A deallocation to 0.1, pending until block 40.
			{Position: spos(26, 0), Operator: opOne, Set: set, Strategy: stETH, Magnitude: 1e17, EffectBlock: 40},
		},
		MaxMagnitudes: []chain.MaxMagnitudeUpdated{{Position: at(1), Operator: opOne, Strategy: stETH, MaxMagnitude: 75e16}},
		SlashedOperatorShares: []chain.SlashedOperatorShares{
			{Position: at(2), Operator: opOne, Strategy: stETH, Shares: milli(3750)},
		},
		OperatorSharesSlashed: []chain.OperatorSharesSlashed{
			{Position: at(3), Operator: opOne, Strategy: stETH, BurnedShares: milli(3750)},
		},
		Slashings: []chain.OperatorSlashed{{Position: at(4), Operator: opOne, Set: set, Strategies: []string{stETH},
			WadsSlashed: []*big.Int{milli(250)}, Description: "missed attestations"}},
		Delegations: []chain.DelegationEvent{
			{Position: spos(21, 0), Type: chain.SharesDecreased, Staker: staker1, Operator: opOne, Strategy: stETH, Shares: milli(7500)},
			{Position: spos(23, 1), Type: chain.SharesIncreased, Staker: staker1, Operator: opOne, Strategy: stETH, Shares: eth(3)},
			{Position: spos(24, 0), Type: chain.SharesDecreased, Staker: staker1, Operator: opOne, Strategy: stETH, Shares: milli(3375)},
		},
		WithdrawalsQueued: []chain.WithdrawalQueued{
			{Position: spos(21, 1), Root: rootS1, Nonce: big.NewInt(0), Staker: staker1, DelegatedTo: opOne, Withdrawer: staker1,
				StartBlock: 21, Strategies: []string{stETH}, Shares: []*big.Int{milli(7500)}, ScaledShares: []*big.Int{eth(10)}},
			{Position: spos(24, 1), Root: rootS2, Nonce: big.NewInt(1), Staker: staker1, DelegatedTo: opOne, Withdrawer: staker1,
				StartBlock: 24, Strategies: []string{stETH}, Shares: []*big.Int{milli(3375)}, ScaledShares: []*big.Int{milli(4500)}},
		},
		Deposits: []chain.Deposit{{Position: spos(23, 0), Staker: staker1, Strategy: stETH, Shares: eth(3)}},
		DepositScalingFactors: []chain.DepositScalingFactorUpdated{
			{Position: spos(23, 2), Staker: staker1, Strategy: stETH, Factor: milli(1125)},
		},
		RewardsSubmissions: []chain.RewardsSubmission{{
			Position: spos(25, 0), AVS: avsB, Kind: chain.RewardsOperatorDirectedAVS, Nonce: big.NewInt(0), Hash: rewardV2,
			Token: weth, Amount: eth(7), StartTimestamp: uint32(genesis.Unix()), Duration: 7 * 86400,
			Strategies:      []chain.StrategyMultiplier{{Strategy: stETH, Multiplier: big.NewInt(1e18)}},
			OperatorRewards: []chain.OperatorReward{{Operator: opOne, Amount: eth(5)}, {Operator: opTwo, Amount: eth(2)}},
			Description:     "v2",
		}},
		ProtocolEvents: []chain.ProtocolEvent{{Position: spos(25, 1), Contract: "0x7750d328b314effa365a0402ccfd489b80b0adda",
			Name: "OperatorAVSSplitBipsSet", Args: map[string]any{"operator": opOne, "newOperatorAVSSplitBips": "500"}}},
		Head: spos(30, 0),
	}
}

// newSlashingDB returns an empty database that knows the network and the
// reward token of the slashing history.
func newSlashingDB(t *testing.T) *store.DB {
	t.Helper()
	ctx := context.Background()
	db := storetest.New(t)
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		return tx.UpsertTokens(ctx, []store.Token{{Address: weth, Symbol: "WETH", Decimals: 18, ETHPrice: "1"}})
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestSlashingStateIsChainTrue(t *testing.T) {
	db := newSlashingDB(t)
	applyAndRefresh(t, db, genesis.Add(60*time.Hour), slashingPrefix(), slashingSuffix())
	checks := []struct{ name, sql, want string }{
		{"deposit and withdrawable shares", `
			SELECT deposit_shares || ' ' || deposit_scaling_factor || ' ' || withdrawable_shares
			FROM staker_positions WHERE staker_address = '` + staker1 + `'`,
			"4000000000000000000 1125000000000000000 3375000000000000000"},
		{"withdrawals' deposit shares", `
			SELECT string_agg(array_to_string(deposit_shares, ',') || '/' || array_to_string(scaled_shares, ',') || '/' ||
			                  array_to_string(shares, ','), ' ' ORDER BY withdrawal_root) FROM withdrawals`,
			"10000000000000000000/10000000000000000000/7500000000000000000 4000000000000000000/4500000000000000000/3375000000000000000"},
		{"operator shares", `SELECT shares::text FROM operator_shares WHERE operator_address = '` + opOne + `'`, "3375000000000000000"},
		{"no phantom staker", `SELECT string_agg(address, ',') FROM stakers`, staker1},
		{"max magnitude", `SELECT max_magnitude::text FROM operator_max_magnitudes`, "750000000000000000"},
		{"allocation", `SELECT magnitude || ' ' || pending_magnitude || ' ' || effect_block FROM allocations`,
			"250000000000000000 100000000000000000 40"},
		{"operator set", `SELECT total_operators::text FROM operator_sets`, "1"},
		{"operator set strategies", `SELECT string_agg(strategy_address, ',') FROM operator_set_strategies`, stETH},
		{"membership makes an AVS operator", `
			SELECT string_agg(avs_address || ' ' || operator_address || ' ' || is_active, ',') FROM avs_operators`,
			avsB + " " + opOne + " true"},
		{"set strategies are restakeable", `SELECT array_to_string(restakeable_strategies, ',') FROM avs`, stETH},
		{"avs shares from slashed operator shares", `SELECT shares::text FROM avs_shares`, "3375000000000000000"},
		{"strategy totals", `SELECT total_shares || ' ' || delegated_shares FROM strategies WHERE address = '` + stETH + `'`,
			"3375000000000000000 3375000000000000000"},
		{"operator-directed rewards", `
			SELECT kind || ' ' || amount || ' ' || (SELECT string_agg(operator_address || '=' || amount, ',' ORDER BY position)
			    FROM rewards_submission_operators o WHERE o.rewards_submission_hash = r.rewards_submission_hash)
			FROM rewards_submissions r`,
			"operator_directed_avs 7000000000000000000 " + opOne + "=5000000000000000000," + opTwo + "=2000000000000000000"},
		{"protocol event", `SELECT name || ' ' || (args->>'newOperatorAVSSplitBips') FROM protocol_events`, "OperatorAVSSplitBipsSet 500"},
		{"slashing", `SELECT description || ' ' || array_to_string(wads_slashed, ',') FROM slashings`,
			"missed attestations 250000000000000000"},
		// The day's delegated shares move by the ledger, the slash included.
		{"today's snapshot", `SELECT total_shares || ' ' || delegated_shares FROM strategy_daily_snapshots
			WHERE strategy_address = '` + stETH + `' ORDER BY day DESC LIMIT 1`, "3375000000000000000 3375000000000000000"},
	}
	for _, c := range checks {
		if got := query(t, db, c.sql); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// Rolling back across a slash restores the pre-slash state exactly, and
// equals indexing only the events up to the ancestor.
func TestRollbackAcrossASlash(t *testing.T) {
	ctx := context.Background()
	now := genesis.Add(60 * time.Hour)
	want := newSlashingDB(t)
	applyAndRefresh(t, want, now, slashingPrefix())

	got := newSlashingDB(t)
	applyAndRefresh(t, got, now, slashingPrefix(), slashingSuffix())
	if dumpState(t, got) == dumpState(t, want) {
		t.Fatal("the suffix changed nothing; the test proves nothing")
	}
	ancestor := slashingPrefix().Head
	if err := got.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.RollbackAfter(ctx, ancestor.BlockNumber); err != nil {
			return err
		}
		if err := tx.SetHead(ctx, ancestor); err != nil {
			return err
		}
		if err := tx.SetCursor(ctx, store.Cursor{Block: ancestor.BlockNumber, Hash: ancestor.BlockHash}, nil); err != nil {
			return err
		}
		return tx.Refresh(ctx, now)
	}); err != nil {
		t.Fatal(err)
	}
	if g, w := dumpState(t, got), dumpState(t, want); g != w {
		t.Errorf("state after rolling back the slash differs from the ancestor's state:\n%s", storetest.LineDiff(w, g))
	}
	if got := query(t, got, `SELECT shares::text FROM operator_shares`); got != "15000000000000000000" {
		t.Errorf("operator shares after rollback = %s, want the pre-slash 15e18", got)
	}
}

// The bulk loader derives the same slashing-era state as ApplyBatch.
func TestBulkApplyMatchesApplyBatchAcrossASlash(t *testing.T) {
	batches := []chain.Batch{slashingPrefix(), slashingSuffix()}
	want := storetest.New(t)
	loadScenarioWith(t, want, false, func(ctx context.Context, tx *store.Tx, _ *store.BulkApplier) error {
		for i := range batches {
			if err := tx.ApplyBatch(ctx, &batches[i]); err != nil {
				return err
			}
		}
		return nil
	})
	got := storetest.New(t)
	loadScenarioWith(t, got, true, func(ctx context.Context, tx *store.Tx, a *store.BulkApplier) error {
		for i := range batches {
			if err := a.Apply(ctx, &batches[i]); err != nil {
				return err
			}
		}
		return a.Finish(ctx)
	})
	if g, w := dumpState(t, got), dumpState(t, want); g != w {
		t.Errorf("bulk state differs from ApplyBatch's:\n%s", storetest.LineDiff(w, g))
	}
}

// Blocks stamped ahead of the server's clock count at once: the snapshots
// are as of the newest indexed block.
func TestRefreshCountsBlocksAheadOfTheClock(t *testing.T) {
	db := newSlashingDB(t)
	// The clock reads the prefix's first block; its head is 9 hours later.
	applyAndRefresh(t, db, genesis.Add(10*time.Hour), slashingPrefix())
	if got := query(t, db, `SELECT total_operators || ' ' || total_stakers FROM daily_snapshots ORDER BY day DESC LIMIT 1`); got != "1 1" {
		t.Errorf("latest snapshot's operators and stakers = %s, want 1 1", got)
	}
	if got := query(t, db, `SELECT total_shares::text FROM strategy_daily_snapshots
		WHERE strategy_address = '`+stETH+`' ORDER BY day DESC LIMIT 1`); got != "15000000000000000000" {
		t.Errorf("latest snapshot's stETH shares = %s, want 15e18", got)
	}
}

// A slash lowers an allocation's current magnitude. The AllocationManager
// stores a pending change as a difference from the current magnitude, so a
// pending increase keeps its difference (the slash emits no event for it),
// while a pending decrease is itself slashed and restated in an event
// emitted just before the one of the current magnitude.
func TestSlashedPendingAllocations(t *testing.T) {
	db := newSlashingDB(t)
	increase := chain.OperatorSet{AVS: avsB, ID: 1}
	decrease := chain.OperatorSet{AVS: avsB, ID: 2}
	alloc := func(p chain.Position, set chain.OperatorSet, magnitude uint64, effect uint32) chain.AllocationUpdated {
		return chain.AllocationUpdated{Position: p, Operator: opOne, Set: set, Strategy: stETH, Magnitude: magnitude, EffectBlock: effect}
	}
	// Set 1: 0.5, then an increase to 0.8 pending until block 30; set 2:
	// 0.4, then a decrease to 0.1 pending until block 40. At block 20 both
	// are slashed by half: set 1's current 0.5 → 0.25 with its +0.3
	// pending (0.55 at block 30); set 2's current 0.4 → 0.2 and its −0.3
	// pending → −0.15 (0.05 at block 40).
	history := chain.Batch{
		Allocations: []chain.AllocationUpdated{
			alloc(spos(17, 0), increase, 5e17, 18),
			alloc(spos(17, 1), decrease, 4e17, 18),
			alloc(spos(19, 0), increase, 8e17, 30),
			alloc(spos(19, 1), decrease, 1e17, 40),
			alloc(spos(20, 0), increase, 25e16, 20),
			alloc(spos(20, 1), decrease, 5e16, 40),
			alloc(spos(20, 2), decrease, 2e17, 20),
		},
		Head: spos(25, 0),
	}
	state := func() string {
		t.Helper()
		return query(t, db, `SELECT string_agg(operator_set_id || ':' || magnitude || '/' || COALESCE(pending_magnitude::text, '-')
			|| '@' || COALESCE(effect_block::text, '-'), ' ' ORDER BY operator_set_id) FROM allocations`)
	}
	now := genesis.Add(60 * time.Hour)
	applyAndRefresh(t, db, now, history)
	if got, want := state(), "1:250000000000000000/550000000000000000@30 2:200000000000000000/50000000000000000@40"; got != want {
		t.Errorf("allocations at block 25 = %s, want %s", got, want)
	}
	applyAndRefresh(t, db, now, chain.Batch{Head: spos(35, 0)})
	if got, want := state(), "1:550000000000000000/-@- 2:200000000000000000/50000000000000000@40"; got != want {
		t.Errorf("allocations at block 35 = %s, want %s", got, want)
	}
	applyAndRefresh(t, db, now, chain.Batch{Head: spos(45, 0)})
	if got, want := state(), "1:550000000000000000/-@- 2:50000000000000000/-@-"; got != want {
		t.Errorf("allocations at block 45 = %s, want %s", got, want)
	}
}
