package indexer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/indexer/testchain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// world is a simulated EigenLayer deployment with actors and a metadata
// web server, on which tests script histories.
type world struct {
	t       *testing.T
	c       *testchain.Chain
	proxy   *testchain.Proxy
	network chain.Network
	meta    *httptest.Server

	strat1, strat2, newStrat *testchain.Mock // strategies
	token1, token2           *testchain.Mock // their underlying tokens
	rewardToken              *testchain.Mock
	avs1, avs2               *testchain.Mock // AVS service managers

	op1, op2, staker1, staker2, staker3 common.Address
}

var e18 = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

func ether(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), e18) }

func actor(name string) common.Address {
	return common.BytesToAddress(crypto.Keccak256([]byte(name))[12:])
}

func lowerHex(a common.Address) string { return strings.ToLower(a.Hex()) }

// newWorld deploys the contracts and configures the views the indexer reads.
func newWorld(t *testing.T) *world {
	t.Helper()
	c := testchain.New(t)
	w := &world{t: t, c: c,
		op1: actor("operator one"), op2: actor("operator two"),
		staker1: actor("staker one"), staker2: actor("staker two"), staker3: actor("staker three"),
	}
	w.strat1, w.strat2, w.newStrat = c.Deploy(t), c.Deploy(t), c.Deploy(t)
	w.token1, w.token2, w.rewardToken = c.Deploy(t), c.Deploy(t), c.Deploy(t)
	w.avs1, w.avs2 = c.Deploy(t), c.Deploy(t)
	c.Commit()
	w.strat1.Transact(t, "setStrategy", new(big.Int).Mul(big.NewInt(11), big.NewInt(1e17)), w.token1.Address) // 1.1
	w.strat2.Transact(t, "setStrategy", e18, w.token2.Address)
	w.newStrat.Transact(t, "setStrategy", new(big.Int).Mul(big.NewInt(2), e18), w.token2.Address)
	w.token1.Transact(t, "setToken", "stTEST", uint8(18))
	w.token2.Transact(t, "setToken", "rTEST", uint8(18))
	w.rewardToken.Transact(t, "setToken", "RWD", uint8(6))
	w.avs1.Transact(t, "setRestakeableStrategies", []common.Address{w.strat1.Address, common.HexToAddress(chain.BeaconStrategy)})
	w.avs2.Transact(t, "setRestakeableStrategies", []common.Address{w.strat2.Address})
	c.DelegationManager.Transact(t, "setMinWithdrawalDelayBlocks", big.NewInt(100))
	c.Commit()

	w.proxy = testchain.NewProxy(t, c.RPC())
	w.network = chain.Network{
		Name:       "simulated",
		ChainID:    1337,
		StartBlock: 1,
		Contracts:  c.Contracts(),
		Strategies: []chain.Strategy{
			{Symbol: "Beacon ETH", Address: chain.BeaconStrategy, Decimals: 18, Kind: chain.KindBeacon},
			{Symbol: "stTEST", Address: lowerHex(w.strat1.Address), UnderlyingToken: lowerHex(w.token1.Address), Decimals: 18, Kind: chain.KindLiquid},
			// The underlying of this one is read from the chain.
			{Symbol: "rTEST", Address: lowerHex(w.strat2.Address), Decimals: 18, Kind: chain.KindLiquid},
		},
	}
	w.meta = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/avs1.json":
			fmt.Fprint(rw, `{"name":"AVS One","website":"https://avs1.example","description":"First AVS","logo":"https://avs1.example/logo.png","twitter":"https://x.com/avs1"}`)
		case "/avs2.json":
			fmt.Fprint(rw, `{"name":"AVS Two","discord":"https://discord.gg/avs2","telegram":"https://t.me/avs2"}`)
		case "/op1.json":
			fmt.Fprint(rw, `{"name":"Operator One","website":"https://op1.example","description":42}`)
		case "/op1-v2.json":
			fmt.Fprint(rw, `{"name":"Operator One v2"}`)
		case "/broken.json":
			http.Error(rw, "boom", http.StatusInternalServerError)
		case "/notjson.json":
			fmt.Fprint(rw, `<html>not json</html>`)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(w.meta.Close)
	return w
}

// script emits a restaking history with every event variant: register,
// publish metadata, register to AVS, deposit, delegate, queue and complete
// withdrawals (both variants), submit rewards, undelegate, deregister.
func (w *world) script() {
	t, c := w.t, w.c
	beacon := common.HexToAddress(chain.BeaconStrategy)
	head := func() uint32 { return uint32(c.Head(t).Number.Uint64()) }

	c.AVSDirectory.Transact(t, "updateAVSMetadataURI", w.avs1.Address, w.meta.URL+"/avs1.json")
	c.AllocationManager.Transact(t, "updateAVSMetadataURI", w.avs2.Address, w.meta.URL+"/avs2.json")
	c.Commit()
	c.DelegationManager.Transact(t, "registerOperatorV1", w.op1, testchain.OperatorDetails{EarningsReceiver: w.op1, StakerOptOutWindowBlocks: 50400})
	c.DelegationManager.Transact(t, "updateOperatorMetadataURI", w.op1, w.meta.URL+"/op1.json")
	c.DelegationManager.Transact(t, "registerOperatorV2", w.op2, common.Address{})
	c.DelegationManager.Transact(t, "updateOperatorMetadataURI", w.op2, w.meta.URL+"/broken.json")
	c.Commit()
	c.AVSDirectory.Transact(t, "updateRegistration", w.op1, w.avs1.Address, uint8(1))
	c.AVSDirectory.Transact(t, "updateRegistration", w.op2, w.avs1.Address, uint8(1))
	c.AVSDirectory.Transact(t, "updateRegistration", w.op2, w.avs2.Address, uint8(1))
	c.Commit()
	c.StrategyManager.Transact(t, "depositV1", w.staker1, w.token1.Address, w.strat1.Address, ether(10))
	c.StrategyManager.Transact(t, "depositV2", w.staker2, w.strat2.Address, ether(5))
	c.StrategyManager.Transact(t, "depositV2", w.staker3, w.strat1.Address, ether(2))
	c.EigenPodManager.Transact(t, "deployPod", actor("pod one"), w.staker1)
	c.EigenPodManager.Transact(t, "updatePodShares", w.staker1, ether(32))
	c.Commit()
	c.Commit() // an empty block
	c.DelegationManager.Transact(t, "delegate", w.staker1, w.op1)
	c.DelegationManager.Transact(t, "increaseOperatorShares", w.op1, w.staker1, w.strat1.Address, ether(10))
	c.DelegationManager.Transact(t, "increaseOperatorShares", w.op1, w.staker1, beacon, ether(32))
	c.DelegationManager.Transact(t, "delegate", w.staker2, w.op2)
	c.DelegationManager.Transact(t, "increaseOperatorShares", w.op2, w.staker2, w.strat2.Address, ether(5))
	c.Commit()
	root1 := [32]byte{0x01}
	root2 := [32]byte{0x02}
	c.DelegationManager.Transact(t, "queueWithdrawal", root1, testchain.Withdrawal{
		Staker: w.staker1, DelegatedTo: w.op1, Withdrawer: w.staker1, Nonce: big.NewInt(0), StartBlock: head(),
		Strategies: []common.Address{w.strat1.Address}, Shares: []*big.Int{ether(4)},
	})
	c.DelegationManager.Transact(t, "decreaseOperatorShares", w.op1, w.staker1, w.strat1.Address, ether(4))
	c.DelegationManager.Transact(t, "queueSlashingWithdrawal", root2, testchain.Withdrawal{
		Staker: w.staker2, DelegatedTo: w.op2, Withdrawer: w.staker2, Nonce: big.NewInt(0), StartBlock: head(),
		Strategies: []common.Address{w.strat2.Address}, Shares: []*big.Int{ether(1)}, // scaled shares: no scaling factor set, so equal to the withdrawable shares
	}, []*big.Int{ether(1)})
	c.DelegationManager.Transact(t, "decreaseOperatorShares", w.op2, w.staker2, w.strat2.Address, ether(1))
	c.Commit()
	c.DelegationManager.Transact(t, "completeWithdrawal", root1)
	c.DelegationManager.Transact(t, "migrateWithdrawal", [32]byte{0xaa}, [32]byte{0xbb})
	c.StrategyManager.Transact(t, "whitelistStrategy", w.newStrat.Address)
	c.StrategyManager.Transact(t, "depositV2", w.staker3, w.newStrat.Address, ether(1))
	c.StrategyManager.Transact(t, "unwhitelistStrategy", w.newStrat.Address)
	c.Commit()
	start := uint32(c.Head(t).Time) / 86400 * 86400
	c.RewardsCoordinator.Transact(t, "submitRewards", w.avs1.Address, big.NewInt(0), [32]byte{0xd1},
		testchain.RewardsSubmission{
			StrategiesAndMultipliers: []testchain.StrategyAndMultiplier{{Strategy: w.strat1.Address, Multiplier: e18}, {Strategy: beacon, Multiplier: e18}},
			Token:                    w.rewardToken.Address, Amount: big.NewInt(7_000_000_000), StartTimestamp: start, Duration: 7 * 86400,
		})
	c.RewardsCoordinator.Transact(t, "submitRewardsForAll", w.op1, big.NewInt(1), [32]byte{0xd2},
		testchain.RewardsSubmission{
			StrategiesAndMultipliers: []testchain.StrategyAndMultiplier{{Strategy: w.strat2.Address, Multiplier: big.NewInt(3)}},
			Token:                    w.rewardToken.Address, Amount: big.NewInt(1_000_000), StartTimestamp: start, Duration: 86400,
		})
	c.RewardsCoordinator.Transact(t, "submitRoot", uint32(0), [32]byte{0xcc}, start, start+3600)
	c.Commit()
	c.DelegationManager.Transact(t, "undelegate", w.staker2, w.op2)
	c.DelegationManager.Transact(t, "decreaseOperatorShares", w.op2, w.staker2, w.strat2.Address, ether(4))
	c.AVSDirectory.Transact(t, "updateRegistration", w.op2, w.avs1.Address, uint8(0))
	// A forced undelegation: the contract emits both events.
	c.DelegationManager.Transact(t, "forceUndelegate", w.staker3, w.op2)
	c.DelegationManager.Transact(t, "undelegate", w.staker3, w.op2)
	c.Commit()
}

// testETHSupply is the ETH supply source of the test indexers.
const testETHSupply = StaticSupply("120450000.5")

// config returns an indexer configuration for the world with small ranges
// (so that the history spans several batches) and quick retries.
func (w *world) config(now time.Time) Config {
	return Config{
		Network:       w.network,
		Confirmations: 0,
		InitialRange:  3,
		MaxRange:      4,
		TargetLogs:    1000,
		ReorgWindow:   1000,
		Prices: StaticPrices{
			lowerHex(w.token1.Address):      "1.05",
			lowerHex(w.token2.Address):      "0.5",
			lowerHex(w.rewardToken.Address): "0.001",
		},
		ETHSupply: testETHSupply,
		Metadata: NewMetadataFetcher(MetadataOptions{
			AllowPrivateAddresses: true, Attempts: 2, Backoff: time.Millisecond, Timeout: 2 * time.Second,
		}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:    func() time.Time { return now },
	}
}

// node connects to the world's proxy with quick retries.
func (w *world) node(metrics *Metrics) *Node {
	w.t.Helper()
	n, err := Dial(context.Background(), w.proxy.URL, NodeOptions{
		CallTimeout: 2 * time.Second,
		Retry:       RetryPolicy{Attempts: 4, Initial: time.Millisecond, Max: 5 * time.Millisecond},
		Metrics:     metrics,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(n.Close)
	return n
}

// index indexes the world into db until caught up and fetches metadata.
func (w *world) index(db *store.DB, cfg Config) *Indexer {
	w.t.Helper()
	ctx := context.Background()
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	ix, err := New(db, w.node(cfg.Metrics), cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := ix.Setup(ctx); err != nil {
		w.t.Fatalf("setup: %v", err)
	}
	if err := ix.CatchUp(ctx); err != nil {
		w.t.Fatalf("catch up: %v", err)
	}
	if err := ix.FetchMetadata(ctx); err != nil {
		w.t.Fatalf("metadata: %v", err)
	}
	return ix
}

// freshIndex indexes the world's current chain into a new database.
func (w *world) freshIndex(now time.Time) *store.DB {
	w.t.Helper()
	db := storetest.New(w.t)
	w.index(db, w.config(now))
	return db
}

var dumpMu sync.Mutex

// dumpState renders the database's content for comparisons, numbers
// rounded to 18 decimals: the indexed and the fresh database may compute
// the same ratio through different paths. One dump at a time.
func dumpState(t *testing.T, db *store.DB) string {
	t.Helper()
	dumpMu.Lock()
	defer dumpMu.Unlock()
	return storetest.DumpState(t, db, 18)
}

func bigU(n uint64) *big.Int { return new(big.Int).SetUint64(n) }
