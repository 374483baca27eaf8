package chain

import "math/big"

// WAD is 1e18, the fixed-point unit of magnitudes, slashing factors and
// deposit scaling factors in the slashing-era contracts.
var WAD = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// OperatorSet names one operator set: an AVS and an id it chose.
type OperatorSet struct {
	AVS string
	ID  uint32
}

// OperatorSetCreated is AllocationManager.OperatorSetCreated.
type OperatorSetCreated struct {
	Position
	Set OperatorSet
}

// OperatorSetStrategy is AllocationManager.StrategyAddedToOperatorSet
// (Added) or StrategyRemovedFromOperatorSet (not Added).
type OperatorSetStrategy struct {
	Position
	Set      OperatorSet
	Strategy string
	Added    bool
}

// OperatorSetMembership is AllocationManager.OperatorAddedToOperatorSet
// (Added) or OperatorRemovedFromOperatorSet (not Added). An operator is a
// member of a set while its latest membership event says Added.
type OperatorSetMembership struct {
	Position
	Operator string
	Set      OperatorSet
	Added    bool
}

// AllocationDelaySet is AllocationManager.AllocationDelaySet: the delay, in
// blocks, before an operator's allocations take effect, itself effective
// from EffectBlock.
type AllocationDelaySet struct {
	Position
	Operator    string
	Delay       uint32
	EffectBlock uint32
}

// AllocationUpdated is AllocationManager.AllocationUpdated: the magnitude an
// operator allocates to an operator set in a strategy, effective from
// EffectBlock (a pending change until then). The latest event of an
// (operator, set, strategy) is its allocation.
type AllocationUpdated struct {
	Position
	Operator    string
	Set         OperatorSet
	Strategy    string
	Magnitude   uint64
	EffectBlock uint32
}

// MaxMagnitudeUpdated is AllocationManager.MaxMagnitudeUpdated. An
// operator's max magnitude in a strategy starts at WAD and falls with every
// slash; it scales the withdrawable shares of every staker delegated to it.
type MaxMagnitudeUpdated struct {
	Position
	Operator     string
	Strategy     string
	MaxMagnitude uint64
}

// EncumberedMagnitudeUpdated is AllocationManager.EncumberedMagnitudeUpdated:
// the part of an operator's max magnitude allocated or pending allocation.
type EncumberedMagnitudeUpdated struct {
	Position
	Operator            string
	Strategy            string
	EncumberedMagnitude uint64
}

// OperatorSlashed is AllocationManager.OperatorSlashed. WadsSlashed[i] is
// the proportion (of WAD) of the operator's magnitude in Strategies[i] that
// the slash took.
type OperatorSlashed struct {
	Position
	Operator    string
	Set         OperatorSet
	Strategies  []string
	WadsSlashed []*big.Int
	Description string
}

// OperatorSharesSlashed is DelegationManager.OperatorSharesSlashed: the
// shares a slash burns in one strategy, including those of withdrawals still
// slashable in the queue. Operator shares fall by the amount of the
// OperatorSharesDecreased event the slash emits for the zero staker, which
// the decoder turns into SlashedOperatorShares.
type OperatorSharesSlashed struct {
	Position
	Operator     string
	Strategy     string
	BurnedShares *big.Int
}

// SlashedOperatorShares is the DelegationManager.OperatorSharesDecreased
// event that a slash emits with the zero address as staker: the operator's
// delegated shares in the strategy fall by Shares. It names no staker and is
// not a delegation event.
type SlashedOperatorShares struct {
	Position
	Operator string
	Strategy string
	Shares   *big.Int
}

// DepositScalingFactorUpdated is DelegationManager.DepositScalingFactorUpdated.
// A staker's deposit scaling factor in a strategy starts at WAD; the latest
// event sets it.
type DepositScalingFactorUpdated struct {
	Position
	Staker   string
	Strategy string
	Factor   *big.Int
}

// BeaconChainSlashingFactorDecreased is
// EigenPodManager.BeaconChainSlashingFactorDecreased. A pod owner's
// beacon-chain slashing factor starts at WAD; the latest event sets it.
type BeaconChainSlashingFactorDecreased struct {
	Position
	Staker   string
	Previous uint64
	New      uint64
}

// OperatorReward is one operator's amount in an operator-directed rewards
// submission.
type OperatorReward struct {
	Operator string
	Amount   *big.Int
}

// RewardsKind says which RewardsCoordinator event created a submission.
type RewardsKind string

// The rewards submission kinds.
const (
	RewardsAVS                   RewardsKind = "avs"                     // AVSRewardsSubmissionCreated
	RewardsForAll                RewardsKind = "for_all"                 // RewardsSubmissionForAllCreated
	RewardsForAllEarners         RewardsKind = "for_all_earners"         // RewardsSubmissionForAllEarnersCreated
	RewardsOperatorDirectedAVS   RewardsKind = "operator_directed_avs"   // OperatorDirectedAVSRewardsSubmissionCreated
	RewardsOperatorDirectedOpSet RewardsKind = "operator_directed_opset" // OperatorDirectedOperatorSetRewardsSubmissionCreated
)

// ProtocolEvent is any other event of the core contracts, kept as its
// decoded arguments: configuration changes (delegation approvers, AVS
// registrars, split bips), bookkeeping (burnable shares, pod deposits, total
// shares) and claims. Args holds each argument by name, as text: addresses
// and hashes lowercase hex, integers in decimal, tuples and arrays as JSON.
// An event whose signature the decoder does not know is kept with its raw
// topics and data under the name "unknown".
type ProtocolEvent struct {
	Position
	Contract string // the emitting contract's address, lowercase
	Name     string // the event's name, e.g. "DelegationApproverUpdated"
	Args     map[string]any
}
