package chain

import (
	"math/big"
	"time"
)

// Position locates one log on the chain. Block number and log index
// together identify a log uniquely and give the order in which events are
// applied; the transaction hash and block time are carried for display.
type Position struct {
	BlockNumber uint64
	BlockHash   string // lowercase 0x-prefixed; may be empty for generated data
	BlockTime   time.Time
	TxHash      string // lowercase 0x-prefixed 32-byte hash
	LogIndex    uint32
}

// Before reports whether p comes strictly before q in chain order.
func (p Position) Before(q Position) bool {
	if p.BlockNumber != q.BlockNumber {
		return p.BlockNumber < q.BlockNumber
	}
	return p.LogIndex < q.LogIndex
}

// OperatorRegistered is DelegationManager.OperatorRegistered (either variant).
type OperatorRegistered struct {
	Position
	Operator string
}

// MetadataURIUpdated is DelegationManager.OperatorMetadataURIUpdated
// (Subject = SubjectOperator) or AVSDirectory/AllocationManager.
// AVSMetadataURIUpdated (Subject = SubjectAVS). An AVS comes into existence
// with its first metadata URI update.
type MetadataURIUpdated struct {
	Position
	Subject Subject
	Address string
	URI     string
}

// Subject says whether an address names an AVS or an operator.
type Subject string

// The two kinds of metadata-bearing subjects.
const (
	SubjectAVS      Subject = "avs"
	SubjectOperator Subject = "operator"
)

// DelegationType is the type of a delegation event, as the REST contract
// spells it.
type DelegationType string

// The four delegation event types.
const (
	Delegation      DelegationType = "DELEGATION"
	Undelegation    DelegationType = "UNDELEGATION"
	SharesIncreased DelegationType = "SHARES_INCREASED"
	SharesDecreased DelegationType = "SHARES_DECREASED"
)

// Valid reports whether t is one of the four delegation types.
func (t DelegationType) Valid() bool {
	switch t {
	case Delegation, Undelegation, SharesIncreased, SharesDecreased:
		return true
	}
	return false
}

// DelegationEvent is one of StakerDelegated (DELEGATION),
// StakerUndelegated (UNDELEGATION; a forced undelegation emits
// StakerForceUndelegated beside StakerUndelegated, and only the latter
// becomes an event here, so that it is not counted twice),
// OperatorSharesIncreased (SHARES_INCREASED) and OperatorSharesDecreased
// (SHARES_DECREASED). Strategy and Shares are set only for the two share
// types.
type DelegationEvent struct {
	Position
	Type     DelegationType
	Staker   string
	Operator string
	Strategy string   // empty for DELEGATION / UNDELEGATION
	Shares   *big.Int // nil for DELEGATION / UNDELEGATION; never negative
}

// Deposit is StrategyManager.Deposit (either variant; Token is empty in the
// post-slashing variant, which does not carry it).
type Deposit struct {
	Position
	Staker   string
	Token    string
	Strategy string
	Shares   *big.Int
}

// PodSharesUpdated is EigenPodManager.PodSharesUpdated: a signed change of
// the pod owner's beacon-chain ETH shares.
type PodSharesUpdated struct {
	Position
	PodOwner    string
	SharesDelta *big.Int // may be negative
}

// WithdrawalQueued is DelegationManager.WithdrawalQueued or
// SlashingWithdrawalQueued. Strategies and Shares have equal length. Shares
// are the shares the withdrawal was queued for: before the slashing upgrade
// the deposit shares leaving the staker's balance, after it the withdrawable
// shares at queue time (the event's sharesToWithdraw). ScaledShares is set
// only for SlashingWithdrawalQueued: the struct's scaled shares (deposit
// shares × the staker's deposit scaling factor), from which the payout is
// the scaled shares × the operator's slashing factor at completion.
type WithdrawalQueued struct {
	Position
	Root         string
	Nonce        *big.Int
	Staker       string
	DelegatedTo  string // the zero address when the staker was not delegated
	Withdrawer   string
	StartBlock   uint32
	Strategies   []string
	Shares       []*big.Int
	ScaledShares []*big.Int // nil before the slashing upgrade
}

// WithdrawalCompleted is DelegationManager.WithdrawalCompleted or
// SlashingWithdrawalCompleted.
type WithdrawalCompleted struct {
	Position
	Root string
}

// RegistrationStatusUpdated is AVSDirectory.OperatorAVSRegistrationStatusUpdated.
type RegistrationStatusUpdated struct {
	Position
	Operator   string
	AVS        string
	Registered bool // status 1
}

// StrategyMultiplier is one element of a rewards submission's
// strategiesAndMultipliers.
type StrategyMultiplier struct {
	Strategy   string
	Multiplier *big.Int
}

// RewardsSubmission is one of the RewardsCoordinator's submission events,
// as Kind says: AVSRewardsSubmissionCreated (AVS = the avs topic),
// RewardsSubmissionForAllCreated and RewardsSubmissionForAllEarnersCreated
// (ForAll = true, AVS = the submitter), and the operator-directed
// submissions (AVS = the avs; OperatorSetID set for an operator set's;
// Amount = Σ OperatorRewards). An empty Kind reads as RewardsForAll when
// ForAll is set and RewardsAVS otherwise.
type RewardsSubmission struct {
	Position
	AVS             string
	ForAll          bool
	Kind            RewardsKind
	OperatorSetID   *uint32
	Submitter       string // the caller, for operator-directed submissions
	Description     string
	OperatorRewards []OperatorReward
	Nonce           *big.Int
	Hash            string
	Token           string
	Amount          *big.Int
	StartTimestamp  uint32 // unix seconds
	Duration        uint32 // seconds
	Strategies      []StrategyMultiplier
}

// AVSStrategies records the strategies an AVS accepts for restaking (what
// its service manager's getRestakeableStrategies returns) as observed at
// Position. The latest observation wins.
type AVSStrategies struct {
	Position
	AVS        string
	Strategies []string
}

// MetadataDocument is the content of a metadata URI document, fetched off
// chain, for an AVS or an operator. Position is the position of the URI
// update the document belongs to; a document older than the stored one is
// ignored.
type MetadataDocument struct {
	Position
	Subject     Subject
	Address     string
	Name        string
	Description *string
	Website     *string
	Logo        *string
	Twitter     *string
	Discord     *string
	Telegram    *string
}

// Batch is a slice of the ordered event stream: every event decoded from a
// range of blocks (or generated for it). Within a batch, order is given by
// each event's Position, not by slice order, so a batch may be assembled in
// any order.
type Batch struct {
	OperatorsRegistered []OperatorRegistered
	MetadataURIs        []MetadataURIUpdated
	MetadataDocuments   []MetadataDocument
	Delegations         []DelegationEvent
	Deposits            []Deposit
	PodShares           []PodSharesUpdated
	WithdrawalsQueued   []WithdrawalQueued
	WithdrawalsDone     []WithdrawalCompleted
	Registrations       []RegistrationStatusUpdated
	RewardsSubmissions  []RewardsSubmission
	AVSStrategies       []AVSStrategies

	// The slashing-era events.
	OperatorSetsCreated    []OperatorSetCreated
	OperatorSetStrategies  []OperatorSetStrategy
	OperatorSetMemberships []OperatorSetMembership
	AllocationDelays       []AllocationDelaySet
	Allocations            []AllocationUpdated
	MaxMagnitudes          []MaxMagnitudeUpdated
	EncumberedMagnitudes   []EncumberedMagnitudeUpdated
	Slashings              []OperatorSlashed
	OperatorSharesSlashed  []OperatorSharesSlashed
	SlashedOperatorShares  []SlashedOperatorShares
	DepositScalingFactors  []DepositScalingFactorUpdated
	BeaconSlashingFactors  []BeaconChainSlashingFactorDecreased
	ProtocolEvents         []ProtocolEvent

	// Head is the highest block this batch covers (it may hold no events).
	// Head.BlockTime is the time the batch is "as of".
	Head Position
}

// Len is the number of events in the batch.
func (b *Batch) Len() int {
	return len(b.OperatorsRegistered) + len(b.MetadataURIs) + len(b.MetadataDocuments) +
		len(b.Delegations) + len(b.Deposits) + len(b.PodShares) + len(b.WithdrawalsQueued) +
		len(b.WithdrawalsDone) + len(b.Registrations) + len(b.RewardsSubmissions) + len(b.AVSStrategies) +
		len(b.OperatorSetsCreated) + len(b.OperatorSetStrategies) + len(b.OperatorSetMemberships) +
		len(b.AllocationDelays) + len(b.Allocations) + len(b.MaxMagnitudes) + len(b.EncumberedMagnitudes) +
		len(b.Slashings) + len(b.OperatorSharesSlashed) + len(b.SlashedOperatorShares) +
		len(b.DepositScalingFactors) + len(b.BeaconSlashingFactors) + len(b.ProtocolEvents)
}

// SubmissionKind is the submission's kind, reading an empty Kind from ForAll.
func (r *RewardsSubmission) SubmissionKind() RewardsKind {
	if r.Kind != "" {
		return r.Kind
	}
	if r.ForAll {
		return RewardsForAll
	}
	return RewardsAVS
}
