// Package slashingchain deploys the real EigenLayer v1.4.1 core contracts
// (the slashing-era DelegationManager, StrategyManager, AllocationManager,
// RewardsCoordinator and the rest, built from the bindings of the
// github.com/Layr-Labs/eigenlayer-contracts module) on go-ethereum's simulated
// backend and scripts a restaking history on them: operators, deposits,
// delegations, an operator set with allocations, a slash, withdrawals after
// it and rewards submissions. The indexer's end-to-end tests index that
// history over HTTP JSON-RPC and compare what they stored with the
// contracts' own view functions, which the package calls with eth_call.
//
// Each core contract is an implementation behind an ERC-1167 minimal proxy
// (the implementations disable their initializers, as they do behind the
// upgradeable proxies of a real deployment); the constructors' circular
// references are resolved by predicting the proxies' addresses from the
// deployer's nonce. The delays are a few blocks long so that a whole history
// fits in about two hundred blocks.
//
// The strategy's underlying token and the AVS registrar are the two small
// contracts of TestContracts.sol. TestToken.abi, TestToken.bin,
// TestAVSRegistrar.abi and TestAVSRegistrar.bin are generated from it by the
// solc version pinned in package.json; regenerate them with
// `go generate ./indexer/slashingchain` (needs node and npm).
package slashingchain

//go:generate sh -c "npm ci --no-audit --no-fund --silent && node compile.js"

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/AVSDirectory"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/AllocationManager"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/DelegationManager"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/EigenPodManager"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/PauserRegistry"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/PermissionController"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/RewardsCoordinator"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/StrategyBase"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/StrategyManager"
	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	bind "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/indexer/testchain"
)

var (
	//go:embed TestToken.abi
	tokenABIJSON []byte
	//go:embed TestToken.bin
	tokenBin string
	//go:embed TestAVSRegistrar.abi
	registrarABIJSON []byte
	//go:embed TestAVSRegistrar.bin
	registrarBin string
)

// TokenABI is the ABI of TestToken, the strategy's underlying ERC20.
var TokenABI = mustABI("TestToken.abi", string(tokenABIJSON))

// RegistrarABI is the ABI of TestAVSRegistrar, the AVS's registrar.
var RegistrarABI = mustABI("TestAVSRegistrar.abi", string(registrarABIJSON))

func mustABI(name, j string) abi.ABI {
	parsed, err := abi.JSON(strings.NewReader(j))
	if err != nil {
		panic(fmt.Sprintf("slashingchain: %s: %v", name, err))
	}
	return parsed
}

// GasLimit is the gas limit of every transaction (just under the
// per-transaction cap of the simulated chain's forks). Transactions are not
// sent with an estimate: the estimates of the slashing contracts' calls can
// fall short (queueWithdrawals ran out of gas with one).
const GasLimit = 16_000_000

// ChainID is the simulated backend's chain id.
const ChainID = 1337

// Version is the semantic version the contracts are constructed with.
const Version = "v1.4.1"

// The protocol parameters of the deployment. The delays are in blocks.
const (
	// MinWithdrawalDelayBlocks is the DelegationManager's
	// MIN_WITHDRAWAL_DELAY_BLOCKS: a withdrawal queued at block b completes
	// from block b+MinWithdrawalDelayBlocks+1 on.
	MinWithdrawalDelayBlocks = 5
	// DeallocationDelay is the AllocationManager's DEALLOCATION_DELAY.
	DeallocationDelay = 5
	// AllocationConfigurationDelay is the AllocationManager's
	// ALLOCATION_CONFIGURATION_DELAY: an allocation delay set at block b
	// takes effect at block b+AllocationConfigurationDelay+1.
	AllocationConfigurationDelay = 3
	// OperatorAllocationDelay is the allocation delay the history's
	// operators choose: an allocation made at block b takes effect at block
	// b+OperatorAllocationDelay.
	OperatorAllocationDelay = 2

	// CalculationIntervalSeconds is the RewardsCoordinator's
	// CALCULATION_INTERVAL_SECONDS (it must be a multiple of the contract's
	// one-day snapshot cadence).
	CalculationIntervalSeconds = 86400
	// MaxRewardsDuration, MaxRetroactiveLength and MaxFutureLength are the
	// RewardsCoordinator's limits, in seconds.
	MaxRewardsDuration   = 30 * 86400
	MaxRetroactiveLength = 30 * 86400
	MaxFutureLength      = 30 * 86400
	// GenesisRewardsDaysBack is how many calculation intervals before the
	// day of deployment the GENESIS_REWARDS_TIMESTAMP lies, so that
	// retroactive (operator-directed) submissions can be made at once.
	GenesisRewardsDaysBack = 7
	// ActivationDelay is the RewardsCoordinator's activation delay of
	// distribution roots, in seconds.
	ActivationDelay = 3600
	// DefaultOperatorSplitBips is the RewardsCoordinator's default operator
	// split.
	DefaultOperatorSplitBips = 1000
)

// WAD is 1e18, the unit of magnitudes and slashing factors.
var WAD = new(big.Int).Set(chain.WAD)

// OperatorSet is the AllocationManager's OperatorSet struct.
type OperatorSet = AllocationManager.OperatorSet

// Allocation is the AllocationManager's Allocation struct.
type Allocation = AllocationManager.IAllocationManagerTypesAllocation

// Withdrawal is the DelegationManager's Withdrawal struct.
type Withdrawal = DelegationManager.IDelegationManagerTypesWithdrawal

// Core holds the addresses of the deployment's core contracts: the proxies
// (which hold the state and emit the events) and their implementations.
type Core struct {
	PauserRegistry       common.Address
	PermissionController common.Address
	AllocationManager    common.Address
	AVSDirectory         common.Address
	DelegationManager    common.Address
	StrategyManager      common.Address
	EigenPodManager      common.Address
	RewardsCoordinator   common.Address

	// Implementations maps each proxied contract's name (as the fields
	// above spell it, plus "StrategyBase") to its implementation.
	Implementations map[string]common.Address
}

// Bindings are the bound core contracts (at their proxies).
type Bindings struct {
	PermissionController *PermissionController.PermissionController
	AllocationManager    *AllocationManager.AllocationManager
	AVSDirectory         *AVSDirectory.AVSDirectory
	DelegationManager    *DelegationManager.DelegationManager
	StrategyManager      *StrategyManager.StrategyManager
	EigenPodManager      *EigenPodManager.EigenPodManager
	RewardsCoordinator   *RewardsCoordinator.RewardsCoordinator
	Strategy             *StrategyBase.StrategyBase
	Token                *bind.BoundContract
	Registrar            *bind.BoundContract
}

// Chain is a simulated chain with the EigenLayer core contracts deployed and
// funded accounts to act on them.
type Chain struct {
	Backend *simulated.Backend
	Client  simulated.Client

	Core     Core
	Bindings Bindings

	// Token is TestToken ("TEST"), the strategy's underlying token and the
	// rewards token; Strategy is the StrategyBase proxy over it, whitelisted
	// for deposits.
	Token    common.Address
	Strategy common.Address
	// Registrar is the TestAVSRegistrar that the AVS sets as its registrar.
	Registrar common.Address

	// Deployer deployed and owns every contract; it is the pauser, the
	// strategy whitelister and the rewards updater.
	Deployer common.Address
	// AVS is the AVS (an account: the AllocationManager knows an AVS by the
	// address that calls it, and calls its registrar).
	AVS common.Address
	// Operators and Stakers are the history's actors. Their keys are
	// derived from fixed seeds, so their addresses are the same in every
	// run (and so are the contracts', which depend only on the deployer's
	// address and nonce).
	Operators [2]common.Address
	Stakers   [3]common.Address

	// GenesisRewardsTimestamp is the RewardsCoordinator's
	// GENESIS_REWARDS_TIMESTAMP: GenesisRewardsDaysBack calculation
	// intervals before the start of the day of deployment.
	GenesisRewardsTimestamp uint32
	// DeployedBlock is the block of the deployment's last transaction.
	DeployedBlock uint64

	keys   map[common.Address]*ecdsa.PrivateKey
	nonces map[common.Address]uint64
}

// Deploy starts a simulated chain, deploys the core contracts, the token,
// the strategy and the registrar, and closes the chain when the test ends.
// Every transaction is mined in a block of its own.
func Deploy(t testing.TB) *Chain {
	t.Helper()
	c := &Chain{keys: make(map[common.Address]*ecdsa.PrivateKey), nonces: make(map[common.Address]uint64)}
	c.Deployer = c.account("deployer")
	c.AVS = c.account("avs")
	for i := range c.Operators {
		c.Operators[i] = c.account(fmt.Sprintf("operator%d", i+1))
	}
	for i := range c.Stakers {
		c.Stakers[i] = c.account(fmt.Sprintf("staker%d", i+1))
	}
	funds := new(big.Int).Mul(big.NewInt(1_000_000), WAD)
	alloc := types.GenesisAlloc{}
	for addr := range c.keys {
		alloc[addr] = types.Account{Balance: funds}
	}
	// Archive mode keeps the state of every block, so that the views can
	// be read at any block of the history.
	c.Backend = simulated.NewBackend(alloc, func(_ *node.Config, ec *ethconfig.Config) {
		ec.NoPruning = true
		ec.StateScheme = rawdb.HashScheme
		// Blocks hold every pending transaction however slow the machine:
		// the miner seals a partial block after Recommit (2 s by default).
		ec.Miner.Recommit = time.Hour
	})
	t.Cleanup(func() { _ = c.Backend.Close() })
	c.Client = c.Backend.Client()
	c.deploy(t)
	return c
}

// account derives the key of a named actor from a fixed seed.
func (c *Chain) account(name string) common.Address {
	key, err := crypto.ToECDSA(crypto.Keccak256([]byte("stakegraph/slashingchain/" + name)))
	if err != nil {
		panic(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	c.keys[addr] = key
	return addr
}

// deploy deploys and initializes the contracts.
func (c *Chain) deploy(t testing.TB) {
	t.Helper()
	d := c.Deployer
	pauserRegistry := c.deployed(t, "PauserRegistry", func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
		a, tx, _, err := PauserRegistry.DeployPauserRegistry(o, c.Client, []common.Address{d}, d)
		return a, tx, err
	})
	c.Core.PauserRegistry = pauserRegistry
	c.Token = c.deployed(t, "TestToken", func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
		args, err := TokenABI.Pack("", "Slashing Test Token", "TEST")
		if err != nil {
			return common.Address{}, nil, err
		}
		return bind.DeployContract(o, common.FromHex(strings.TrimSpace(tokenBin)), c.Client, args)
	})
	c.Registrar = c.deployed(t, "TestAVSRegistrar", func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
		return bind.DeployContract(o, common.FromHex(strings.TrimSpace(registrarBin)), c.Client, nil)
	})

	// The implementations come next, then one proxy for each in the same
	// order: the proxies' addresses follow from the deployer's nonce.
	names := []string{"PermissionController", "AllocationManager", "AVSDirectory", "DelegationManager",
		"StrategyManager", "EigenPodManager", "RewardsCoordinator", "StrategyBase"}
	proxy := make(map[string]common.Address, len(names))
	first := c.nonces[d] + uint64(len(names))
	for i, name := range names {
		proxy[name] = crypto.CreateAddress(d, first+uint64(i))
	}
	// The head is a block the deployment mined, stamped with the clock (the
	// genesis block's timestamp is 0).
	head, err := c.Client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	day := head.Time / CalculationIntervalSeconds * CalculationIntervalSeconds
	c.GenesisRewardsTimestamp = uint32(day - GenesisRewardsDaysBack*CalculationIntervalSeconds)

	// EigenPods are not part of the history: the deployer's address stands
	// in for the beacon deposit contract and the EigenPod beacon, which the
	// EigenPodManager only stores at construction.
	ethPOS, podBeacon := d, d
	impls := map[string]func(o *bind.TransactOpts) (common.Address, *types.Transaction, error){
		"PermissionController": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := PermissionController.DeployPermissionController(o, c.Client, Version)
			return a, tx, err
		},
		"AllocationManager": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := AllocationManager.DeployAllocationManager(o, c.Client, proxy["DelegationManager"], pauserRegistry,
				proxy["PermissionController"], DeallocationDelay, AllocationConfigurationDelay, Version)
			return a, tx, err
		},
		"AVSDirectory": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := AVSDirectory.DeployAVSDirectory(o, c.Client, proxy["DelegationManager"], pauserRegistry, Version)
			return a, tx, err
		},
		"DelegationManager": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := DelegationManager.DeployDelegationManager(o, c.Client, proxy["StrategyManager"], proxy["EigenPodManager"],
				proxy["AllocationManager"], pauserRegistry, proxy["PermissionController"], MinWithdrawalDelayBlocks, Version)
			return a, tx, err
		},
		"StrategyManager": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := StrategyManager.DeployStrategyManager(o, c.Client, proxy["DelegationManager"], pauserRegistry, Version)
			return a, tx, err
		},
		"EigenPodManager": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := EigenPodManager.DeployEigenPodManager(o, c.Client, ethPOS, podBeacon, proxy["DelegationManager"], pauserRegistry, Version)
			return a, tx, err
		},
		"RewardsCoordinator": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := RewardsCoordinator.DeployRewardsCoordinator(o, c.Client, RewardsCoordinator.IRewardsCoordinatorTypesRewardsCoordinatorConstructorParams{
				DelegationManager:          proxy["DelegationManager"],
				StrategyManager:            proxy["StrategyManager"],
				AllocationManager:          proxy["AllocationManager"],
				PauserRegistry:             pauserRegistry,
				PermissionController:       proxy["PermissionController"],
				CALCULATIONINTERVALSECONDS: CalculationIntervalSeconds,
				MAXREWARDSDURATION:         MaxRewardsDuration,
				MAXRETROACTIVELENGTH:       MaxRetroactiveLength,
				MAXFUTURELENGTH:            MaxFutureLength,
				GENESISREWARDSTIMESTAMP:    c.GenesisRewardsTimestamp,
				Version:                    Version,
			})
			return a, tx, err
		},
		"StrategyBase": func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			a, tx, _, err := StrategyBase.DeployStrategyBase(o, c.Client, proxy["StrategyManager"], pauserRegistry, Version)
			return a, tx, err
		},
	}
	c.Core.Implementations = make(map[string]common.Address, len(names))
	for _, name := range names {
		c.Core.Implementations[name] = c.deployed(t, name, impls[name])
	}
	for _, name := range names {
		impl := c.Core.Implementations[name]
		got := c.deployed(t, name+" proxy", func(o *bind.TransactOpts) (common.Address, *types.Transaction, error) {
			return bind.DeployContract(o, MinimalProxyInitCode(impl), c.Client, nil)
		})
		if got != proxy[name] {
			t.Fatalf("%s proxy deployed at %s, predicted %s", name, got.Hex(), proxy[name].Hex())
		}
	}
	c.Core.PermissionController = proxy["PermissionController"]
	c.Core.AllocationManager = proxy["AllocationManager"]
	c.Core.AVSDirectory = proxy["AVSDirectory"]
	c.Core.DelegationManager = proxy["DelegationManager"]
	c.Core.StrategyManager = proxy["StrategyManager"]
	c.Core.EigenPodManager = proxy["EigenPodManager"]
	c.Core.RewardsCoordinator = proxy["RewardsCoordinator"]
	c.Strategy = proxy["StrategyBase"]
	c.bindAll(t)

	// The PermissionController has no initializer: an account with no
	// admins is its own admin.
	b := c.Bindings
	zero := new(big.Int)
	c.Send(t, d, "AllocationManager.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AllocationManager.Initialize(o, d, zero)
	})
	c.Send(t, d, "AVSDirectory.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AVSDirectory.Initialize(o, d, zero)
	})
	c.Send(t, d, "DelegationManager.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.DelegationManager.Initialize(o, d, zero)
	})
	c.Send(t, d, "StrategyManager.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.StrategyManager.Initialize(o, d, d, zero)
	})
	c.Send(t, d, "EigenPodManager.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.EigenPodManager.Initialize(o, d, zero)
	})
	c.Send(t, d, "RewardsCoordinator.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.RewardsCoordinator.Initialize(o, d, zero, d, ActivationDelay, DefaultOperatorSplitBips)
	})
	c.Send(t, d, "StrategyBase.initialize", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.Strategy.Initialize(o, c.Token)
	})
	r := c.Send(t, d, "StrategyManager.addStrategiesToDepositWhitelist", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.StrategyManager.AddStrategiesToDepositWhitelist(o, []common.Address{c.Strategy})
	})
	c.DeployedBlock = r.BlockNumber.Uint64()
}

// bindAll binds the deployed contracts.
func (c *Chain) bindAll(t testing.TB) {
	t.Helper()
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	b := &c.Bindings
	var err error
	b.PermissionController, err = PermissionController.NewPermissionController(c.Core.PermissionController, c.Client)
	keep(err)
	b.AllocationManager, err = AllocationManager.NewAllocationManager(c.Core.AllocationManager, c.Client)
	keep(err)
	b.AVSDirectory, err = AVSDirectory.NewAVSDirectory(c.Core.AVSDirectory, c.Client)
	keep(err)
	b.DelegationManager, err = DelegationManager.NewDelegationManager(c.Core.DelegationManager, c.Client)
	keep(err)
	b.StrategyManager, err = StrategyManager.NewStrategyManager(c.Core.StrategyManager, c.Client)
	keep(err)
	b.EigenPodManager, err = EigenPodManager.NewEigenPodManager(c.Core.EigenPodManager, c.Client)
	keep(err)
	b.RewardsCoordinator, err = RewardsCoordinator.NewRewardsCoordinator(c.Core.RewardsCoordinator, c.Client)
	keep(err)
	b.Strategy, err = StrategyBase.NewStrategyBase(c.Strategy, c.Client)
	keep(err)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	b.Token = bind.NewBoundContract(c.Token, TokenABI, c.Client, c.Client, c.Client)
	b.Registrar = bind.NewBoundContract(c.Registrar, RegistrarABI, c.Client, c.Client, c.Client)
}

// MinimalProxyInitCode returns the creation code of an ERC-1167 minimal
// proxy that delegates every call to impl: a ten-byte constructor that
// returns the 45-byte runtime code following it.
func MinimalProxyInitCode(impl common.Address) []byte {
	var code []byte
	// RETURNDATASIZE PUSH1 0x2d DUP1 PUSH1 0x0a RETURNDATASIZE CODECOPY DUP2 RETURN:
	// copy the 0x2d bytes after these 0x0a to memory 0 and return them.
	code = append(code, common.FromHex("3d602d80600a3d3981f3")...)
	code = append(code, common.FromHex("363d3d373d3d3d363d73")...)
	code = append(code, impl.Bytes()...)
	code = append(code, common.FromHex("5af43d82803e903d91602b57fd5bf3")...)
	return code
}

// Contracts are the core contract (proxy) addresses in the form the indexer
// is configured with.
func (c *Chain) Contracts() chain.Contracts {
	return chain.Contracts{
		DelegationManager:  lowerHex(c.Core.DelegationManager),
		StrategyManager:    lowerHex(c.Core.StrategyManager),
		EigenPodManager:    lowerHex(c.Core.EigenPodManager),
		AVSDirectory:       lowerHex(c.Core.AVSDirectory),
		RewardsCoordinator: lowerHex(c.Core.RewardsCoordinator),
		AllocationManager:  lowerHex(c.Core.AllocationManager),
	}
}

// Network describes the deployment as a chain.Network: the simulated chain
// id, block 1 as the start block, the core contracts, and the beacon ETH
// pseudo-strategy and the TEST strategy.
func (c *Chain) Network() chain.Network {
	return chain.Network{
		Name:       "slashingchain",
		ChainID:    ChainID,
		StartBlock: 1,
		Contracts:  c.Contracts(),
		Strategies: []chain.Strategy{
			{Symbol: "Beacon ETH", Address: chain.BeaconStrategy, Decimals: 18, Kind: chain.KindBeacon},
			{Symbol: "TEST", Address: lowerHex(c.Strategy), UnderlyingToken: lowerHex(c.Token), Decimals: 18, Kind: chain.KindLiquid},
		},
	}
}

func lowerHex(a common.Address) string { return strings.ToLower(a.Hex()) }

// Send sends one transaction from one of the chain's accounts, mines it in a
// block of its own and returns its receipt; the test fails if the
// transaction cannot be sent or reverts (reporting the custom error it
// reverted with). what names the transaction in failure messages.
func (c *Chain) Send(t testing.TB, from common.Address, what string, send func(*bind.TransactOpts) (*types.Transaction, error)) *types.Receipt {
	t.Helper()
	tx, err := send(c.opts(t, from))
	if err != nil {
		t.Fatalf("%s: %v", what, DescribeError(err))
	}
	c.nonces[from]++
	c.Backend.Commit()
	r, err := c.Client.TransactionReceipt(context.Background(), tx.Hash())
	if err != nil {
		t.Fatalf("%s: receipt: %v", what, err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("%s: transaction %s reverted (gas used %d of %d): %v", what, tx.Hash().Hex(), r.GasUsed, tx.Gas(), c.revertReason(from, tx, r))
	}
	return r
}

// deployed sends a contract creation with Send and returns the new
// contract's address.
func (c *Chain) deployed(t testing.TB, what string, deploy func(*bind.TransactOpts) (common.Address, *types.Transaction, error)) common.Address {
	t.Helper()
	var addr common.Address
	r := c.Send(t, c.Deployer, "deploy "+what, func(o *bind.TransactOpts) (*types.Transaction, error) {
		a, tx, err := deploy(o)
		addr = a
		return tx, err
	})
	if r.ContractAddress != addr {
		t.Fatalf("deploy %s: receipt says %s, expected %s", what, r.ContractAddress.Hex(), addr.Hex())
	}
	return addr
}

// opts returns the transaction options of an account with its next nonce.
func (c *Chain) opts(t testing.TB, from common.Address) *bind.TransactOpts {
	t.Helper()
	key, ok := c.keys[from]
	if !ok {
		t.Fatalf("slashingchain: no key for %s", from.Hex())
	}
	o := bind.NewKeyedTransactor(key, big.NewInt(ChainID))
	o.Nonce = new(big.Int).SetUint64(c.nonces[from])
	o.GasLimit = GasLimit
	return o
}

// Mine mines n empty blocks.
func (c *Chain) Mine(n int) {
	for range n {
		c.Backend.Commit()
	}
}

// Head returns the number of the current head block.
func (c *Chain) Head(t testing.TB) uint64 {
	t.Helper()
	n, err := c.Client.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// MineUntil mines empty blocks until the head is at least block n.
func (c *Chain) MineUntil(t testing.TB, n uint64) {
	t.Helper()
	for h := c.Head(t); h < n; h++ {
		c.Backend.Commit()
	}
}

// Logs returns every log of blocks from..to (inclusive).
func (c *Chain) Logs(t testing.TB, from, to uint64) []types.Log {
	t.Helper()
	logs, err := c.Client.FilterLogs(context.Background(), ethereumFilter(from, to))
	if err != nil {
		t.Fatal(err)
	}
	return logs
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
	panic(fmt.Sprintf("slashingchain: cannot reach the RPC client of %T", c.Client))
}

// Serve serves the chain's JSON-RPC over HTTP, at the returned proxy's URL,
// until the test ends; the proxy can inject node failures.
func (c *Chain) Serve(t testing.TB) *testchain.Proxy {
	t.Helper()
	return testchain.NewProxy(t, c.RPC())
}

// DescribeError adds to an error of a call or a gas estimation the name and
// arguments of the custom error the contract reverted with, when one of the
// deployment's ABIs defines it.
func DescribeError(err error) error {
	var de rpc.DataError
	if !errors.As(err, &de) {
		return err
	}
	s, ok := de.ErrorData().(string)
	if !ok {
		return err
	}
	data := common.FromHex(s)
	if len(data) < 4 {
		return err
	}
	for _, a := range ABIs() {
		for _, e := range a.Errors {
			if bytes.Equal(e.ID[:4], data[:4]) {
				args, uerr := e.Inputs.Unpack(data[4:])
				if uerr != nil || len(args) == 0 {
					return fmt.Errorf("%w: %s", err, e.Name)
				}
				return fmt.Errorf("%w: %s%v", err, e.Name, args)
			}
		}
	}
	if reason, uerr := abi.UnpackRevert(data); uerr == nil {
		return fmt.Errorf("%w: %q", err, reason)
	}
	return err
}

// revertReason replays a reverted transaction with eth_call on the state
// before its block and returns the error, with the custom error decoded.
func (c *Chain) revertReason(from common.Address, tx *types.Transaction, r *types.Receipt) error {
	msg := ethereum.CallMsg{From: from, To: tx.To(), Gas: tx.Gas(), Value: tx.Value(), Data: tx.Data()}
	parent := new(big.Int).Sub(r.BlockNumber, big.NewInt(1))
	if _, err := c.Client.CallContract(context.Background(), msg, parent); err != nil {
		return DescribeError(err)
	}
	return errors.New("the replay does not revert")
}
