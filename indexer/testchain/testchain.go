// Package testchain runs an in-process Ethereum chain (go-ethereum's
// simulated backend) on which EigenLayerMock contracts stand in for the
// EigenLayer core contracts and emit their events with the real signatures.
// The indexer's end-to-end tests script a restaking history on it, serve it
// over HTTP JSON-RPC through a proxy that can inject node failures, and index
// it as they would a real node.
//
// EigenLayerMock.abi and EigenLayerMock.bin are generated from
// EigenLayerMock.sol by the solc version pinned in package.json; regenerate
// them with `go generate ./indexer/testchain` (needs node and npm).
package testchain

//go:generate sh -c "npm ci --no-audit --no-fund --silent && node compile.js"

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	_ "embed"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	bind "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/stakegraph/stakegraph/chain"
)

var (
	//go:embed EigenLayerMock.abi
	mockABIJSON []byte
	//go:embed EigenLayerMock.bin
	mockBin string
)

// MockABI is the ABI of EigenLayerMock.
var MockABI = func() abi.ABI {
	parsed, err := abi.JSON(bytes.NewReader(mockABIJSON))
	if err != nil {
		panic(fmt.Sprintf("testchain: EigenLayerMock.abi: %v", err))
	}
	return parsed
}()

// Chain is a simulated chain with one EigenLayerMock deployed for each
// EigenLayer core contract.
type Chain struct {
	Backend *simulated.Backend
	Client  simulated.Client

	key  *ecdsa.PrivateKey
	opts *bind.TransactOpts
	// nonce is the next nonce of the test account; the pool's pending nonce
	// lags behind transactions sent in quick succession.
	nonce     uint64
	haveNonce bool

	DelegationManager  *Mock
	StrategyManager    *Mock
	EigenPodManager    *Mock
	AVSDirectory       *Mock
	RewardsCoordinator *Mock
	AllocationManager  *Mock
}

// Mock is one deployed EigenLayerMock.
type Mock struct {
	Address common.Address
	chain   *Chain
	bound   *bind.BoundContract
}

// New starts a simulated chain, deploys the core contract stand-ins and
// closes the chain when the test ends.
func New(t testing.TB) *Chain {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	funds := new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(1e18))
	backend := simulated.NewBackend(types.GenesisAlloc{from: {Balance: funds}}, completeBlocks, unindexedLogs)
	t.Cleanup(func() { _ = backend.Close() })
	c := &Chain{Backend: backend, Client: backend.Client(), key: key}
	c.opts, err = bind.NewKeyedTransactor(key, big.NewInt(1337)), nil
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []**Mock{&c.DelegationManager, &c.StrategyManager, &c.EigenPodManager,
		&c.AVSDirectory, &c.RewardsCoordinator, &c.AllocationManager} {
		*m = c.Deploy(t)
	}
	c.Commit()
	return c
}

// Contracts are the core contract addresses of the simulated deployment.
func (c *Chain) Contracts() chain.Contracts {
	lower := func(m *Mock) string { return strings.ToLower(m.Address.Hex()) }
	return chain.Contracts{
		DelegationManager:  lower(c.DelegationManager),
		StrategyManager:    lower(c.StrategyManager),
		EigenPodManager:    lower(c.EigenPodManager),
		AVSDirectory:       lower(c.AVSDirectory),
		RewardsCoordinator: lower(c.RewardsCoordinator),
		AllocationManager:  lower(c.AllocationManager),
	}
}

// Deploy deploys another EigenLayerMock (to stand in for a strategy, a token
// or an AVS service manager). It is mined with the next Commit.
func (c *Chain) Deploy(t testing.TB) *Mock {
	t.Helper()
	addr, _, err := bind.DeployContract(c.txOpts(t), common.FromHex(strings.TrimSpace(mockBin)), c.Client, nil)
	if err != nil {
		t.Fatalf("deploy EigenLayerMock: %v", err)
	}
	return c.At(addr)
}

// At binds an EigenLayerMock already deployed at addr.
func (c *Chain) At(addr common.Address) *Mock {
	return &Mock{Address: addr, chain: c, bound: bind.NewBoundContract(addr, MockABI, c.Client, c.Client, c.Client)}
}

// Transact sends a transaction calling method; it is mined with the next
// Commit.
func (m *Mock) Transact(t testing.TB, method string, args ...any) {
	t.Helper()
	opts := m.chain.txOpts(t)
	if _, err := m.bound.Transact(opts, method, args...); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// txOpts returns transaction options with the account's next nonce and a
// fixed gas limit (estimation would run against a possibly stale state).
func (c *Chain) txOpts(t testing.TB) *bind.TransactOpts {
	t.Helper()
	if !c.haveNonce {
		n, err := c.Client.PendingNonceAt(context.Background(), c.opts.From)
		if err != nil {
			t.Fatal(err)
		}
		c.nonce, c.haveNonce = n, true
	}
	opts := *c.opts
	opts.Nonce = new(big.Int).SetUint64(c.nonce)
	opts.GasLimit = 5_000_000
	c.nonce++
	return &opts
}

// completeBlocks configures a simulated node whose blocks hold every
// pending transaction, however slow the machine. Its miner stops filling a
// block after Recommit (2 s by default) and seals what it has, which a
// race-enabled test on a busy machine can exceed: the rest then waited for
// a block that a script's last Commit never makes, and its events went
// missing.
func completeBlocks(_ *node.Config, ec *ethconfig.Config) {
	ec.Miner.Recommit = time.Hour
}

// unindexedLogs configures a simulated node without a log search index, so
// that eth_getLogs reads every block of the range instead of combining an
// index, which a background goroutine builds as blocks arrive, with a scan
// of the blocks it has not reached. On the test chains' few dozen blocks
// the scan costs nothing, and what a query returns no longer depends on how
// far that goroutine has got on a busy machine.
func unindexedLogs(_ *node.Config, ec *ethconfig.Config) {
	ec.LogNoHistory = true
}

// Commit mines the pending transactions into a new block and returns its
// hash. On a busy machine the simulated node can seal a block before it
// holds every pending transaction (seen as a script's last transactions
// never mined); Commit then mines further blocks until none is pending, so
// every transaction sent before it is mined when it returns.
func (c *Chain) Commit() common.Hash {
	h := c.Backend.Commit()
	for {
		n, err := c.Client.PendingTransactionCount(context.Background())
		if err != nil || n == 0 {
			return h
		}
		h = c.Backend.Commit()
	}
}

// Head returns the current head block.
func (c *Chain) Head(t testing.TB) *types.Header {
	t.Helper()
	h, err := c.Client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Fork abandons the blocks after parent: the next Commits build a side chain
// on top of it, which becomes canonical once it is longer than the current
// one.
func (c *Chain) Fork(t testing.TB, parent common.Hash) {
	t.Helper()
	// The backend refuses to fork while its transaction pool lists a pending
	// transaction, and the pool catches up with a commit asynchronously: drop
	// whatever is pending and try again while it settles.
	var err error
	for try := 0; try < 100; try++ {
		c.Backend.Rollback()
		if err = c.Backend.Fork(parent); err == nil || !strings.Contains(err.Error(), "pending block dirty") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The transaction pool takes back the abandoned blocks' transactions;
	// drop them so that the side chain's history is only what the test
	// sends next (and nonces do not collide with theirs).
	c.Backend.Rollback()
	c.haveNonce = false
}

// AdjustTime moves the clock of the next block forward.
func (c *Chain) AdjustTime(t testing.TB, d time.Duration) {
	t.Helper()
	if err := c.Backend.AdjustTime(d); err != nil {
		t.Fatal(err)
	}
}

// RPC returns the JSON-RPC client of the in-process node.
func (c *Chain) RPC() *rpc.Client {
	// The simulated backend hides its ethclient in an unexported wrapper
	// whose embedded field shadows the promoted Client method; the field
	// itself is exported, so reflection reaches it.
	v := reflect.ValueOf(c.Client)
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("Client"); f.IsValid() && f.CanInterface() {
			if ec, ok := f.Interface().(*ethclient.Client); ok {
				return ec.Client()
			}
		}
	}
	panic(fmt.Sprintf("testchain: cannot reach the RPC client of %T", c.Client))
}

// OperatorDetails mirrors the pre-slashing OperatorDetails struct.
type OperatorDetails struct {
	EarningsReceiver         common.Address
	DelegationApprover       common.Address
	StakerOptOutWindowBlocks uint32
}

// Withdrawal mirrors the DelegationManager's Withdrawal struct.
type Withdrawal struct {
	Staker      common.Address
	DelegatedTo common.Address
	Withdrawer  common.Address
	Nonce       *big.Int
	StartBlock  uint32
	Strategies  []common.Address
	Shares      []*big.Int
}

// StrategyAndMultiplier mirrors the RewardsCoordinator's struct.
type StrategyAndMultiplier struct {
	Strategy   common.Address
	Multiplier *big.Int
}

// RewardsSubmission mirrors the RewardsCoordinator's struct.
type RewardsSubmission struct {
	StrategiesAndMultipliers []StrategyAndMultiplier
	Token                    common.Address
	Amount                   *big.Int
	StartTimestamp           uint32
	Duration                 uint32
}
