// Package demo generates deterministic, realistic EigenLayer restaking data
// and loads it into a store: the demo set that `make run` serves from an
// empty database, and the mainnet-scale bench set.
//
// Generation is kept apart from loading. A generator is a pure function of
// its Options (Now, Seed, Network) and Scale: it simulates the ecosystem
// day by day with a seeded PCG source and produces the reference data that
// does not come from events (tokens and their ETH prices, strategies with
// their exchange rates, curated AVS metadata) and an ordered stream of
// chain.Batch values, one per simulated day, exactly as the contracts would
// emit them. The store derives every piece of state from that stream, so the
// stream is internally consistent: balances never go negative, every
// SHARES_INCREASED / SHARES_DECREASED follows the staker's delegation state,
// withdrawals are completed only after the minimum delay, and so on.
//
// The last Scale.SlashingDays days of the history follow the slashing
// upgrade (World.SlashingUpgrade): AVS create operator sets, operators join
// them, set allocation delays and allocate magnitude, a few operators are
// slashed, and every share movement from the upgrade on follows the
// slashing-era DelegationManager: deposit scaling factors, scaled
// withdrawals, withdrawable shares that fall with the operator's max
// magnitude and the pod owner's beacon-chain slashing factor. AVS also make
// operator-directed rewards submissions, and the core contracts emit a few
// other events (split bips, delegation approvers, distribution roots and
// claims). Everything before the upgrade is emitted as the M2 contracts did.
package demo

import (
	"errors"
	"fmt"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// Options select a generated world. The same Options always give the same
// data.
type Options struct {
	// Now is the time the generated history ends at: the head block is the
	// last block at or before it. SeedDemo and SeedBench default a zero Now
	// to the current time; Generate requires it.
	Now time.Time
	// Seed selects one of many equally plausible worlds.
	Seed int64
	// Network is the deployment whose strategies are used; the zero value
	// means mainnet.
	Network chain.Network
}

// Scale sizes a generated world and sets how busy it is.
type Scale struct {
	Days      int // days of history ending at Now
	AVS       int
	Operators int
	Stakers   int // stakers besides the operators staking for themselves

	// RewardsSubmissions is the approximate number of AVS rewards
	// submissions, spread over the last two thirds of the history.
	RewardsSubmissions int

	// Expected actions per staker per day, in parts per million.
	DepositPPM      int // another deposit by an existing staker
	PodUpdatePPM    int // a pod balance update, per staker restaking beacon ETH
	WithdrawalPPM   int // a partial withdrawal queued
	UndelegationPPM int // an undelegation (which queues withdrawals)
	DelegationPPM   int // an undelegated staker choosing an operator on its own

	// SlashingDays is the number of days of history from the slashing
	// upgrade to Now, at most half the history; 0 leaves the upgrade out.
	SlashingDays int
	// SlashPPM is the number of slashes per operator over those days, in
	// parts per million, at least two; a slash happens once an operator
	// has slashable magnitude, which takes the allocation configuration
	// delay (about 17.5 days) after the upgrade.
	SlashPPM int
}

// DemoScale is the size of the demo set: about 40 AVS, 400 operators,
// 20,000 stakers and a few hundred thousand events over 400 days, the last
// 45 after the slashing upgrade with a handful of slashes.
var DemoScale = Scale{
	Days:               400,
	AVS:                40,
	Operators:          400,
	Stakers:            20000,
	RewardsSubmissions: 700,
	DepositPPM:         9000,
	PodUpdatePPM:       40000,
	WithdrawalPPM:      2800,
	UndelegationPPM:    900,
	DelegationPPM:      3000,
	SlashingDays:       45,
	SlashPPM:           15000,
}

// BenchScale is the size of the bench set, close to mainnet: about 200 AVS,
// 2,000 operators, 300,000 stakers, 5,000,000 delegation events, 500,000
// withdrawals and 10,000 rewards submissions; the last 30 days follow the
// slashing upgrade, with about 30 slashes (the slashing era adds about 5%
// to the events, most of them deposit scaling factor updates).
var BenchScale = Scale{
	Days:               600,
	AVS:                200,
	Operators:          2000,
	Stakers:            300000,
	RewardsSubmissions: 10000,
	DepositPPM:         22000,
	PodUpdatePPM:       88000,
	WithdrawalPPM:      3000,
	UndelegationPPM:    1500,
	DelegationPPM:      3000,
	SlashingDays:       30,
	SlashPPM:           15000,
}

// MinWithdrawalDelayBlocks is the protocol's minimum withdrawal delay the
// generated worlds use: mainnet's 100800 blocks, about 14 days.
const MinWithdrawalDelayBlocks = 100800

// BlocksPerDay is the number of 12-second slots in a day.
const BlocksPerDay = 7200

// The AllocationManager's delays of the generated worlds, mainnet's: a
// deallocation from a set the operator is slashable by takes effect
// DeallocationDelayBlocks + 1 blocks after it is made (the magnitude stays
// slashable until then), and an allocation delay takes effect
// AllocationConfigurationDelayBlocks + 1 blocks after it is set.
const (
	DeallocationDelayBlocks            = 100800
	AllocationConfigurationDelayBlocks = 126000
)

// Reference is the data of a generated world that does not come from
// events.
type Reference struct {
	Tokens             []store.Token
	Strategies         []store.Strategy
	Curated            []store.CuratedMetadata // for AVS that exist at Now
	MinWithdrawalDelay uint64
}

// World is a whole generated world.
type World struct {
	Reference
	// Batches is the event stream, one batch per simulated day, in chain
	// order.
	Batches []chain.Batch
	// Head is the last block of the history, the last block at or before
	// Options.Now.
	Head chain.Position
	// SlashingUpgrade is the first block of the slashing-era protocol, or 0
	// when the world has none (Scale.SlashingDays = 0).
	SlashingUpgrade uint64
}

// Counts tallies the events of a stream by kind.
type Counts struct {
	OperatorsRegistered  int
	MetadataURIs         int
	MetadataDocuments    int
	Delegations          int // all four delegation types
	Delegate             int // DELEGATION
	Undelegate           int // UNDELEGATION
	SharesIncreased      int
	SharesDecreased      int
	Deposits             int
	PodShares            int
	WithdrawalsQueued    int
	WithdrawalsCompleted int
	Registrations        int
	RewardsSubmissions   int
	AVSStrategies        int

	// The slashing-era events.
	OperatorSets          int // sets created
	SetStrategies         int // strategies added to or removed from sets
	SetMemberships        int // operators added to or removed from sets
	AllocationDelays      int
	Allocations           int
	MaxMagnitudes         int
	EncumberedMagnitudes  int
	Slashings             int // OperatorSlashed
	SlashedShares         int // OperatorSharesDecreased for the zero staker
	DepositScalingFactors int
	BeaconSlashingFactors int
	OperatorDirected      int // operator-directed rewards submissions, both kinds
	ProtocolEvents        int

	Total int
}

// Add counts the events of b.
func (c *Counts) Add(b *chain.Batch) {
	c.OperatorsRegistered += len(b.OperatorsRegistered)
	c.MetadataURIs += len(b.MetadataURIs)
	c.MetadataDocuments += len(b.MetadataDocuments)
	c.Delegations += len(b.Delegations)
	for i := range b.Delegations {
		switch b.Delegations[i].Type {
		case chain.Delegation:
			c.Delegate++
		case chain.Undelegation:
			c.Undelegate++
		case chain.SharesIncreased:
			c.SharesIncreased++
		case chain.SharesDecreased:
			c.SharesDecreased++
		}
	}
	c.Deposits += len(b.Deposits)
	c.PodShares += len(b.PodShares)
	c.WithdrawalsQueued += len(b.WithdrawalsQueued)
	c.WithdrawalsCompleted += len(b.WithdrawalsDone)
	c.Registrations += len(b.Registrations)
	c.RewardsSubmissions += len(b.RewardsSubmissions)
	c.AVSStrategies += len(b.AVSStrategies)
	c.OperatorSets += len(b.OperatorSetsCreated)
	c.SetStrategies += len(b.OperatorSetStrategies)
	c.SetMemberships += len(b.OperatorSetMemberships)
	c.AllocationDelays += len(b.AllocationDelays)
	c.Allocations += len(b.Allocations)
	c.MaxMagnitudes += len(b.MaxMagnitudes)
	c.EncumberedMagnitudes += len(b.EncumberedMagnitudes)
	c.Slashings += len(b.Slashings)
	c.SlashedShares += len(b.SlashedOperatorShares)
	c.DepositScalingFactors += len(b.DepositScalingFactors)
	c.BeaconSlashingFactors += len(b.BeaconSlashingFactors)
	for i := range b.RewardsSubmissions {
		switch b.RewardsSubmissions[i].SubmissionKind() {
		case chain.RewardsOperatorDirectedAVS, chain.RewardsOperatorDirectedOpSet:
			c.OperatorDirected++
		}
	}
	c.ProtocolEvents += len(b.ProtocolEvents)
	c.Total += b.Len()
}

// String lists the counts on one line.
func (c Counts) String() string {
	return fmt.Sprintf("%d events: %d delegation (%d DELEGATION, %d UNDELEGATION, %d SHARES_INCREASED, %d SHARES_DECREASED), "+
		"%d deposits, %d pod share updates, %d withdrawals queued, %d completed, %d operator registrations, "+
		"%d AVS registration updates, %d rewards submissions (%d operator-directed), %d metadata URIs, %d metadata documents, "+
		"%d AVS strategy sets; slashing era: %d operator sets, %d set strategy and %d membership changes, "+
		"%d allocation delays, %d allocations, %d encumbered and %d max magnitude updates, %d slashings "+
		"(%d operator share decreases), %d deposit scaling factor and %d beacon slashing factor updates, %d other protocol events",
		c.Total, c.Delegations, c.Delegate, c.Undelegate, c.SharesIncreased, c.SharesDecreased,
		c.Deposits, c.PodShares, c.WithdrawalsQueued, c.WithdrawalsCompleted, c.OperatorsRegistered,
		c.Registrations, c.RewardsSubmissions, c.OperatorDirected, c.MetadataURIs, c.MetadataDocuments, c.AVSStrategies,
		c.OperatorSets, c.SetStrategies, c.SetMemberships, c.AllocationDelays, c.Allocations, c.EncumberedMagnitudes,
		c.MaxMagnitudes, c.Slashings, c.SlashedShares, c.DepositScalingFactors, c.BeaconSlashingFactors, c.ProtocolEvents)
}

// Counts tallies the events of the world's stream.
func (w *World) Counts() Counts {
	var c Counts
	for i := range w.Batches {
		c.Add(&w.Batches[i])
	}
	return c
}

// Generate returns the demo world (DemoScale) for opts without touching a
// database.
func Generate(opts Options) (*World, error) {
	return GenerateScale(opts, DemoScale)
}

// GenerateScale returns the world of the given scale for opts, all of it in
// memory; use it for small scales only.
func GenerateScale(opts Options, sc Scale) (*World, error) {
	w, _, err := generate(opts, sc)
	return w, err
}

// generate returns the world of the given scale and the generator that
// made it, whose final state the tests compare with the store's.
func generate(opts Options, sc Scale) (*World, *generator, error) {
	g, err := newGenerator(opts, sc)
	if err != nil {
		return nil, nil, err
	}
	w := &World{Reference: g.reference()}
	if g.upgradeBlock <= g.headBlock {
		w.SlashingUpgrade = g.upgradeBlock
	}
	err = g.run(func(b *chain.Batch) error {
		w.Batches = append(w.Batches, *b)
		w.Head = b.Head
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return w, g, nil
}

func (sc Scale) validate() error {
	switch {
	case sc.Days < 30:
		return fmt.Errorf("scale: %d days of history; need at least 30", sc.Days)
	case sc.AVS < 1 || sc.Operators < 1 || sc.Stakers < 1:
		return fmt.Errorf("scale: need at least one AVS, operator and staker (have %d, %d, %d)", sc.AVS, sc.Operators, sc.Stakers)
	case sc.RewardsSubmissions < 0 || sc.DepositPPM < 0 || sc.PodUpdatePPM < 0 || sc.WithdrawalPPM < 0 ||
		sc.UndelegationPPM < 0 || sc.DelegationPPM < 0 || sc.SlashingDays < 0 || sc.SlashPPM < 0:
		return errors.New("scale: negative rate")
	}
	return nil
}
