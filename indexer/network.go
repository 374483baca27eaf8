package indexer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/stakegraph/stakegraph/chain"
)

// NetworkFile is the JSON form of a deployment, read by --contracts to index
// a deployment the built-in table does not know (a fork, a devnet, new
// addresses). Every field is optional: what is left out keeps the value of
// the network named by --network.
//
//	{
//	  "chainId": 17000,
//	  "startBlock": 1167044,
//	  "contracts": {
//	    "delegationManager": "0x...", "strategyManager": "0x...",
//	    "eigenPodManager": "0x...", "avsDirectory": "0x...",
//	    "rewardsCoordinator": "0x...", "allocationManager": "0x..."
//	  },
//	  "strategies": [
//	    {"symbol": "stETH", "address": "0x...", "underlyingToken": "0x...",
//	     "decimals": 18, "kind": "liquid"}
//	  ]
//	}
//
// A strategies list replaces the built-in one; kind is beacon, eigen or
// liquid (default liquid) and decimals default to 18.
type NetworkFile struct {
	ChainID    *uint64 `json:"chainId"`
	StartBlock *uint64 `json:"startBlock"`
	Contracts  *struct {
		DelegationManager  string `json:"delegationManager"`
		StrategyManager    string `json:"strategyManager"`
		EigenPodManager    string `json:"eigenPodManager"`
		AVSDirectory       string `json:"avsDirectory"`
		RewardsCoordinator string `json:"rewardsCoordinator"`
		AllocationManager  string `json:"allocationManager"`
	} `json:"contracts"`
	Strategies []struct {
		Symbol          string `json:"symbol"`
		Address         string `json:"address"`
		UnderlyingToken string `json:"underlyingToken"`
		Decimals        *int   `json:"decimals"`
		Kind            string `json:"kind"`
	} `json:"strategies"`
}

// LoadNetworkFile reads a NetworkFile and applies it to base.
func LoadNetworkFile(path string, base chain.Network) (chain.Network, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return chain.Network{}, fmt.Errorf("contracts file: %w", err)
	}
	n, err := ApplyNetworkFile(raw, base)
	if err != nil {
		return chain.Network{}, fmt.Errorf("contracts file %s: %w", path, err)
	}
	return n, nil
}

// ApplyNetworkFile parses a NetworkFile and applies it to base.
func ApplyNetworkFile(raw []byte, base chain.Network) (chain.Network, error) {
	var f NetworkFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return chain.Network{}, err
	}
	n := base
	if f.ChainID != nil {
		n.ChainID = *f.ChainID
	}
	if f.StartBlock != nil {
		n.StartBlock = *f.StartBlock
	}
	checkAddr := func(what, a string) (string, error) {
		if a == "" {
			return "", nil
		}
		if !chain.IsAddress(a) {
			return "", fmt.Errorf("%s %q is not an address", what, a)
		}
		return strings.ToLower(a), nil
	}
	if c := f.Contracts; c != nil {
		for _, x := range []struct {
			name string
			in   string
			out  *string
		}{
			{"delegationManager", c.DelegationManager, &n.Contracts.DelegationManager},
			{"strategyManager", c.StrategyManager, &n.Contracts.StrategyManager},
			{"eigenPodManager", c.EigenPodManager, &n.Contracts.EigenPodManager},
			{"avsDirectory", c.AVSDirectory, &n.Contracts.AVSDirectory},
			{"rewardsCoordinator", c.RewardsCoordinator, &n.Contracts.RewardsCoordinator},
			{"allocationManager", c.AllocationManager, &n.Contracts.AllocationManager},
		} {
			a, err := checkAddr(x.name, x.in)
			if err != nil {
				return chain.Network{}, err
			}
			if a != "" {
				*x.out = a
			}
		}
	}
	if f.Strategies != nil {
		n.Strategies = nil
		for _, s := range f.Strategies {
			addr, err := checkAddr("strategy", s.Address)
			if err != nil {
				return chain.Network{}, err
			}
			if addr == "" {
				return chain.Network{}, fmt.Errorf("strategy %q has no address", s.Symbol)
			}
			token, err := checkAddr("underlyingToken", s.UnderlyingToken)
			if err != nil {
				return chain.Network{}, err
			}
			kind := chain.StrategyKind(s.Kind)
			switch kind {
			case "":
				kind = chain.KindLiquid
			case chain.KindBeacon, chain.KindEigen, chain.KindLiquid:
			default:
				return chain.Network{}, fmt.Errorf("strategy %s: kind %q (want beacon, eigen or liquid)", addr, s.Kind)
			}
			decimals := 18
			if s.Decimals != nil {
				decimals = *s.Decimals
			}
			if decimals < 0 || decimals > 77 {
				return chain.Network{}, fmt.Errorf("strategy %s: decimals %d", addr, decimals)
			}
			n.Strategies = append(n.Strategies, chain.Strategy{
				Symbol: s.Symbol, Address: addr, UnderlyingToken: token, Decimals: decimals, Kind: kind,
			})
		}
	}
	return n, nil
}
