package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stakegraph/stakegraph/chain"
)

// v1xCoreEvents lists, by contract, every event of the EigenLayer v1.4.1
// core contracts except the pause, ownership and initialization events.
var v1xCoreEvents = map[string][]string{
	"AllocationManager": {
		"AVSMetadataURIUpdated(address,string)",
		"AVSRegistrarSet(address,address)",
		"AllocationDelaySet(address,uint32,uint32)",
		"AllocationUpdated(address,(address,uint32),address,uint64,uint32)",
		"EncumberedMagnitudeUpdated(address,address,uint64)",
		"MaxMagnitudeUpdated(address,address,uint64)",
		"OperatorAddedToOperatorSet(address,(address,uint32))",
		"OperatorRemovedFromOperatorSet(address,(address,uint32))",
		"OperatorSetCreated((address,uint32))",
		"OperatorSlashed(address,(address,uint32),address[],uint256[],string)",
		"StrategyAddedToOperatorSet((address,uint32),address)",
		"StrategyRemovedFromOperatorSet((address,uint32),address)",
	},
	"DelegationManager": {
		"DelegationApproverUpdated(address,address)",
		"DepositScalingFactorUpdated(address,address,uint256)",
		"OperatorMetadataURIUpdated(address,string)",
		"OperatorRegistered(address,address)",
		"OperatorSharesDecreased(address,address,address,uint256)",
		"OperatorSharesIncreased(address,address,address,uint256)",
		"OperatorSharesSlashed(address,address,uint256)",
		"SlashingWithdrawalCompleted(bytes32)",
		"SlashingWithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]),uint256[])",
		"StakerDelegated(address,address)",
		"StakerForceUndelegated(address,address)",
		"StakerUndelegated(address,address)",
	},
	"EigenPodManager": {
		"BeaconChainETHDeposited(address,uint256)",
		"BeaconChainETHWithdrawalCompleted(address,uint256,uint96,address,address,bytes32)",
		"BeaconChainSlashingFactorDecreased(address,uint64,uint64)",
		"BurnableETHSharesIncreased(uint256)",
		"NewTotalShares(address,int256)",
		"PodDeployed(address,address)",
		"PodSharesUpdated(address,int256)",
	},
	"StrategyManager": {
		"BurnableSharesDecreased(address,uint256)",
		"BurnableSharesIncreased(address,uint256)",
		"Deposit(address,address,uint256)",
		"StrategyAddedToDepositWhitelist(address)",
		"StrategyRemovedFromDepositWhitelist(address)",
		"StrategyWhitelisterChanged(address,address)",
	},
	"RewardsCoordinator": {
		"AVSRewardsSubmissionCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))",
		"ActivationDelaySet(uint32,uint32)",
		"ClaimerForSet(address,address,address)",
		"DefaultOperatorSplitBipsSet(uint16,uint16)",
		"DistributionRootDisabled(uint32)",
		"DistributionRootSubmitted(uint32,bytes32,uint32,uint32)",
		"OperatorAVSSplitBipsSet(address,address,address,uint32,uint16,uint16)",
		"OperatorDirectedAVSRewardsSubmissionCreated(address,address,bytes32,uint256,((address,uint96)[],address,(address,uint256)[],uint32,uint32,string))",
		"OperatorDirectedOperatorSetRewardsSubmissionCreated(address,bytes32,(address,uint32),uint256,((address,uint96)[],address,(address,uint256)[],uint32,uint32,string))",
		"OperatorPISplitBipsSet(address,address,uint32,uint16,uint16)",
		"OperatorSetSplitBipsSet(address,address,(address,uint32),uint32,uint16,uint16)",
		"RewardsClaimed(bytes32,address,address,address,address,uint256)",
		"RewardsForAllSubmitterSet(address,bool,bool)",
		"RewardsSubmissionForAllCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))",
		"RewardsSubmissionForAllEarnersCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))",
		"RewardsUpdaterSet(address,address)",
	},
	"AVSDirectory": {
		"AVSMetadataURIUpdated(address,string)",
		"OperatorAVSRegistrationStatusUpdated(address,address,uint8)",
	},
}

// contractAddress returns the test deployment's address of a core
// contract named as in v1xCoreEvents.
func contractAddress(t testing.TB, name string) string {
	t.Helper()
	a := map[string]string{
		"AllocationManager":  testContracts.AllocationManager,
		"DelegationManager":  testContracts.DelegationManager,
		"EigenPodManager":    testContracts.EigenPodManager,
		"StrategyManager":    testContracts.StrategyManager,
		"RewardsCoordinator": testContracts.RewardsCoordinator,
		"AVSDirectory":       testContracts.AVSDirectory,
	}[name]
	if a == "" {
		t.Fatalf("no address for %s", name)
	}
	return a
}

// TestDecoderKnowsEveryV1xCoreEvent checks that every event of the v1.x
// core contracts is in the indexer's ABI and is decoded when the contract
// that declares it emits it.
func TestDecoderKnowsEveryV1xCoreEvent(t *testing.T) {
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	for contract, sigs := range v1xCoreEvents {
		addr := common.HexToAddress(contractAddress(t, contract))
		for _, sig := range sigs {
			entry, ok := dec.byTopic[crypto.Keccak256Hash([]byte(sig))]
			if !ok {
				t.Errorf("%s: the decoder does not know %s", contract, sig)
				continue
			}
			if entry.event.Sig != sig {
				t.Errorf("%s: topic of %s decodes %s", contract, sig, entry.event.Sig)
			}
			if !entry.emitters[addr] {
				t.Errorf("%s: the decoder ignores %s from it", contract, sig)
			}
		}
	}
}

// operatorSetArg packs as an OperatorSetLib.OperatorSet.
type operatorSetArg struct {
	Avs common.Address
	Id  uint32
}

// strategyMultiplierArg packs as IRewardsCoordinator.StrategyAndMultiplier.
type strategyMultiplierArg struct {
	Strategy   common.Address
	Multiplier *big.Int
}

// operatorRewardArg packs as IRewardsCoordinator.OperatorReward.
type operatorRewardArg struct {
	Operator common.Address
	Amount   *big.Int
}

// operatorDirectedArg packs as IRewardsCoordinator.OperatorDirectedRewardsSubmission.
type operatorDirectedArg struct {
	StrategiesAndMultipliers []strategyMultiplierArg
	Token                    common.Address
	OperatorRewards          []operatorRewardArg
	StartTimestamp           uint32
	Duration                 uint32
	Description              string
}

// slashingEraCases are the decoding cases of the events the v1.x core
// contracts added, and of the zero-staker OperatorSharesDecreased of a
// slash. pos is the position buildLog gives its logs.
func slashingEraCases(t testing.TB, pos chain.Position) []decodeCase {
	var (
		op       = common.HexToAddress("0x1111111111111111111111111111111111111111")
		staker   = common.HexToAddress("0x2222222222222222222222222222222222222222")
		avs      = common.HexToAddress("0x3333333333333333333333333333333333333333")
		other    = common.HexToAddress("0x5555555555555555555555555555555555555555")
		op2      = common.HexToAddress("0x6666666666666666666666666666666666666666")
		strat    = common.HexToAddress("0x93c4b944D05dfe6df7645A86cd2206016c51564D")
		strat2   = common.HexToAddress("0x54945180dB7943c0ed0FEE7EdaB2Bd24620256bc")
		token    = common.HexToAddress("0xae7ab96520DE3A18E5e111B5EaAb095312D7fE84")
		lower    = func(a common.Address) string { return strings.ToLower(a.Hex()) }
		wad      = new(big.Int).Set(chain.WAD)
		quarter  = new(big.Int).Div(chain.WAD, big.NewInt(4))
		huge, _  = new(big.Int).SetString("115792089237316195423570985008687907853269984665640564039457584007913129639935", 10)
		hash     = common.HexToHash("0xfe")
		root     = [32]byte{0xde, 0xad}
		set      = operatorSetArg{avs, 7}
		wantSet  = chain.OperatorSet{AVS: lower(avs), ID: 7}
		touched  = Observations{TouchedAVS: map[AVSBlock]chain.Position{{lower(avs), pos.BlockNumber}: pos}}
		am       = testContracts.AllocationManager
		dm       = testContracts.DelegationManager
		epm      = testContracts.EigenPodManager
		sm       = testContracts.StrategyManager
		rc       = testContracts.RewardsCoordinator
		protocol = func(contract, name string, args map[string]any) chain.Batch {
			return chain.Batch{ProtocolEvents: []chain.ProtocolEvent{{Position: pos, Contract: contract, Name: name, Args: args}}}
		}
	)
	directed := operatorDirectedArg{
		StrategiesAndMultipliers: []strategyMultiplierArg{{strat, wad}, {strat2, big.NewInt(2)}},
		Token:                    token,
		OperatorRewards:          []operatorRewardArg{{op, big.NewInt(5_000_000)}, {op2, huge}},
		StartTimestamp:           1714521600,
		Duration:                 604800,
		Description:              "operator-directed",
	}
	sum := new(big.Int).Add(big.NewInt(5_000_000), huge)
	wantDirected := chain.RewardsSubmission{
		Position: pos, AVS: lower(avs), Kind: chain.RewardsOperatorDirectedAVS, Submitter: lower(other),
		Description:     "operator-directed",
		OperatorRewards: []chain.OperatorReward{{Operator: lower(op), Amount: big.NewInt(5_000_000)}, {Operator: lower(op2), Amount: huge}},
		Nonce:           big.NewInt(11),
		Hash:            "0x00000000000000000000000000000000000000000000000000000000000000fe",
		Token:           lower(token), Amount: sum, StartTimestamp: 1714521600, Duration: 604800,
		Strategies: []chain.StrategyMultiplier{{Strategy: lower(strat), Multiplier: wad}, {Strategy: lower(strat2), Multiplier: big.NewInt(2)}},
	}
	setID := uint32(7)
	wantDirectedSet := wantDirected
	wantDirectedSet.Kind = chain.RewardsOperatorDirectedOpSet
	wantDirectedSet.OperatorSetID = &setID
	rewards := rewardsSubmissionTuple{
		StrategiesAndMultipliers: []struct {
			Strategy   common.Address
			Multiplier *big.Int
		}{{strat, wad}},
		Token: token, Amount: big.NewInt(1_000_000), StartTimestamp: 1714521600, Duration: 604800,
	}
	wantForAllEarners := chain.RewardsSubmission{
		Position: pos, AVS: lower(other), ForAll: true, Kind: chain.RewardsForAllEarners, Nonce: big.NewInt(9),
		Hash:  "0x00000000000000000000000000000000000000000000000000000000000000fe",
		Token: lower(token), Amount: big.NewInt(1_000_000), StartTimestamp: 1714521600, Duration: 604800,
		Strategies: []chain.StrategyMultiplier{{Strategy: lower(strat), Multiplier: wad}},
	}

	return []decodeCase{
		// AllocationManager.
		{
			name:    "OperatorSetCreated",
			log:     buildLog(t, am, "OperatorSetCreated((address,uint32))", nil, set),
			want:    chain.Batch{OperatorSetsCreated: []chain.OperatorSetCreated{{Position: pos, Set: wantSet}}},
			wantObs: touched,
		},
		{
			name: "StrategyAddedToOperatorSet",
			log:  buildLog(t, am, "StrategyAddedToOperatorSet((address,uint32),address)", nil, set, strat),
			want: chain.Batch{OperatorSetStrategies: []chain.OperatorSetStrategy{
				{Position: pos, Set: wantSet, Strategy: lower(strat), Added: true}}},
			wantObs: touched,
		},
		{
			name: "StrategyRemovedFromOperatorSet",
			log:  buildLog(t, am, "StrategyRemovedFromOperatorSet((address,uint32),address)", nil, set, strat),
			want: chain.Batch{OperatorSetStrategies: []chain.OperatorSetStrategy{
				{Position: pos, Set: wantSet, Strategy: lower(strat), Added: false}}},
			wantObs: touched,
		},
		{
			name: "OperatorAddedToOperatorSet",
			log:  buildLog(t, am, "OperatorAddedToOperatorSet(address,(address,uint32))", []any{op}, set),
			want: chain.Batch{OperatorSetMemberships: []chain.OperatorSetMembership{
				{Position: pos, Operator: lower(op), Set: wantSet, Added: true}}},
			wantObs: touched,
		},
		{
			name: "OperatorRemovedFromOperatorSet",
			log:  buildLog(t, am, "OperatorRemovedFromOperatorSet(address,(address,uint32))", []any{op}, set),
			want: chain.Batch{OperatorSetMemberships: []chain.OperatorSetMembership{
				{Position: pos, Operator: lower(op), Set: wantSet, Added: false}}},
			wantObs: touched,
		},
		{
			name: "AllocationDelaySet",
			log:  buildLog(t, am, "AllocationDelaySet(address,uint32,uint32)", nil, op, uint32(126000), uint32(19_126_001)),
			want: chain.Batch{AllocationDelays: []chain.AllocationDelaySet{
				{Position: pos, Operator: lower(op), Delay: 126000, EffectBlock: 19_126_001}}},
		},
		{
			name: "AllocationUpdated",
			log: buildLog(t, am, "AllocationUpdated(address,(address,uint32),address,uint64,uint32)",
				nil, op, set, strat, uint64(5e17), uint32(19_000_050)),
			want: chain.Batch{Allocations: []chain.AllocationUpdated{
				{Position: pos, Operator: lower(op), Set: wantSet, Strategy: lower(strat), Magnitude: 5e17, EffectBlock: 19_000_050}}},
			wantObs: touched,
		},
		{
			name: "MaxMagnitudeUpdated",
			log:  buildLog(t, am, "MaxMagnitudeUpdated(address,address,uint64)", nil, op, strat, uint64(75e16)),
			want: chain.Batch{MaxMagnitudes: []chain.MaxMagnitudeUpdated{
				{Position: pos, Operator: lower(op), Strategy: lower(strat), MaxMagnitude: 75e16}}},
		},
		{
			name: "EncumberedMagnitudeUpdated",
			log:  buildLog(t, am, "EncumberedMagnitudeUpdated(address,address,uint64)", nil, op, strat, uint64(375e15)),
			want: chain.Batch{EncumberedMagnitudes: []chain.EncumberedMagnitudeUpdated{
				{Position: pos, Operator: lower(op), Strategy: lower(strat), EncumberedMagnitude: 375e15}}},
		},
		{
			name: "OperatorSlashed",
			log: buildLog(t, am, "OperatorSlashed(address,(address,uint32),address[],uint256[],string)",
				nil, op, set, []common.Address{strat, strat2}, []*big.Int{quarter, wad}, "double signing"),
			want: chain.Batch{Slashings: []chain.OperatorSlashed{{
				Position: pos, Operator: lower(op), Set: wantSet, Strategies: []string{lower(strat), lower(strat2)},
				WadsSlashed: []*big.Int{quarter, wad}, Description: "double signing",
			}}},
			wantObs: touched,
		},
		{
			name: "AVSRegistrarSet",
			log:  buildLog(t, am, "AVSRegistrarSet(address,address)", nil, avs, other),
			want: protocol(am, "AVSRegistrarSet", map[string]any{"avs": lower(avs), "registrar": lower(other)}),
		},

		// DelegationManager.
		{
			name: "OperatorSharesDecreased for the zero staker (a slash)",
			log: buildLog(t, dm, "OperatorSharesDecreased(address,address,address,uint256)",
				[]any{op}, common.Address{}, strat, quarter),
			want: chain.Batch{SlashedOperatorShares: []chain.SlashedOperatorShares{
				{Position: pos, Operator: lower(op), Strategy: lower(strat), Shares: quarter}}},
		},
		{
			name: "OperatorSharesSlashed",
			log:  buildLog(t, dm, "OperatorSharesSlashed(address,address,uint256)", []any{op}, strat, huge),
			want: chain.Batch{OperatorSharesSlashed: []chain.OperatorSharesSlashed{
				{Position: pos, Operator: lower(op), Strategy: lower(strat), BurnedShares: huge}}},
		},
		{
			name: "DepositScalingFactorUpdated",
			log:  buildLog(t, dm, "DepositScalingFactorUpdated(address,address,uint256)", nil, staker, strat, big.NewInt(1_125e15)),
			want: chain.Batch{DepositScalingFactors: []chain.DepositScalingFactorUpdated{
				{Position: pos, Staker: lower(staker), Strategy: lower(strat), Factor: big.NewInt(1_125e15)}}},
		},
		{
			name: "DelegationApproverUpdated",
			log:  buildLog(t, dm, "DelegationApproverUpdated(address,address)", []any{op}, other),
			want: protocol(dm, "DelegationApproverUpdated", map[string]any{"operator": lower(op), "newDelegationApprover": lower(other)}),
		},

		// EigenPodManager.
		{
			name: "BeaconChainSlashingFactorDecreased",
			log:  buildLog(t, epm, "BeaconChainSlashingFactorDecreased(address,uint64,uint64)", nil, staker, uint64(1e18), uint64(96875e13)),
			want: chain.Batch{BeaconSlashingFactors: []chain.BeaconChainSlashingFactorDecreased{
				{Position: pos, Staker: lower(staker), Previous: 1e18, New: 96875e13}}},
		},
		{
			name: "BeaconChainETHDeposited",
			log:  buildLog(t, epm, "BeaconChainETHDeposited(address,uint256)", []any{staker}, new(big.Int).Mul(big.NewInt(32), wad)),
			want: protocol(epm, "BeaconChainETHDeposited", map[string]any{"podOwner": lower(staker), "amount": "32000000000000000000"}),
		},
		{
			name: "NewTotalShares",
			log:  buildLog(t, epm, "NewTotalShares(address,int256)", []any{staker}, big.NewInt(-32_000_000_000)),
			want: protocol(epm, "NewTotalShares", map[string]any{"podOwner": lower(staker), "newTotalShares": "-32000000000"}),
		},
		{
			name: "BurnableETHSharesIncreased",
			log:  buildLog(t, epm, "BurnableETHSharesIncreased(uint256)", nil, huge),
			want: protocol(epm, "BurnableETHSharesIncreased", map[string]any{"shares": huge.String()}),
		},
		{
			name: "BeaconChainETHWithdrawalCompleted",
			log: buildLog(t, epm, "BeaconChainETHWithdrawalCompleted(address,uint256,uint96,address,address,bytes32)",
				[]any{staker}, wad, big.NewInt(3), op, staker, root),
			want: protocol(epm, "BeaconChainETHWithdrawalCompleted", map[string]any{
				"podOwner": lower(staker), "shares": "1000000000000000000", "nonce": "3", "delegatedAddress": lower(op),
				"withdrawer": lower(staker), "withdrawalRoot": "0xdead000000000000000000000000000000000000000000000000000000000000",
			}),
		},

		// StrategyManager.
		{
			name: "BurnableSharesIncreased",
			log:  buildLog(t, sm, "BurnableSharesIncreased(address,uint256)", nil, strat, quarter),
			want: protocol(sm, "BurnableSharesIncreased", map[string]any{"strategy": lower(strat), "shares": "250000000000000000"}),
		},
		{
			name: "BurnableSharesDecreased",
			log:  buildLog(t, sm, "BurnableSharesDecreased(address,uint256)", nil, strat, quarter),
			want: protocol(sm, "BurnableSharesDecreased", map[string]any{"strategy": lower(strat), "shares": "250000000000000000"}),
		},
		{
			name: "StrategyWhitelisterChanged",
			log:  buildLog(t, sm, "StrategyWhitelisterChanged(address,address)", nil, op, other),
			want: protocol(sm, "StrategyWhitelisterChanged", map[string]any{"previousAddress": lower(op), "newAddress": lower(other)}),
		},

		// RewardsCoordinator.
		{
			name: "OperatorDirectedAVSRewardsSubmissionCreated",
			log: buildLog(t, rc, "OperatorDirectedAVSRewardsSubmissionCreated(address,address,bytes32,uint256,((address,uint96)[],address,(address,uint256)[],uint32,uint32,string))",
				[]any{other, avs, hash}, big.NewInt(11), directed),
			want:    chain.Batch{RewardsSubmissions: []chain.RewardsSubmission{wantDirected}},
			wantObs: touched,
		},
		{
			name: "OperatorDirectedOperatorSetRewardsSubmissionCreated",
			log: buildLog(t, rc, "OperatorDirectedOperatorSetRewardsSubmissionCreated(address,bytes32,(address,uint32),uint256,((address,uint96)[],address,(address,uint256)[],uint32,uint32,string))",
				[]any{other, hash}, set, big.NewInt(11), directed),
			want:    chain.Batch{RewardsSubmissions: []chain.RewardsSubmission{wantDirectedSet}},
			wantObs: touched,
		},
		{
			name: "RewardsSubmissionForAllEarnersCreated",
			log: buildLog(t, rc, "RewardsSubmissionForAllEarnersCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))",
				[]any{other, big.NewInt(9), hash}, rewards),
			want: chain.Batch{RewardsSubmissions: []chain.RewardsSubmission{wantForAllEarners}},
		},
		{
			name: "OperatorAVSSplitBipsSet",
			log: buildLog(t, rc, "OperatorAVSSplitBipsSet(address,address,address,uint32,uint16,uint16)",
				[]any{other, op, avs}, uint32(1714521600), uint16(1000), uint16(500)),
			want: protocol(rc, "OperatorAVSSplitBipsSet", map[string]any{
				"caller": lower(other), "operator": lower(op), "avs": lower(avs), "activatedAt": "1714521600",
				"oldOperatorAVSSplitBips": "1000", "newOperatorAVSSplitBips": "500",
			}),
		},
		{
			name: "OperatorSetSplitBipsSet",
			log: buildLog(t, rc, "OperatorSetSplitBipsSet(address,address,(address,uint32),uint32,uint16,uint16)",
				[]any{other, op}, set, uint32(1714521600), uint16(1000), uint16(0)),
			want: protocol(rc, "OperatorSetSplitBipsSet", map[string]any{
				"caller": lower(other), "operator": lower(op), "operatorSet": map[string]any{"avs": lower(avs), "id": "7"},
				"activatedAt": "1714521600", "oldOperatorSetSplitBips": "1000", "newOperatorSetSplitBips": "0",
			}),
		},
		{
			name: "OperatorPISplitBipsSet",
			log: buildLog(t, rc, "OperatorPISplitBipsSet(address,address,uint32,uint16,uint16)",
				[]any{other, op}, uint32(1714521600), uint16(1000), uint16(10000)),
			want: protocol(rc, "OperatorPISplitBipsSet", map[string]any{
				"caller": lower(other), "operator": lower(op), "activatedAt": "1714521600",
				"oldOperatorPISplitBips": "1000", "newOperatorPISplitBips": "10000",
			}),
		},
		{
			name: "DefaultOperatorSplitBipsSet",
			log:  buildLog(t, rc, "DefaultOperatorSplitBipsSet(uint16,uint16)", nil, uint16(1000), uint16(1500)),
			want: protocol(rc, "DefaultOperatorSplitBipsSet", map[string]any{
				"oldDefaultOperatorSplitBips": "1000", "newDefaultOperatorSplitBips": "1500"}),
		},
		{
			name: "RewardsClaimed",
			log: buildLog(t, rc, "RewardsClaimed(bytes32,address,address,address,address,uint256)",
				[]any{staker, other, op}, root, token, huge),
			want: protocol(rc, "RewardsClaimed", map[string]any{
				"root": "0xdead000000000000000000000000000000000000000000000000000000000000", "earner": lower(staker),
				"claimer": lower(other), "recipient": lower(op), "token": lower(token), "claimedAmount": huge.String(),
			}),
		},
		{
			name: "ActivationDelaySet",
			log:  buildLog(t, rc, "ActivationDelaySet(uint32,uint32)", nil, uint32(604800), uint32(86400)),
			want: protocol(rc, "ActivationDelaySet", map[string]any{"oldActivationDelay": "604800", "newActivationDelay": "86400"}),
		},
		{
			name: "ClaimerForSet",
			log:  buildLog(t, rc, "ClaimerForSet(address,address,address)", []any{staker, common.Address{}, other}),
			want: protocol(rc, "ClaimerForSet", map[string]any{
				"earner": lower(staker), "oldClaimer": chain.ZeroAddress, "claimer": lower(other)}),
		},
		{
			name: "RewardsUpdaterSet",
			log:  buildLog(t, rc, "RewardsUpdaterSet(address,address)", []any{op, other}),
			want: protocol(rc, "RewardsUpdaterSet", map[string]any{"oldRewardsUpdater": lower(op), "newRewardsUpdater": lower(other)}),
		},
		{
			name: "RewardsForAllSubmitterSet",
			log:  buildLog(t, rc, "RewardsForAllSubmitterSet(address,bool,bool)", []any{other, false, true}),
			want: protocol(rc, "RewardsForAllSubmitterSet", map[string]any{
				"rewardsForAllSubmitter": lower(other), "oldValue": false, "newValue": true}),
		},
		{
			name: "DistributionRootDisabled",
			log:  buildLog(t, rc, "DistributionRootDisabled(uint32)", []any{uint32(4)}),
			want: protocol(rc, "DistributionRootDisabled", map[string]any{"rootIndex": "4"}),
		},
		{
			name: "DistributionRootSubmitted",
			log: buildLog(t, rc, "DistributionRootSubmitted(uint32,bytes32,uint32,uint32)",
				[]any{uint32(4), hash, uint32(1714521600)}, uint32(1714600000)),
			want: protocol(rc, "DistributionRootSubmitted", map[string]any{
				"rootIndex": "4", "root": "0x00000000000000000000000000000000000000000000000000000000000000fe",
				"rewardsCalculationEndTimestamp": "1714521600", "activatedAt": "1714600000",
			}),
		},
		// Administration events of every core contract and its proxy.
		{
			name: "Initialized",
			log:  buildLog(t, dm, "Initialized(uint8)", nil, uint8(1)),
			want: protocol(dm, "Initialized", map[string]any{"version": "1"}),
		},
		{
			name: "OwnershipTransferred",
			log:  buildLog(t, am, "OwnershipTransferred(address,address)", []any{op, other}),
			want: protocol(am, "OwnershipTransferred", map[string]any{"previousOwner": lower(op), "newOwner": lower(other)}),
		},
		{
			name: "Paused",
			log:  buildLog(t, rc, "Paused(address,uint256)", []any{other}, big.NewInt(1)),
			want: protocol(rc, "Paused", map[string]any{"account": lower(other), "newPausedStatus": "1"}),
		},
		{
			name: "Unpaused",
			log:  buildLog(t, rc, "Unpaused(address,uint256)", []any{other}, big.NewInt(0)),
			want: protocol(rc, "Unpaused", map[string]any{"account": lower(other), "newPausedStatus": "0"}),
		},
		{
			name: "PauserRegistrySet",
			log:  buildLog(t, dm, "PauserRegistrySet(address,address)", nil, op, other),
			want: protocol(dm, "PauserRegistrySet", map[string]any{"pauserRegistry": lower(op), "newPauserRegistry": lower(other)}),
		},
		{
			name: "Upgraded",
			log:  buildLog(t, am, "Upgraded(address)", []any{other}),
			want: protocol(am, "Upgraded", map[string]any{"implementation": lower(other)}),
		},
		{
			name: "AdminChanged",
			log:  buildLog(t, am, "AdminChanged(address,address)", nil, op, other),
			want: protocol(am, "AdminChanged", map[string]any{"previousAdmin": lower(op), "newAdmin": lower(other)}),
		},
		{
			name: "BeaconUpgraded",
			log:  buildLog(t, am, "BeaconUpgraded(address)", []any{other}),
			want: protocol(am, "BeaconUpgraded", map[string]any{"beacon": lower(other)}),
		},
	}
}

// TestDecodeRejectsMalformedSlashingEraLogs checks that a log of every
// slashing-era shape whose topics or data do not match its event is
// ErrUndecodable and adds nothing to the batch or the observations.
func TestDecodeRejectsMalformedSlashingEraLogs(t *testing.T) {
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	var pos chain.Position
	bad := make(map[string]types.Log)
	for _, tc := range slashingEraCases(t, pos) {
		good := tc.log
		if len(good.Data) >= 32 {
			truncated := good
			truncated.Data = good.Data[:len(good.Data)-32]
			bad[tc.name+": data short of a word"] = truncated
		}
		if len(good.Topics) > 1 {
			missing := good
			missing.Topics = good.Topics[:len(good.Topics)-1]
			bad[tc.name+": a topic missing"] = missing
		}
		extra := good
		extra.Topics = append(append([]common.Hash{}, good.Topics...), common.Hash{})
		bad[tc.name+": an extra topic"] = extra
	}

	var (
		op     = common.HexToAddress("0x1111111111111111111111111111111111111111")
		avs    = common.HexToAddress("0x3333333333333333333333333333333333333333")
		strat  = common.HexToAddress("0x93c4b944D05dfe6df7645A86cd2206016c51564D")
		staker = common.HexToAddress("0x2222222222222222222222222222222222222222")
		set    = operatorSetArg{avs, 7}
	)
	bad["OperatorSlashed: more strategies than proportions"] = buildLog(t, testContracts.AllocationManager,
		"OperatorSlashed(address,(address,uint32),address[],uint256[],string)",
		nil, op, set, []common.Address{strat, strat}, []*big.Int{big.NewInt(1)}, "")
	w := withdrawalTuple{Staker: staker, DelegatedTo: op, Withdrawer: staker, Nonce: big.NewInt(0),
		Strategies: []common.Address{strat, strat}, Shares: []*big.Int{big.NewInt(1), big.NewInt(2)}}
	bad["SlashingWithdrawalQueued: fewer shares to withdraw than strategies"] = buildLog(t, testContracts.DelegationManager,
		"SlashingWithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]),uint256[])",
		nil, [32]byte{1}, w, []*big.Int{big.NewInt(1)})
	w.Shares = w.Shares[:1]
	bad["SlashingWithdrawalQueued: fewer scaled shares than strategies"] = buildLog(t, testContracts.DelegationManager,
		"SlashingWithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]),uint256[])",
		nil, [32]byte{1}, w, []*big.Int{big.NewInt(1), big.NewInt(2)})
	delay := buildLog(t, testContracts.AllocationManager, "AllocationDelaySet(address,uint32,uint32)", nil, op, uint32(1), uint32(2))
	delay.Data = append([]byte{}, delay.Data...)
	delay.Data[32+27] = 1 // the delay no longer fits a uint32
	bad["AllocationDelaySet: a delay beyond uint32"] = delay
	slashed := buildLog(t, testContracts.DelegationManager, "OperatorSharesSlashed(address,address,uint256)", []any{op}, strat, big.NewInt(1))
	slashed.Topics[1][0] = 0xff
	bad["OperatorSharesSlashed: operator topic with high bytes"] = slashed
	submitter := buildLog(t, testContracts.RewardsCoordinator, "RewardsForAllSubmitterSet(address,bool,bool)", []any{op, false, true})
	submitter.Topics[2][31] = 2
	bad["RewardsForAllSubmitterSet: a bool topic of 2"] = submitter
	disabled := buildLog(t, testContracts.RewardsCoordinator, "DistributionRootDisabled(uint32)", []any{uint32(4)})
	disabled.Topics[1][27] = 1
	bad["DistributionRootDisabled: a root index beyond uint32"] = disabled
	whitelister := buildLog(t, testContracts.StrategyManager, "StrategyWhitelisterChanged(address,address)", nil, op, op)
	whitelister.Data = whitelister.Data[:40]
	bad["StrategyWhitelisterChanged: truncated data"] = whitelister

	for name, lg := range bad {
		var b chain.Batch
		var obs Observations
		err := dec.Decode(&lg, time.Now(), &b, &obs)
		if !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: err = %v, want ErrUndecodable", name, err)
		}
		if b.Len() != 0 || !reflect.DeepEqual(obs, Observations{}) {
			t.Errorf("%s: decoded %d events and %+v from a bad log", name, b.Len(), obs)
		}
	}
}

// TestDecodeUnknownTopic checks that a log of a core contract with an
// unknown topic 0 is no error: it is counted by contract and topic, logged
// once per topic, and kept as an "unknown" protocol event; a log of a
// contract outside the deployment is ignored.
func TestDecodeUnknownTopic(t *testing.T) {
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	m := NewMetrics()
	dec.SetReporting(slog.New(slog.NewJSONHandler(&logged, nil)), m)

	future := crypto.Keccak256Hash([]byte("SomeFutureEvent(address,uint256)"))
	other := crypto.Keccak256Hash([]byte("AnotherFutureEvent()"))
	opTopic := common.BytesToHash(common.HexToAddress("0x1111111111111111111111111111111111111111").Bytes())
	mk := func(contract string, index uint, topics ...common.Hash) types.Log {
		return types.Log{
			Address: common.HexToAddress(contract), Topics: topics, Data: []byte{0x01, 0x02},
			BlockNumber: 19_000_000, TxHash: common.HexToHash("0xaaaa"), BlockHash: common.HexToHash("0xbbbb"), Index: index,
		}
	}
	logs := []types.Log{
		mk(testContracts.AllocationManager, 1, future, opTopic),
		mk(testContracts.AllocationManager, 2, future, opTopic),
		mk(testContracts.DelegationManager, 3, future),
		mk(testContracts.RewardsCoordinator, 4, other),
		mk("0x4444444444444444444444444444444444444444", 5, future),
	}
	blockT := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var b chain.Batch
	var obs Observations
	for i := range logs {
		if err := dec.Decode(&logs[i], blockT, &b, &obs); err != nil {
			t.Fatalf("log %d: %v", i, err)
		}
	}

	futureHex, otherHex := strings.ToLower(future.Hex()), strings.ToLower(other.Hex())
	wantCounts := map[UnknownEvent]uint64{
		{testContracts.AllocationManager, futureHex}: 2,
		{testContracts.DelegationManager, futureHex}: 1,
		{testContracts.RewardsCoordinator, otherHex}: 1,
	}
	if got := m.Snapshot().UnknownEvents; !reflect.DeepEqual(got, wantCounts) {
		t.Errorf("unknown event counts\n got %v\nwant %v", got, wantCounts)
	}
	wantMetric := `
# HELP stakegraph_indexer_unknown_events_total Logs of the core contracts whose event signature (topic 0) the decoder does not know, by contract and topic.
# TYPE stakegraph_indexer_unknown_events_total counter
stakegraph_indexer_unknown_events_total{contract="` + testContracts.AllocationManager + `",topic="` + futureHex + `"} 2
stakegraph_indexer_unknown_events_total{contract="` + testContracts.DelegationManager + `",topic="` + futureHex + `"} 1
stakegraph_indexer_unknown_events_total{contract="` + testContracts.RewardsCoordinator + `",topic="` + otherHex + `"} 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(wantMetric), "stakegraph_indexer_unknown_events_total"); err != nil {
		t.Error(err)
	}

	// One warning per topic, its facts grouped under "log".
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, rec)
	}
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want one per unknown topic:\n%s", len(lines), logged.String())
	}
	for i, want := range []struct{ contract, topic string }{
		{testContracts.AllocationManager, futureHex}, {testContracts.RewardsCoordinator, otherHex},
	} {
		group, _ := lines[i]["log"].(map[string]any)
		if lines[i]["level"] != "WARN" || group["contract"] != want.contract || group["topic"] != want.topic {
			t.Errorf("log line %d = %v, want a warning naming %s %s", i, lines[i], want.contract, want.topic)
		}
	}

	// The logs of the deployment are kept with their raw topics and data.
	pos := func(index uint32) chain.Position {
		return chain.Position{
			BlockNumber: 19_000_000,
			BlockHash:   "0x000000000000000000000000000000000000000000000000000000000000bbbb",
			BlockTime:   blockT,
			TxHash:      "0x000000000000000000000000000000000000000000000000000000000000aaaa",
			LogIndex:    index,
		}
	}
	opHex := strings.ToLower(opTopic.Hex())
	want := chain.Batch{ProtocolEvents: []chain.ProtocolEvent{
		{Position: pos(1), Contract: testContracts.AllocationManager, Name: "unknown",
			Args: map[string]any{"topics": []any{futureHex, opHex}, "data": "0x0102"}},
		{Position: pos(2), Contract: testContracts.AllocationManager, Name: "unknown",
			Args: map[string]any{"topics": []any{futureHex, opHex}, "data": "0x0102"}},
		{Position: pos(3), Contract: testContracts.DelegationManager, Name: "unknown",
			Args: map[string]any{"topics": []any{futureHex}, "data": "0x0102"}},
		{Position: pos(4), Contract: testContracts.RewardsCoordinator, Name: "unknown",
			Args: map[string]any{"topics": []any{otherHex}, "data": "0x0102"}},
	}}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("batch\n got %+v\nwant %+v", b, want)
	}
	if !reflect.DeepEqual(obs, Observations{}) {
		t.Errorf("observations %+v from unknown events", obs)
	}
}

// TestRenderArgNested checks the rendering of nested tuples and arrays.
func TestRenderArgNested(t *testing.T) {
	typ, err := abi.NewType("tuple", "", []abi.ArgumentMarshaling{
		{Name: "strategiesAndMultipliers", Type: "tuple[]", Components: []abi.ArgumentMarshaling{
			{Name: "strategy", Type: "address"}, {Name: "multiplier", Type: "uint96"},
		}},
		{Name: "flags", Type: "bool[2]"},
		{Name: "tag", Type: "bytes4"},
		{Name: "blob", Type: "bytes"},
		{Name: "delta", Type: "int64"},
		{Name: "note", Type: "string"},
	})
	if err != nil {
		t.Fatal(err)
	}
	args := abi.Arguments{{Name: "x", Type: typ}}
	value := struct {
		StrategiesAndMultipliers []strategyMultiplierArg
		Flags                    [2]bool
		Tag                      [4]byte
		Blob                     []byte
		Delta                    int64
		Note                     string
	}{
		StrategiesAndMultipliers: []strategyMultiplierArg{
			{common.HexToAddress("0x93c4b944D05dfe6df7645A86cd2206016c51564D"), big.NewInt(7)},
		},
		Flags: [2]bool{true, false}, Tag: [4]byte{0xAB, 0, 0, 1}, Blob: []byte{0xCD}, Delta: -5, Note: "n",
	}
	packed, err := args.Pack(value)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := args.Unpack(packed)
	if err != nil {
		t.Fatal(err)
	}
	got := renderArg(typ, reflect.ValueOf(vals[0]))
	want := map[string]any{
		"strategiesAndMultipliers": []any{
			map[string]any{"strategy": "0x93c4b944d05dfe6df7645a86cd2206016c51564d", "multiplier": "7"},
		},
		"flags": []any{true, false},
		"tag":   "0xab000001",
		"blob":  "0xcd",
		"delta": "-5",
		"note":  "n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rendered\n got %#v\nwant %#v", got, want)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("not JSON: %v", err)
	}
}
