// Package graphtest holds a small slashing-era history for the tests of the
// GraphQL and REST layers, applied through the store's public API
// (Tx.ApplyBatch and Tx.Refresh) as the indexer applies chain events. Every
// figure it leads to is worked out by hand below, with the contracts'
// rounding, so that the tests can assert exact values.
//
// The AVS (the constant AVS) creates operator sets 1 (stETH and beacon ETH)
// and 2 (stETH).
// OperatorA joins both sets, OperatorB set 1, OperatorC set 1 until it
// leaves it. The minimum withdrawal delay is 3 blocks; the head is block 30.
//
//   - Deposits (block 15) and delegations (16): Staker1 20 stETH and
//     Staker2 12 stETH to OperatorA (32 operator shares), Staker3 10 stETH
//     and 32 beacon ETH to OperatorB, Staker4 5 stETH to OperatorC.
//   - Allocations (17, effective at 18): OperatorA 0.5 of its stETH
//     magnitude to set 1 and 0.3 to set 2; OperatorB 1.0 of stETH and 0.4 of
//     beacon ETH to set 1; OperatorC 0.2 of stETH to set 1.
//   - Block 18: Staker1 queues WithdrawalOne (slashing era): 2 deposit
//     shares, scaled 2. OperatorA 30. Block 19: OperatorC leaves set 1.
//     Block 20: Staker2 queues WithdrawalTwo: 4, scaled 4. OperatorA 26.
//     Block 21: Staker3 queues WithdrawalThree in the form of the events
//     before the slashing upgrade (no scaled shares): 2 stETH. OperatorB 8
//     stETH.
//   - Block 22, one transaction: the AVS slashes OperatorA in set 1 for
//     half its stETH allocation (0.25 of 1.0): max magnitude 0.75, operator
//     shares −6.5 (26 × 0.25), burned 7.5 (with WithdrawalTwo's 4 × 0.25).
//     Then in set 2 for half of 0.3: max magnitude 0.6, operator shares
//     −3.9 (19.5 × 0.15 ÷ 0.75), burned 4.5 (with 4 × 0.15). OperatorA
//     15.6; allocations 0.25 (set 1) and 0.15 (set 2).
//   - Block 23: Staker1 deposits 3 stETH: its withdrawable 18 × 0.6 = 10.8
//     becomes 13.8 over 21 deposit shares, deposit scaling factor
//     13.8 ÷ 21 ÷ 0.6 = 1095238095238095236 (rounded down twice).
//     OperatorA 18.6.
//   - Block 24: OperatorA deallocates set 2 to 0.1, effective at block 40
//     (pending). Block 25: WithdrawalOne is completed. Block 26: Staker3's
//     beacon-chain slashing factor falls to 0.9.
//   - Blocks 26 to 28: an operator-directed submission to set 1 (OperatorA
//     4, OperatorB 6 WETH), an operator-directed AVS submission (OperatorA
//     1) and an ordinary AVS submission (2).
//
// So, as of the head:
//
//   - withdrawable shares: Staker1 21 × 1095238095238095236 × 0.6 =
//     13799999999999999973 stETH (deposit shares 21); Staker2 8 × 0.6 = 4.8
//     (deposit 8); Staker3 8 stETH, and 32 × 0.9 = 28.8 beacon ETH
//     (deposit 32);
//   - allocated stake: OperatorA 18.6 × (0.25 ÷ 0.6, rounded down to
//     0.416666666666666666) = 7749999999999999987 (set 1) and 18.6 × 0.25 =
//     4.65 (set 2); OperatorB 8 stETH and 32 × 0.4 = 12.8 beacon ETH;
//     OperatorC 5 × 0.2 = 1 (not a member any more). Set 1 holds
//     15749999999999999987 stETH and 12.8 beacon ETH, set 2 4.65 stETH;
//   - payouts: WithdrawalOne is slashable until block 21, before the slash:
//     2; WithdrawalTwo until block 23: 4 × 0.6 = 2.4; WithdrawalThree its 2
//     shares.
package graphtest

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// The addresses of the history.
const (
	AVS       = "0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
	OperatorA = "0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	OperatorB = "0xb2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
	OperatorC = "0xc3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
	Staker1   = "0x5100000000000000000000000000000000000001"
	Staker2   = "0x5200000000000000000000000000000000000002"
	Staker3   = "0x5300000000000000000000000000000000000003"
	Staker4   = "0x5400000000000000000000000000000000000004"
	StETH     = "0x93c4b944d05dfe6df7645a86cd2206016c51564d"
	Beacon    = chain.BeaconStrategy
	WETH      = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"

	WithdrawalOne   = "0x00000000000000000000000000000000000000000000000000000000000000a1"
	WithdrawalTwo   = "0x00000000000000000000000000000000000000000000000000000000000000a2"
	WithdrawalThree = "0x00000000000000000000000000000000000000000000000000000000000000a3"

	SetSubmission      = "0x00000000000000000000000000000000000000000000000000000000000000b1"
	DirectedSubmission = "0x00000000000000000000000000000000000000000000000000000000000000b2"
	AVSSubmission      = "0x00000000000000000000000000000000000000000000000000000000000000b3"

	// SlashTx is the transaction of both slashings.
	SlashTx = "0x00000000000000000000000000000000000000000000000000000000005a5a5a"
)

// Genesis is the time of block 0; block n is n hours later.
var Genesis = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Now is the clock of the API under test: an hour after the head.
var Now = BlockTime(HeadBlock + 1)

// HeadBlock is the indexed head.
const HeadBlock = 30

// MinWithdrawalDelay is the minimum withdrawal delay in blocks.
const MinWithdrawalDelay = 3

// BlockTime returns the time of block n.
func BlockTime(n uint64) time.Time { return Genesis.Add(time.Duration(n) * time.Hour) }

func pos(block uint64, log uint32) chain.Position {
	return chain.Position{
		BlockNumber: block,
		BlockHash:   fmt.Sprintf("0x%064x", block),
		BlockTime:   BlockTime(block),
		TxHash:      fmt.Sprintf("0x%064x", block*1000+uint64(log)),
		LogIndex:    log,
	}
}

// slashPos is a log of the slashing transaction at block 22.
func slashPos(log uint32) chain.Position {
	p := pos(22, log)
	p.TxHash = SlashTx
	return p
}

// milli returns n/1000 × 1e18.
func milli(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e15)) }

func eth(n int64) *big.Int { return milli(n * 1000) }

func bigText(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("graphtest: bad number " + s)
	}
	return n
}

// Batch returns the history as one batch.
func Batch() chain.Batch {
	set1 := chain.OperatorSet{AVS: AVS, ID: 1}
	set2 := chain.OperatorSet{AVS: AVS, ID: 2}
	one := uint32(1)
	return chain.Batch{
		MetadataURIs: []chain.MetadataURIUpdated{
			{Position: pos(10, 0), Subject: chain.SubjectAVS, Address: AVS, URI: "https://avs.example/meta.json"},
		},
		MetadataDocuments: []chain.MetadataDocument{
			{Position: pos(10, 0), Subject: chain.SubjectAVS, Address: AVS, Name: "Slashing AVS"},
		},
		OperatorsRegistered: []chain.OperatorRegistered{
			{Position: pos(11, 0), Operator: OperatorA},
			{Position: pos(11, 1), Operator: OperatorB},
			{Position: pos(11, 2), Operator: OperatorC},
		},
		OperatorSetsCreated: []chain.OperatorSetCreated{
			{Position: pos(12, 0), Set: set1},
			{Position: pos(12, 1), Set: set2},
		},
		OperatorSetStrategies: []chain.OperatorSetStrategy{
			{Position: pos(12, 2), Set: set1, Strategy: StETH, Added: true},
			{Position: pos(12, 3), Set: set1, Strategy: Beacon, Added: true},
			{Position: pos(12, 4), Set: set2, Strategy: StETH, Added: true},
		},
		AllocationDelays: []chain.AllocationDelaySet{
			{Position: pos(13, 0), Operator: OperatorA, Delay: 1, EffectBlock: 14},
		},
		OperatorSetMemberships: []chain.OperatorSetMembership{
			{Position: pos(14, 0), Operator: OperatorA, Set: set1, Added: true},
			{Position: pos(14, 1), Operator: OperatorA, Set: set2, Added: true},
			{Position: pos(14, 2), Operator: OperatorB, Set: set1, Added: true},
			{Position: pos(14, 3), Operator: OperatorC, Set: set1, Added: true},
			{Position: pos(19, 0), Operator: OperatorC, Set: set1, Added: false},
		},
		Deposits: []chain.Deposit{
			{Position: pos(15, 0), Staker: Staker1, Strategy: StETH, Shares: eth(20)},
			{Position: pos(15, 1), Staker: Staker2, Strategy: StETH, Shares: eth(12)},
			{Position: pos(15, 2), Staker: Staker3, Strategy: StETH, Shares: eth(10)},
			{Position: pos(15, 4), Staker: Staker4, Strategy: StETH, Shares: eth(5)},
			{Position: pos(23, 0), Staker: Staker1, Strategy: StETH, Shares: eth(3)},
		},
		PodShares: []chain.PodSharesUpdated{
			{Position: pos(15, 3), PodOwner: Staker3, SharesDelta: eth(32)},
		},
		Delegations: []chain.DelegationEvent{
			{Position: pos(16, 0), Type: chain.Delegation, Staker: Staker1, Operator: OperatorA},
			{Position: pos(16, 1), Type: chain.SharesIncreased, Staker: Staker1, Operator: OperatorA, Strategy: StETH, Shares: eth(20)},
			{Position: pos(16, 2), Type: chain.Delegation, Staker: Staker2, Operator: OperatorA},
			{Position: pos(16, 3), Type: chain.SharesIncreased, Staker: Staker2, Operator: OperatorA, Strategy: StETH, Shares: eth(12)},
			{Position: pos(16, 4), Type: chain.Delegation, Staker: Staker3, Operator: OperatorB},
			{Position: pos(16, 5), Type: chain.SharesIncreased, Staker: Staker3, Operator: OperatorB, Strategy: StETH, Shares: eth(10)},
			{Position: pos(16, 6), Type: chain.SharesIncreased, Staker: Staker3, Operator: OperatorB, Strategy: Beacon, Shares: eth(32)},
			{Position: pos(16, 7), Type: chain.Delegation, Staker: Staker4, Operator: OperatorC},
			{Position: pos(16, 8), Type: chain.SharesIncreased, Staker: Staker4, Operator: OperatorC, Strategy: StETH, Shares: eth(5)},
			{Position: pos(18, 0), Type: chain.SharesDecreased, Staker: Staker1, Operator: OperatorA, Strategy: StETH, Shares: eth(2)},
			{Position: pos(20, 0), Type: chain.SharesDecreased, Staker: Staker2, Operator: OperatorA, Strategy: StETH, Shares: eth(4)},
			{Position: pos(21, 0), Type: chain.SharesDecreased, Staker: Staker3, Operator: OperatorB, Strategy: StETH, Shares: eth(2)},
			{Position: pos(23, 1), Type: chain.SharesIncreased, Staker: Staker1, Operator: OperatorA, Strategy: StETH, Shares: eth(3)},
		},
		Allocations: []chain.AllocationUpdated{
			{Position: pos(17, 0), Operator: OperatorA, Set: set1, Strategy: StETH, Magnitude: 5e17, EffectBlock: 18},
			{Position: pos(17, 1), Operator: OperatorA, Set: set2, Strategy: StETH, Magnitude: 3e17, EffectBlock: 18},
			{Position: pos(17, 2), Operator: OperatorB, Set: set1, Strategy: StETH, Magnitude: 1e18, EffectBlock: 18},
			{Position: pos(17, 3), Operator: OperatorB, Set: set1, Strategy: Beacon, Magnitude: 4e17, EffectBlock: 18},
			{Position: pos(17, 4), Operator: OperatorC, Set: set1, Strategy: StETH, Magnitude: 2e17, EffectBlock: 18},
			{Position: slashPos(0), Operator: OperatorA, Set: set1, Strategy: StETH, Magnitude: 25e16, EffectBlock: 22},
			{Position: slashPos(5), Operator: OperatorA, Set: set2, Strategy: StETH, Magnitude: 15e16, EffectBlock: 22},
			{Position: pos(24, 0), Operator: OperatorA, Set: set2, Strategy: StETH, Magnitude: 1e17, EffectBlock: 40},
		},
		MaxMagnitudes: []chain.MaxMagnitudeUpdated{
			{Position: slashPos(1), Operator: OperatorA, Strategy: StETH, MaxMagnitude: 75e16},
			{Position: slashPos(6), Operator: OperatorA, Strategy: StETH, MaxMagnitude: 6e17},
		},
		SlashedOperatorShares: []chain.SlashedOperatorShares{
			{Position: slashPos(2), Operator: OperatorA, Strategy: StETH, Shares: milli(6500)},
			{Position: slashPos(7), Operator: OperatorA, Strategy: StETH, Shares: milli(3900)},
		},
		OperatorSharesSlashed: []chain.OperatorSharesSlashed{
			{Position: slashPos(3), Operator: OperatorA, Strategy: StETH, BurnedShares: milli(7500)},
			{Position: slashPos(8), Operator: OperatorA, Strategy: StETH, BurnedShares: milli(4500)},
		},
		Slashings: []chain.OperatorSlashed{
			{Position: slashPos(4), Operator: OperatorA, Set: set1, Strategies: []string{StETH},
				WadsSlashed: []*big.Int{milli(500)}, Description: "double signing"},
			{Position: slashPos(9), Operator: OperatorA, Set: set2, Strategies: []string{StETH},
				WadsSlashed: []*big.Int{milli(500)}, Description: "missed tasks"},
		},
		DepositScalingFactors: []chain.DepositScalingFactorUpdated{
			{Position: pos(23, 2), Staker: Staker1, Strategy: StETH, Factor: bigText("1095238095238095236")},
		},
		BeaconSlashingFactors: []chain.BeaconChainSlashingFactorDecreased{
			{Position: pos(26, 5), Staker: Staker3, Previous: 1e18, New: 9e17},
		},
		WithdrawalsQueued: []chain.WithdrawalQueued{
			{Position: pos(18, 1), Root: WithdrawalOne, Nonce: big.NewInt(0), Staker: Staker1, DelegatedTo: OperatorA, Withdrawer: Staker1,
				StartBlock: 18, Strategies: []string{StETH}, Shares: []*big.Int{eth(2)}, ScaledShares: []*big.Int{eth(2)}},
			{Position: pos(20, 1), Root: WithdrawalTwo, Nonce: big.NewInt(0), Staker: Staker2, DelegatedTo: OperatorA, Withdrawer: Staker2,
				StartBlock: 20, Strategies: []string{StETH}, Shares: []*big.Int{eth(4)}, ScaledShares: []*big.Int{eth(4)}},
			{Position: pos(21, 1), Root: WithdrawalThree, Nonce: big.NewInt(0), Staker: Staker3, DelegatedTo: OperatorB, Withdrawer: Staker3,
				StartBlock: 21, Strategies: []string{StETH}, Shares: []*big.Int{eth(2)}},
		},
		WithdrawalsDone: []chain.WithdrawalCompleted{{Position: pos(25, 0), Root: WithdrawalOne}},
		RewardsSubmissions: []chain.RewardsSubmission{
			{Position: pos(26, 0), AVS: AVS, Kind: chain.RewardsOperatorDirectedOpSet, OperatorSetID: &one, Submitter: AVS,
				Description: "set 1 rewards", Nonce: big.NewInt(0), Hash: SetSubmission, Token: WETH, Amount: eth(10),
				StartTimestamp: uint32(Genesis.Unix()), Duration: 7 * 86400,
				Strategies:      []chain.StrategyMultiplier{{Strategy: StETH, Multiplier: big.NewInt(1e18)}},
				OperatorRewards: []chain.OperatorReward{{Operator: OperatorA, Amount: eth(4)}, {Operator: OperatorB, Amount: eth(6)}}},
			{Position: pos(27, 0), AVS: AVS, Kind: chain.RewardsOperatorDirectedAVS, Submitter: AVS,
				Description: "directed", Nonce: big.NewInt(1), Hash: DirectedSubmission, Token: WETH, Amount: eth(1),
				StartTimestamp: uint32(Genesis.Unix()), Duration: 7 * 86400,
				Strategies:      []chain.StrategyMultiplier{{Strategy: StETH, Multiplier: big.NewInt(1e18)}},
				OperatorRewards: []chain.OperatorReward{{Operator: OperatorA, Amount: eth(1)}}},
			{Position: pos(28, 0), AVS: AVS, Kind: chain.RewardsAVS, Nonce: big.NewInt(2), Hash: AVSSubmission, Token: WETH, Amount: eth(2),
				StartTimestamp: uint32(Genesis.Unix()), Duration: 7 * 86400,
				Strategies: []chain.StrategyMultiplier{{Strategy: StETH, Multiplier: big.NewInt(1e18)}}},
		},
		Head: pos(HeadBlock, 0),
	}
}

// Load writes the network's reference data (every strategy worth 1 ETH per
// share, WETH worth 1 ETH) and the history into db, an empty migrated
// database, and refreshes it as of Now, in one transaction.
func Load(ctx context.Context, db *store.DB) error {
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		return err
	}
	return db.InTx(ctx, func(tx *store.Tx) error {
		var strategies []store.Strategy
		for _, s := range chain.Networks["mainnet"].Strategies {
			strategies = append(strategies, store.Strategy{Strategy: s, ETHPrice: "1"})
		}
		if err := tx.UpsertStrategies(ctx, strategies); err != nil {
			return err
		}
		if err := tx.UpsertTokens(ctx, []store.Token{{Address: WETH, Symbol: "WETH", Decimals: 18, ETHPrice: "1"}}); err != nil {
			return err
		}
		if err := tx.SetMinWithdrawalDelay(ctx, MinWithdrawalDelay); err != nil {
			return err
		}
		b := Batch()
		if err := tx.ApplyBatch(ctx, &b); err != nil {
			return err
		}
		return tx.Refresh(ctx, Now)
	})
}
