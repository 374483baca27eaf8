package slashingchain

import (
	"fmt"
	"math/big"
	"sync"

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
	"github.com/ethereum/go-ethereum/common"
)

// ABIs returns the ABIs of the deployment's contracts by contract name:
// the core contracts (from the eigenlayer-contracts bindings), StrategyBase,
// TestToken and TestAVSRegistrar.
func ABIs() map[string]*abi.ABI {
	abisOnce.Do(func() {
		metas := map[string]interface{ GetAbi() (*abi.ABI, error) }{
			"PauserRegistry":       PauserRegistry.PauserRegistryMetaData,
			"PermissionController": PermissionController.PermissionControllerMetaData,
			"AllocationManager":    AllocationManager.AllocationManagerMetaData,
			"AVSDirectory":         AVSDirectory.AVSDirectoryMetaData,
			"DelegationManager":    DelegationManager.DelegationManagerMetaData,
			"StrategyManager":      StrategyManager.StrategyManagerMetaData,
			"EigenPodManager":      EigenPodManager.EigenPodManagerMetaData,
			"RewardsCoordinator":   RewardsCoordinator.RewardsCoordinatorMetaData,
			"StrategyBase":         StrategyBase.StrategyBaseMetaData,
		}
		abis = make(map[string]*abi.ABI, len(metas)+2)
		for name, m := range metas {
			a, err := m.GetAbi()
			if err != nil {
				panic(fmt.Sprintf("slashingchain: ABI of %s: %v", name, err))
			}
			abis[name] = a
		}
		abis["TestToken"] = &TokenABI
		abis["TestAVSRegistrar"] = &RegistrarABI
	})
	return abis
}

var (
	abisOnce sync.Once
	abis     map[string]*abi.ABI
)

// EventName returns the name of the event whose signature hashes to topic
// (a log's first topic) in one of the deployment's ABIs, or "" if none
// defines it.
func EventName(topic common.Hash) string {
	for _, a := range ABIs() {
		if e, err := a.EventByID(topic); err == nil {
			return e.Name
		}
	}
	return ""
}

// EventTopic returns the signature hash of the event the named contract's
// ABI defines under name; it panics if there is none.
func EventTopic(contract, name string) common.Hash {
	a, ok := ABIs()[contract]
	if !ok {
		panic(fmt.Sprintf("slashingchain: no ABI for %s", contract))
	}
	e, ok := a.Events[name]
	if !ok {
		panic(fmt.Sprintf("slashingchain: %s has no event %s", contract, name))
	}
	return e.ID
}

// ethereumFilter selects every log of blocks from..to.
func ethereumFilter(from, to uint64) ethereum.FilterQuery {
	return ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to)}
}
