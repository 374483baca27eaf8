package indexer

import (
	"context"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// generatedStream builds n logs of a plausible mix (deposits and share
// changes dominate, as on mainnet) over a population of stakers, operators
// and AVS, packed exactly as the chain emits them, 20 logs a block.
func generatedStream(tb testing.TB, n int) []types.Log {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	addr := func(kind byte, i int) common.Address {
		var a common.Address
		a[0] = kind
		a[18], a[19] = byte(i>>8), byte(i)
		return a
	}
	strategies := []common.Address{
		common.HexToAddress("0x93c4b944D05dfe6df7645A86cd2206016c51564D"),
		common.HexToAddress("0x1BeE69b7dFFfA4E2d53C2a2Df135C388AD25dCD2"),
		common.HexToAddress("0x54945180dB7943c0ed0FEE7EdaB2Bd24620256bc"),
	}
	c := testContracts
	logs := make([]types.Log, 0, n)
	for i := 0; len(logs) < n; i++ {
		staker := addr(0x51, rng.IntN(5000))
		op := addr(0x0e, rng.IntN(200))
		avs := addr(0xa5, rng.IntN(30))
		strat := strategies[rng.IntN(len(strategies))]
		shares := new(big.Int).Mul(big.NewInt(int64(rng.IntN(1000)+1)), big.NewInt(1e15))
		var lg types.Log
		switch r := rng.IntN(100); {
		case r < 30:
			lg = buildLog(tb, c.StrategyManager, "Deposit(address,address,uint256)", nil, staker, strat, shares)
		case r < 55:
			lg = buildLog(tb, c.DelegationManager, "OperatorSharesIncreased(address,address,address,uint256)", []any{op}, staker, strat, shares)
		case r < 65:
			lg = buildLog(tb, c.DelegationManager, "StakerDelegated(address,address)", []any{staker, op})
		case r < 70:
			lg = buildLog(tb, c.DelegationManager, "StakerUndelegated(address,address)", []any{staker, op})
		case r < 78:
			lg = buildLog(tb, c.EigenPodManager, "PodSharesUpdated(address,int256)", []any{staker}, new(big.Int).Mul(big.NewInt(32), big.NewInt(1e18)))
		case r < 86:
			var root [32]byte
			root[0], root[1], root[2], root[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
			lg = buildLog(tb, c.DelegationManager,
				"WithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]))", nil, root,
				withdrawalTuple{Staker: staker, DelegatedTo: op, Withdrawer: staker, Nonce: big.NewInt(int64(i)),
					StartBlock: uint32(i / 20), Strategies: []common.Address{strat}, Shares: []*big.Int{big.NewInt(1)}})
		case r < 94:
			lg = buildLog(tb, c.AVSDirectory, "OperatorAVSRegistrationStatusUpdated(address,address,uint8)", []any{op, avs}, uint8(rng.IntN(2)))
		case r < 97:
			lg = buildLog(tb, c.DelegationManager, "OperatorRegistered(address,address)", []any{op}, common.Address{})
		default:
			lg = buildLog(tb, c.AVSDirectory, "AVSMetadataURIUpdated(address,string)", []any{avs}, "https://example.org/avs.json")
		}
		lg.BlockNumber = uint64(1 + len(logs)/20)
		lg.Index = uint(len(logs) % 20)
		lg.TxHash = common.BigToHash(big.NewInt(int64(len(logs) + 1)))
		lg.BlockHash = common.BigToHash(big.NewInt(int64(lg.BlockNumber)))
		lg.BlockTimestamp = uint64(1_700_000_000 + 12*lg.BlockNumber)
		logs = append(logs, lg)
	}
	return logs
}

// BenchmarkDecode measures log decoding alone.
func BenchmarkDecode(b *testing.B) {
	logs := generatedStream(b, 10_000)
	dec, err := NewDecoder(testContracts)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		var batch chain.Batch
		var obs Observations
		for i := range logs {
			if err := dec.Decode(&logs[i], time.Unix(int64(logs[i].BlockTimestamp), 0), &batch, &obs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(logs)*b.N)/b.Elapsed().Seconds(), "logs/s")
}

// BenchmarkDecodeApply measures decode + apply throughput: a generated
// stream decoded in batches of 2000 logs, each applied in its own
// transaction with the sync cursor, as the indexer does while backfilling.
func BenchmarkDecodeApply(b *testing.B) {
	const total, perBatch = 20_000, 2_000
	logs := generatedStream(b, total)
	dec, err := NewDecoder(testContracts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		db := storetest.New(b)
		b.StartTimer()
		for start := 0; start < total; start += perBatch {
			var batch chain.Batch
			var obs Observations
			chunk := logs[start:min(start+perBatch, total)]
			for i := range chunk {
				if err := dec.Decode(&chunk[i], time.Unix(int64(chunk[i].BlockTimestamp), 0), &batch, &obs); err != nil {
					b.Fatal(err)
				}
			}
			last := chunk[len(chunk)-1]
			batch.Head = chain.Position{BlockNumber: last.BlockNumber, BlockHash: hexLower(last.BlockHash[:]),
				BlockTime: time.Unix(int64(last.BlockTimestamp), 0).UTC()}
			if err := db.InTx(ctx, func(tx *store.Tx) error {
				if err := tx.ApplyBatch(ctx, &batch); err != nil {
					return err
				}
				return tx.SetCursor(ctx, store.Cursor{Block: last.BlockNumber, Hash: batch.Head.BlockHash},
					[]store.IndexedBlock{{Number: last.BlockNumber, Hash: batch.Head.BlockHash}})
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "logs/s")
}

// TestGeneratedStreamApplies keeps the benchmark's stream honest: every log
// decodes and applies, and the result has the expected shape.
func TestGeneratedStreamApplies(t *testing.T) {
	logs := generatedStream(t, 2_000)
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	var batch chain.Batch
	var obs Observations
	for i := range logs {
		if err := dec.Decode(&logs[i], time.Unix(int64(logs[i].BlockTimestamp), 0), &batch, &obs); err != nil {
			t.Fatal(err)
		}
	}
	if batch.Len() != len(logs) || len(batch.Deposits) == 0 || len(batch.WithdrawalsQueued) == 0 {
		t.Fatalf("decoded %d events of %d logs (%d deposits, %d withdrawals)", batch.Len(), len(logs),
			len(batch.Deposits), len(batch.WithdrawalsQueued))
	}
	db := storetest.New(t)
	ctx := context.Background()
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyBatch(ctx, &batch) }); err != nil {
		t.Fatal(err)
	}
	var deposits int
	if err := storetest.SQL(t, db).GetContext(ctx, &deposits, `SELECT count(*) FROM deposits`); err != nil {
		t.Fatal(err)
	}
	if deposits != len(batch.Deposits) {
		t.Errorf("stored %d deposits of %d", deposits, len(batch.Deposits))
	}
}
