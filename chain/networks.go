// Package chain holds the facts stakegraph knows about the EigenLayer
// deployments it serves (contract addresses, start blocks, strategies) and
// the event model: the ordered stream of decoded on-chain events from which
// every piece of stored state is derived. Both the chain indexer and the demo
// data generator produce chain.Batch values; the store applies them.
//
// The package speaks neither SQL nor JSON-RPC.
package chain

import (
	"fmt"
	"regexp"
	"strings"
)

// StrategyKind classifies a strategy for TVL purposes.
type StrategyKind string

// The three strategy kinds: beacon-chain ETH (shares are ETH 1:1), the EIGEN
// token (not an ETH asset, excluded from ETH totals) and liquid tokens.
const (
	KindBeacon StrategyKind = "beacon"
	KindEigen  StrategyKind = "eigen"
	KindLiquid StrategyKind = "liquid"
)

// BeaconStrategy is the pseudo-address of beacon-chain ETH.
const BeaconStrategy = "0xbeac0eeeeeeeeeeeeeeeeeeeeeeeeeeeeeebeac0"

// ZeroAddress is the all-zero address.
const ZeroAddress = "0x0000000000000000000000000000000000000000"

// Strategy is one restaking strategy of a network.
type Strategy struct {
	Symbol          string
	Address         string // lowercase
	UnderlyingToken string // lowercase; empty for beacon ETH
	Decimals        int
	Kind            StrategyKind
}

// Contracts are the core contract addresses of a deployment (lowercase).
type Contracts struct {
	DelegationManager  string
	StrategyManager    string
	EigenPodManager    string
	AVSDirectory       string
	RewardsCoordinator string
	AllocationManager  string
}

// Network is one EigenLayer deployment.
type Network struct {
	Name       string
	ChainID    uint64
	StartBlock uint64
	Contracts  Contracts
	Strategies []Strategy
}

// Strategy returns the strategy with the given address (any case).
func (n Network) Strategy(addr string) (Strategy, bool) {
	addr = strings.ToLower(addr)
	for _, s := range n.Strategies {
		if s.Address == addr {
			return s, true
		}
	}
	return Strategy{}, false
}

// Networks are the built-in deployments, keyed by name.
var Networks = map[string]Network{
	"mainnet": {
		Name:       "mainnet",
		ChainID:    1,
		StartBlock: 17445563,
		Contracts: Contracts{
			DelegationManager:  "0x39053d51b77dc0d36036fc1fcc8cb819df8ef37a",
			StrategyManager:    "0x858646372cc42e1a627fce94aa7a7033e7cf075a",
			EigenPodManager:    "0x91e677b07f7af907ec9a428aafa9fc14a0d3a338",
			AVSDirectory:       "0x135dda560e946695d6f155dacafc6f1f25c1f5af",
			RewardsCoordinator: "0x7750d328b314effa365a0402ccfd489b80b0adda",
			AllocationManager:  "0x948a420b8cc1d6bfd0b6087c2e7c344a2cd0bc39",
		},
		Strategies: []Strategy{
			{"Beacon ETH", BeaconStrategy, "", 18, KindBeacon},
			{"EIGEN", "0xacb55c530acdb2849e6d4f36992cd8c9d50ed8f7", "0x83e9115d334d248ce39a6f36144aeab5b3456e75", 18, KindEigen},
			{"stETH", "0x93c4b944d05dfe6df7645a86cd2206016c51564d", "0xae7ab96520de3a18e5e111b5eaab095312d7fe84", 18, KindLiquid},
			{"rETH", "0x1bee69b7dfffa4e2d53c2a2df135c388ad25dcd2", "0xae78736cd615f374d3085123a210448e74fc6393", 18, KindLiquid},
			{"cbETH", "0x54945180db7943c0ed0fee7edab2bd24620256bc", "0xbe9895146f7af43049ca1c1ae358b0541ea49704", 18, KindLiquid},
			{"ETHx", "0x9d7ed45ee2e8fc5482fa2428f15c971e6369011d", "0xa35b1b31ce002fbf2058d22f30f95d405200a15b", 18, KindLiquid},
			{"ankrETH", "0x13760f50a9d7377e4f20cb8cf9e4c26586c658ff", "0xe95a203b1a91a908f9b9ce46459d101078c2c3cb", 18, KindLiquid},
			{"OETH", "0xa4c637e0f704745d182e4d38cab7e7485321d059", "0x856c4efb76c1d1ae02e20ceb03a2a6a08b0b8dc3", 18, KindLiquid},
			{"osETH", "0x57ba429517c3473b6d34ca9acd56c0e735b94c02", "0xf1c9acdc66974dfb6decb12aa385b9cd01190e38", 18, KindLiquid},
			{"swETH", "0x0fe4f44bee93503346a3ac9ee5a26b130a5796d6", "0xf951e335afb289353dc249e82926178eac7ded78", 18, KindLiquid},
			{"wBETH", "0x7ca911e83dabf90c90dd3de5411a10f1a6112184", "0xa2e3356610840701bdf5611a53974510ae27e2e1", 18, KindLiquid},
			{"sfrxETH", "0x8ca7a5d6f3acd3a7a8bc468a8cd0fb14b6bd28b6", "0xac3e018457b222d93114458476f3e3416abbe38f", 18, KindLiquid},
			{"LsETH", "0xae60d8180437b5c34bb956822ac2710972584473", "0x8c1bed5b9a0928467c9b1341da1d7bd5e10b6549", 18, KindLiquid},
			{"mETH", "0x298afb19a105d59e74658c4c334ff360bade6dd2", "0xd5f7838f5c461feff7fe49ea5ebaf7728bb0adfa", 18, KindLiquid},
		},
	},
	"holesky": {
		Name:       "holesky",
		ChainID:    17000,
		StartBlock: 1167044,
		Contracts: Contracts{
			DelegationManager:  "0xa44151489861fe9e3055d95adc98fbd462b948e7",
			StrategyManager:    "0xdfb5f6ce42aaa7830e94ecfccad411bef4d4d5b6",
			EigenPodManager:    "0x30770d7e3e71112d7a6b7259542d1f680a70e315",
			AVSDirectory:       "0x055733000064333caddbc92763c58bf0192ffebf",
			RewardsCoordinator: "0xacc1fb458a1317e886db376fc8141540537e68fe",
			AllocationManager:  "0x78469728304326cbc65f8f95fa756b0b73164462",
		},
		Strategies: []Strategy{
			{"Beacon ETH", BeaconStrategy, "", 18, KindBeacon},
			{"EIGEN", "0x43252609bff8a13dfe5e057097f2f45a24387a84", "", 18, KindEigen},
			{"stETH", "0x7d704507b76571a51d9cae8addabbfd0ba0e63d3", "", 18, KindLiquid},
			{"rETH", "0x3a8fbdf9e77dfc25d09741f51d3e181b25d0c4e0", "", 18, KindLiquid},
			{"cbETH", "0x70eb4d3c164a6b4a5f908d4fbb5a9cafFb66bab6", "", 18, KindLiquid},
		},
	},
}

func init() {
	// Normalise the table once so a typo in case cannot leak out.
	for name, n := range Networks {
		for i := range n.Strategies {
			n.Strategies[i].Address = strings.ToLower(n.Strategies[i].Address)
		}
		Networks[name] = n
	}
}

// Lookup returns the built-in network with the given name.
func Lookup(name string) (Network, error) {
	n, ok := Networks[name]
	if !ok {
		return Network{}, fmt.Errorf("unknown network %q (want mainnet or holesky)", name)
	}
	return n, nil
}

var (
	addressRE = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	hashRE    = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)
)

// IsAddress reports whether s is a 0x-prefixed 20-byte hex address (any case).
func IsAddress(s string) bool { return addressRE.MatchString(s) }

// IsHash reports whether s is a 0x-prefixed 32-byte hex hash (any case).
func IsHash(s string) bool { return hashRE.MatchString(s) }
