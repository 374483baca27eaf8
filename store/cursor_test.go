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

// Addresses of the rollback history.
const (
	rbAVS1    = "0xa100000000000000000000000000000000000001"
	rbAVS2    = "0xa200000000000000000000000000000000000002"
	rbOp1     = "0x0100000000000000000000000000000000000001"
	rbOp2     = "0x0200000000000000000000000000000000000002"
	rbStaker1 = "0x5100000000000000000000000000000000000011"
	rbStaker2 = "0x5200000000000000000000000000000000000022"
	rbStETH   = "0x93c4b944d05dfe6df7645a86cd2206016c51564d"
	rbToken   = "0xae7ab96520de3a18e5e111b5eaab095312d7fe84"
	rbRoot1   = "0x00000000000000000000000000000000000000000000000000000000000000a1"
	rbRoot2   = "0x00000000000000000000000000000000000000000000000000000000000000a2"
)

var rbStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func rbPos(block uint64, log uint32) chain.Position {
	return chain.Position{
		BlockNumber: block,
		BlockHash:   fmt.Sprintf("0x%064x", block),
		BlockTime:   rbStart.Add(time.Duration(block) * 6 * time.Hour),
		TxHash:      fmt.Sprintf("0x%064x", block*1000+uint64(log)),
		LogIndex:    log,
	}
}

func rbEth(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e18)) }

func ptr(s string) *string { return &s }

// rollbackPrefix is the history up to block 10, the common ancestor.
func rollbackPrefix() chain.Batch {
	return chain.Batch{
		MetadataURIs: []chain.MetadataURIUpdated{
			{Position: rbPos(1, 0), Subject: chain.SubjectAVS, Address: rbAVS1, URI: "https://avs1.example/1.json"},
			{Position: rbPos(2, 1), Subject: chain.SubjectOperator, Address: rbOp1, URI: "https://op1.example/1.json"},
		},
		MetadataDocuments: []chain.MetadataDocument{
			{Position: rbPos(1, 0), Subject: chain.SubjectAVS, Address: rbAVS1, Name: "AVS One", Website: ptr("https://avs1.example")},
			{Position: rbPos(2, 1), Subject: chain.SubjectOperator, Address: rbOp1, Name: "Operator One"},
		},
		AVSStrategies:       []chain.AVSStrategies{{Position: rbPos(1, 1), AVS: rbAVS1, Strategies: []string{rbStETH}}},
		OperatorsRegistered: []chain.OperatorRegistered{{Position: rbPos(2, 0), Operator: rbOp1}},
		Registrations:       []chain.RegistrationStatusUpdated{{Position: rbPos(3, 0), Operator: rbOp1, AVS: rbAVS1, Registered: true}},
		Deposits: []chain.Deposit{
			{Position: rbPos(4, 0), Staker: rbStaker1, Token: rbToken, Strategy: rbStETH, Shares: rbEth(10)},
		},
		Delegations: []chain.DelegationEvent{
			{Position: rbPos(5, 0), Type: chain.Delegation, Staker: rbStaker1, Operator: rbOp1},
			{Position: rbPos(5, 1), Type: chain.SharesIncreased, Staker: rbStaker1, Operator: rbOp1, Strategy: rbStETH, Shares: rbEth(10)},
			{Position: rbPos(6, 0), Type: chain.SharesDecreased, Staker: rbStaker1, Operator: rbOp1, Strategy: rbStETH, Shares: rbEth(2)},
		},
		WithdrawalsQueued: []chain.WithdrawalQueued{{
			Position: rbPos(6, 1), Root: rbRoot1, Nonce: big.NewInt(0), Staker: rbStaker1, DelegatedTo: rbOp1,
			Withdrawer: rbStaker1, StartBlock: 6, Strategies: []string{rbStETH}, Shares: []*big.Int{rbEth(2)},
		}},
		RewardsSubmissions: []chain.RewardsSubmission{{
			Position: rbPos(7, 0), AVS: rbAVS1, Nonce: big.NewInt(0), Hash: rbRoot1, Token: rbToken, Amount: rbEth(100),
			StartTimestamp: uint32(rbStart.Unix()), Duration: 86400 * 7,
			Strategies: []chain.StrategyMultiplier{{Strategy: rbStETH, Multiplier: big.NewInt(1e18)}},
		}},
		Head: rbPos(10, 0),
	}
}

// rollbackSuffix is the abandoned history of blocks 11 to 20: it touches
// every kind of entity the prefix created and creates new ones.
func rollbackSuffix() chain.Batch {
	return chain.Batch{
		MetadataURIs: []chain.MetadataURIUpdated{
			{Position: rbPos(11, 0), Subject: chain.SubjectAVS, Address: rbAVS2, URI: "https://avs2.example/1.json"},
			{Position: rbPos(11, 1), Subject: chain.SubjectOperator, Address: rbOp1, URI: "https://op1.example/2.json"},
		},
		MetadataDocuments: []chain.MetadataDocument{
			{Position: rbPos(11, 1), Subject: chain.SubjectOperator, Address: rbOp1, Name: "Operator One, renamed"},
		},
		AVSStrategies: []chain.AVSStrategies{
			{Position: rbPos(12, 0), AVS: rbAVS1, Strategies: []string{rbStETH, chain.BeaconStrategy}},
		},
		OperatorsRegistered: []chain.OperatorRegistered{{Position: rbPos(12, 1), Operator: rbOp2}},
		Registrations: []chain.RegistrationStatusUpdated{
			{Position: rbPos(13, 0), Operator: rbOp1, AVS: rbAVS1, Registered: false},
			{Position: rbPos(13, 1), Operator: rbOp2, AVS: rbAVS2, Registered: true},
		},
		Deposits: []chain.Deposit{
			{Position: rbPos(14, 0), Staker: rbStaker1, Strategy: rbStETH, Shares: rbEth(3)},
			{Position: rbPos(14, 1), Staker: rbStaker2, Strategy: rbStETH, Shares: rbEth(7)},
		},
		PodShares: []chain.PodSharesUpdated{{Position: rbPos(15, 0), PodOwner: rbStaker1, SharesDelta: rbEth(32)}},
		Delegations: []chain.DelegationEvent{
			{Position: rbPos(16, 0), Type: chain.Undelegation, Staker: rbStaker1, Operator: rbOp1},
			{Position: rbPos(16, 1), Type: chain.Delegation, Staker: rbStaker2, Operator: rbOp2},
		},
		WithdrawalsQueued: []chain.WithdrawalQueued{{
			Position: rbPos(17, 0), Root: rbRoot2, Nonce: big.NewInt(1), Staker: rbStaker1, DelegatedTo: chain.ZeroAddress,
			Withdrawer: rbStaker1, StartBlock: 17, Strategies: []string{rbStETH}, Shares: []*big.Int{rbEth(1)},
		}},
		WithdrawalsDone: []chain.WithdrawalCompleted{{Position: rbPos(18, 0), Root: rbRoot1}},
		RewardsSubmissions: []chain.RewardsSubmission{{
			Position: rbPos(19, 0), AVS: rbAVS2, Nonce: big.NewInt(1), Hash: rbRoot2, Token: rbToken, Amount: rbEth(5),
			StartTimestamp: uint32(rbStart.Unix()), Duration: 86400,
			Strategies: []chain.StrategyMultiplier{{Strategy: rbStETH, Multiplier: big.NewInt(1e18)}},
		}},
		Head: rbPos(20, 0),
	}
}

// applyAndRefresh seeds the reference strategies (as the indexer does
// before its first batch) and applies each batch in its own transaction with
// the cursor and a refresh.
func applyAndRefresh(t *testing.T, db *store.DB, now time.Time, batches ...chain.Batch) {
	t.Helper()
	ctx := context.Background()
	var strategies []store.Strategy
	for _, s := range chain.Networks["mainnet"].Strategies {
		strategies = append(strategies, store.Strategy{Strategy: s, ETHPrice: "1"})
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.UpsertStrategies(ctx, strategies) }); err != nil {
		t.Fatal(err)
	}
	for i := range batches {
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.ApplyBatch(ctx, &batches[i]); err != nil {
				return err
			}
			if err := tx.SetCursor(ctx, store.Cursor{Block: batches[i].Head.BlockNumber, Hash: batches[i].Head.BlockHash},
				[]store.IndexedBlock{{Number: batches[i].Head.BlockNumber, Hash: batches[i].Head.BlockHash}}); err != nil {
				return err
			}
			return tx.Refresh(ctx, now)
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// dumpState renders the database's content for comparisons, numbers
// compared exactly.
func dumpState(t *testing.T, db *store.DB) string {
	t.Helper()
	return storetest.DumpState(t, db, 0)
}

func TestRollbackAfterRestoresTheAncestorState(t *testing.T) {
	ctx := context.Background()
	now := rbStart.Add(30 * 24 * time.Hour)

	want := storetest.New(t)
	applyAndRefresh(t, want, now, rollbackPrefix())

	got := storetest.New(t)
	applyAndRefresh(t, got, now, rollbackPrefix(), rollbackSuffix())
	if dumpState(t, got) == dumpState(t, want) {
		t.Fatal("the suffix changed nothing; the test proves nothing")
	}
	ancestor := rbPos(10, 0)
	if err := got.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.RollbackAfter(ctx, 10); err != nil {
			return err
		}
		if err := tx.SetHead(ctx, ancestor); err != nil {
			return err
		}
		if err := tx.SetCursor(ctx, store.Cursor{Block: 10, Hash: ancestor.BlockHash}, nil); err != nil {
			return err
		}
		return tx.Refresh(ctx, now)
	}); err != nil {
		t.Fatal(err)
	}

	// The operator's document of block 2 was overwritten by the abandoned
	// one of block 11 and dropped with it: it is pending again, and the
	// indexer fetches it anew.
	pending, err := got.PendingMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Address != rbOp1 || pending[0].URI != "https://op1.example/1.json" ||
		pending[0].Position.BlockNumber != 2 || pending[0].LogIndex != 1 {
		t.Fatalf("pending metadata after rollback = %+v", pending)
	}
	refetched := chain.Batch{MetadataDocuments: []chain.MetadataDocument{rollbackPrefix().MetadataDocuments[1]}}
	if err := got.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.ApplyBatch(ctx, &refetched); err != nil {
			return err
		}
		return tx.Refresh(ctx, now)
	}); err != nil {
		t.Fatal(err)
	}
	if g, w := dumpState(t, got), dumpState(t, want); g != w {
		t.Errorf("state after rollback differs from the ancestor's state:\n%s", storetest.LineDiff(w, g))
	}
	if pending, err := got.PendingMetadata(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending after refetch = %+v, %v", pending, err)
	}
}

func TestCursorAndIndexedBlocks(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	if _, ok, err := db.Cursor(ctx); err != nil || ok {
		t.Fatalf("fresh cursor: ok %v err %v", ok, err)
	}
	hash := func(n uint64) string { return fmt.Sprintf("0x%064x", n) }
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		var blocks []store.IndexedBlock
		for n := uint64(100); n <= 110; n++ {
			blocks = append(blocks, store.IndexedBlock{Number: n, Hash: hash(n)})
		}
		return tx.SetCursor(ctx, store.Cursor{Block: 110, Hash: hash(110)}, blocks)
	}); err != nil {
		t.Fatal(err)
	}
	c, ok, err := db.Cursor(ctx)
	if err != nil || !ok || c != (store.Cursor{Block: 110, Hash: hash(110)}) {
		t.Fatalf("cursor = %+v %v %v", c, ok, err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		got, err := tx.IndexedBlocks(ctx, 105, 3)
		if err != nil {
			return err
		}
		want := []store.IndexedBlock{{Number: 105, Hash: hash(105)}, {Number: 104, Hash: hash(104)}, {Number: 103, Hash: hash(103)}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("IndexedBlocks = %v, want %v", got, want)
		}
		if err := tx.PruneIndexedBlocks(ctx, 200); err != nil {
			return err
		}
		left, err := tx.IndexedBlocks(ctx, 1000, 100)
		if err != nil {
			return err
		}
		if len(left) != 1 || left[0].Number != 110 {
			t.Errorf("after pruning everything below 200: %v, want only the cursor's block", left)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
