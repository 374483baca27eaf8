package demo

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/stakegraph/stakegraph/chain"
)

// streamEvent is one event of a batch with its position, for replaying a
// stream in chain order.
type streamEvent struct {
	pos chain.Position
	ev  any
}

// ordered returns the events of b in chain order. Metadata documents share
// the position of their URI update and come right after it.
func ordered(b *chain.Batch) []streamEvent {
	var out []streamEvent
	add := func(p chain.Position, e any) { out = append(out, streamEvent{p, e}) }
	for i := range b.OperatorsRegistered {
		add(b.OperatorsRegistered[i].Position, &b.OperatorsRegistered[i])
	}
	for i := range b.MetadataURIs {
		add(b.MetadataURIs[i].Position, &b.MetadataURIs[i])
	}
	for i := range b.Delegations {
		add(b.Delegations[i].Position, &b.Delegations[i])
	}
	for i := range b.Deposits {
		add(b.Deposits[i].Position, &b.Deposits[i])
	}
	for i := range b.PodShares {
		add(b.PodShares[i].Position, &b.PodShares[i])
	}
	for i := range b.WithdrawalsQueued {
		add(b.WithdrawalsQueued[i].Position, &b.WithdrawalsQueued[i])
	}
	for i := range b.WithdrawalsDone {
		add(b.WithdrawalsDone[i].Position, &b.WithdrawalsDone[i])
	}
	for i := range b.Registrations {
		add(b.Registrations[i].Position, &b.Registrations[i])
	}
	for i := range b.RewardsSubmissions {
		add(b.RewardsSubmissions[i].Position, &b.RewardsSubmissions[i])
	}
	for i := range b.AVSStrategies {
		add(b.AVSStrategies[i].Position, &b.AVSStrategies[i])
	}
	for i := range b.OperatorSetsCreated {
		add(b.OperatorSetsCreated[i].Position, &b.OperatorSetsCreated[i])
	}
	for i := range b.OperatorSetStrategies {
		add(b.OperatorSetStrategies[i].Position, &b.OperatorSetStrategies[i])
	}
	for i := range b.OperatorSetMemberships {
		add(b.OperatorSetMemberships[i].Position, &b.OperatorSetMemberships[i])
	}
	for i := range b.AllocationDelays {
		add(b.AllocationDelays[i].Position, &b.AllocationDelays[i])
	}
	for i := range b.Allocations {
		add(b.Allocations[i].Position, &b.Allocations[i])
	}
	for i := range b.MaxMagnitudes {
		add(b.MaxMagnitudes[i].Position, &b.MaxMagnitudes[i])
	}
	for i := range b.EncumberedMagnitudes {
		add(b.EncumberedMagnitudes[i].Position, &b.EncumberedMagnitudes[i])
	}
	for i := range b.Slashings {
		add(b.Slashings[i].Position, &b.Slashings[i])
	}
	for i := range b.OperatorSharesSlashed {
		add(b.OperatorSharesSlashed[i].Position, &b.OperatorSharesSlashed[i])
	}
	for i := range b.SlashedOperatorShares {
		add(b.SlashedOperatorShares[i].Position, &b.SlashedOperatorShares[i])
	}
	for i := range b.DepositScalingFactors {
		add(b.DepositScalingFactors[i].Position, &b.DepositScalingFactors[i])
	}
	for i := range b.BeaconSlashingFactors {
		add(b.BeaconSlashingFactors[i].Position, &b.BeaconSlashingFactors[i])
	}
	for i := range b.ProtocolEvents {
		add(b.ProtocolEvents[i].Position, &b.ProtocolEvents[i])
	}
	for i := range b.MetadataDocuments {
		add(b.MetadataDocuments[i].Position, &b.MetadataDocuments[i])
	}
	slices.SortStableFunc(out, func(x, y streamEvent) int {
		if c := cmp.Compare(x.pos.BlockNumber, y.pos.BlockNumber); c != 0 {
			return c
		}
		return cmp.Compare(x.pos.LogIndex, y.pos.LogIndex)
	})
	return out
}

type queued struct {
	staker      string
	start       uint64
	completed   bool
	done        uint64
	queuedAt    time.Time
	delegatedTo string     // "" when not delegated
	strategies  []string   // the withdrawal's strategies
	scaled      []*big.Int // its scaled shares; the shares before the upgrade
}

// The replay's own fixed-point arithmetic, written out apart from the
// generator's so that the two check each other.
var wadInt = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

const wadU64 uint64 = 1e18

func wMul(x, y *big.Int) *big.Int { return new(big.Int).Div(new(big.Int).Mul(x, y), wadInt) }
func wDiv(x, y *big.Int) *big.Int { return new(big.Int).Div(new(big.Int).Mul(x, wadInt), y) }
func ceilDiv(x, y *big.Int) *big.Int {
	q, m := new(big.Int).DivMod(x, y, new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}
func u64(v uint64) *big.Int { return new(big.Int).SetUint64(v) }

type pair = [2]string // (staker or operator, strategy)

type setKey = chain.OperatorSet

type allocKey struct {
	op    string
	set   setKey
	strat string
}

// replayAlloc is an allocation as the replay follows it: cur in effect,
// target from effect on (effect 0: nothing pending).
type replayAlloc struct {
	cur, target, effect uint64
}

type replaySet struct {
	strategies map[string]bool
	members    map[string]bool
	left       map[string]uint64 // operator → the block it last left the set
}

// slashable reports whether the set can slash the operator: a member, or
// one that left no more than the deallocation delay ago.
func (s *replaySet) slashable(op string, block uint64) bool {
	left, ok := s.left[op]
	return s.members[op] || ok && block <= left+DeallocationDelayBlocks
}

type replayDelay struct {
	delay  uint32
	effect uint64
}

type histPoint struct{ block, mag uint64 }

type queuedScaledAt struct {
	block  uint64
	scaled *big.Int
}

// openSlash is one strategy of a slash whose events the replay has seen
// part of: the magnitude decrease, the max magnitude update, then the
// shares taken and burned; OperatorSlashed closes it.
type openSlash struct {
	op, strat        string
	set              setKey
	prevMax, newMax  uint64
	taken, burned    bool
	takenShares      *big.Int
	slashedMagnitude uint64
}

// replay holds the state a stream builds, following the contracts' rules.
type replay struct {
	net        chain.Network
	upgrade    uint64 // the first block of the slashing era; MaxUint64 without one
	head       uint64
	tokens     map[string]bool
	operators  map[string]bool
	avs        map[string]bool
	delegated  map[string]string              // staker → operator
	leaving    map[string]string              // staker → operator it undelegated from in the current tx
	leavingTx  map[string]string              // staker → that tx
	balances   map[string]map[string]*big.Int // staker → strategy → deposit shares
	opShares   map[string]map[string]*big.Int // operator → strategy → SHARES_INCREASED − SHARES_DECREASED − slashed
	nonces     map[string]int64
	queued     map[string]*queued
	registered map[[2]string]bool
	lastPos    chain.Position
	started    bool

	// The slashing-era state.
	dsf      map[pair]*big.Int // deposit scaling factors (absent: WAD)
	bcsf     map[string]uint64 // beacon-chain slashing factors (absent: WAD)
	maxMag   map[pair]uint64   // (operator, strategy) → max magnitude (absent: WAD)
	magHist  map[pair][]histPoint
	sets     map[setKey]*replaySet
	allocs   map[allocKey]*replayAlloc
	opAllocs map[pair][]*replayAlloc
	delays   map[string][]replayDelay
	queuedOp map[pair][]queuedScaledAt // scaled shares queued by an operator's stakers
	inexact  map[pair]bool             // (operator, strategy) whose shares may differ from Σ withdrawable by rounding
	budget   map[pair]*big.Int         // how far apart rounding can have taken them, in wei

	// The transaction being replayed and what it still owes.
	tx           string
	txOperators  map[string]bool     // operators the transaction registers
	expDSF       map[pair]*big.Int   // deposit scaling factor updates the transaction must emit
	expInc       map[pair]*big.Int   // operator share increases it must emit after them
	expDec       map[pair]*big.Int   // operator share decreases of beacon slashing factor decreases
	decs         map[pair]*big.Int   // operator share decreases awaiting their withdrawal
	resets       map[pair]*big.Int   // positions whose factor was reset, with the factor before
	payouts      map[pair]*big.Int   // shares a completion owes as deposits
	payoutsDue   int                 // payouts the completion made
	paid         int                 // payouts deposited
	decreased    map[allocKey]uint64 // magnitude taken at once from an allocation in the transaction
	wasSlashable map[allocKey]bool   // whether that magnitude was slashable (so only a slash may take it at once)
	slashes      []*openSlash        // strategies slashed in the transaction not yet in an OperatorSlashed
	txPos        chain.Position      // the transaction's first position

	// What happened, for the tests' assertions.
	stakersSeen map[string]bool
	recentTypes map[chain.DelegationType]int // delegation events in the last 7 days
	recentOther map[string]int               // other kinds in the last 7 days
	redelegated int                          // delegations of a staker to a different operator than before
	previous    map[string]string
	forAll      int
	rewardAVS   map[string]bool
	rewardToken map[string]bool
	stats       slashingStats
}

// slashingStats counts what the slashing era held.
type slashingStats struct {
	sets, setStrategyRemovals, memberships, leaves, allocations, deallocations int
	slashes, beaconDecreases, scalingFactors, scaledWithdrawals, payouts       int
	operatorDirected, operatorSetRewards, forAllEarners                        int
	protocol                                                                   map[string]int
	pendingDeallocations                                                       int    // at the head
	diverging                                                                  int    // positions whose deposit and withdrawable shares differ at the end
	inexactPairs                                                               int    // (operator, strategy) pairs with rounding
	maxDrift                                                                   uint64 // the largest |operator shares − Σ withdrawable| over them, in wei
	maxDriftPerStaker                                                          float64
	maxBudgetUse                                                               float64 // the largest drift over its rounding budget
}

func newReplay(net chain.Network, w *World) *replay {
	r := &replay{
		net: net, upgrade: math.MaxUint64, head: w.Head.BlockNumber,
		tokens: map[string]bool{}, operators: map[string]bool{}, avs: map[string]bool{},
		delegated: map[string]string{}, leaving: map[string]string{}, leavingTx: map[string]string{},
		balances: map[string]map[string]*big.Int{}, opShares: map[string]map[string]*big.Int{},
		nonces: map[string]int64{}, queued: map[string]*queued{}, registered: map[[2]string]bool{},
		dsf: map[pair]*big.Int{}, bcsf: map[string]uint64{}, maxMag: map[pair]uint64{}, magHist: map[pair][]histPoint{},
		sets: map[setKey]*replaySet{}, allocs: map[allocKey]*replayAlloc{}, opAllocs: map[pair][]*replayAlloc{},
		delays: map[string][]replayDelay{}, queuedOp: map[pair][]queuedScaledAt{}, inexact: map[pair]bool{},
		budget:      map[pair]*big.Int{},
		stakersSeen: map[string]bool{}, recentTypes: map[chain.DelegationType]int{}, recentOther: map[string]int{},
		previous: map[string]string{}, rewardAVS: map[string]bool{}, rewardToken: map[string]bool{},
	}
	r.stats.protocol = map[string]int{}
	if w.SlashingUpgrade > 0 {
		r.upgrade = w.SlashingUpgrade
	}
	for _, t := range w.Tokens {
		r.tokens[t.Address] = true
	}
	r.resetTx()
	return r
}

func (r *replay) resetTx() {
	r.txOperators = map[string]bool{}
	r.expDSF, r.expInc, r.expDec = map[pair]*big.Int{}, map[pair]*big.Int{}, map[pair]*big.Int{}
	r.decs, r.resets, r.payouts = map[pair]*big.Int{}, map[pair]*big.Int{}, map[pair]*big.Int{}
	r.payoutsDue, r.paid = 0, 0
	r.decreased, r.wasSlashable = map[allocKey]uint64{}, map[allocKey]bool{}
	r.slashes = nil
}

func add(m map[string]map[string]*big.Int, k1, k2 string, v *big.Int, sign int) *big.Int {
	inner := m[k1]
	if inner == nil {
		inner = map[string]*big.Int{}
		m[k1] = inner
	}
	cur := inner[k2]
	if cur == nil {
		cur = new(big.Int)
		inner[k2] = cur
	}
	if sign >= 0 {
		cur.Add(cur, v)
	} else {
		cur.Sub(cur, v)
	}
	return cur
}

func checkAddress(what, a string) error {
	if !chain.IsAddress(a) || a != strings.ToLower(a) {
		return fmt.Errorf("%s %q is not a lowercase address", what, a)
	}
	return nil
}

// apply replays one batch; recentSince is the start of the "last 7 days".
func (r *replay) apply(b *chain.Batch, clock chainClock, recentSince time.Time) error {
	events := ordered(b)
	for i, se := range events {
		p := se.pos
		if _, isDoc := se.ev.(*chain.MetadataDocument); !isDoc {
			if r.started && !r.lastPos.Before(p) {
				return fmt.Errorf("position %d/%d does not follow %d/%d", p.BlockNumber, p.LogIndex, r.lastPos.BlockNumber, r.lastPos.LogIndex)
			}
			r.lastPos, r.started = p, true
		} else if p.BlockNumber != r.lastPos.BlockNumber || p.LogIndex != r.lastPos.LogIndex {
			return fmt.Errorf("metadata document at %d/%d has no URI update at its position", p.BlockNumber, p.LogIndex)
		}
		if p.BlockNumber > b.Head.BlockNumber {
			return fmt.Errorf("event at block %d after the batch head %d", p.BlockNumber, b.Head.BlockNumber)
		}
		if !p.BlockTime.Equal(clock.timeOf(p.BlockNumber)) {
			return fmt.Errorf("block %d has time %s, want %s", p.BlockNumber, p.BlockTime, clock.timeOf(p.BlockNumber))
		}
		if !chain.IsHash(p.TxHash) || p.TxHash != strings.ToLower(p.TxHash) {
			return fmt.Errorf("bad tx hash %q", p.TxHash)
		}
		if p.TxHash != r.tx {
			if err := r.endTx(); err != nil {
				return fmt.Errorf("transaction at block %d log %d: %w", r.txPos.BlockNumber, r.txPos.LogIndex, err)
			}
			r.tx, r.txPos = p.TxHash, p
			// A transaction's logs are consecutive. The slashing-era
			// registerAsOperator emits OperatorRegistered after the
			// operator's other events.
			for _, next := range events[i:] {
				if next.pos.TxHash != p.TxHash {
					break
				}
				if e, ok := next.ev.(*chain.OperatorRegistered); ok {
					if r.operators[e.Operator] {
						return fmt.Errorf("operator %s registered twice", e.Operator)
					}
					r.operators[e.Operator], r.txOperators[e.Operator] = true, true
				}
			}
		}
		recent := !p.BlockTime.Before(recentSince)
		if err := r.event(p, se.ev, recent); err != nil {
			return fmt.Errorf("block %d log %d: %w", p.BlockNumber, p.LogIndex, err)
		}
	}
	return nil
}

// endTx checks that the transaction emitted everything its events owe.
func (r *replay) endTx() error {
	defer r.resetTx()
	for _, m := range []struct {
		what string
		m    map[pair]*big.Int
	}{
		{"deposit scaling factor update", r.expDSF}, {"operator share increase", r.expInc},
		{"operator share decrease of a beacon slashing factor decrease", r.expDec},
		{"operator share decrease without its withdrawal", r.decs},
		{"deposit scaling factor reset without emptying its position", r.resets},
	} {
		for k, v := range m.m {
			return fmt.Errorf("missing %s for %s in %s (%s)", m.what, k[0], k[1], v)
		}
	}
	if r.paid != 0 && r.paid != r.payoutsDue {
		return fmt.Errorf("a completion as shares deposited %d of its %d payouts", r.paid, r.payoutsDue)
	}
	for _, s := range r.slashes {
		return fmt.Errorf("slash of %s in %s without OperatorSlashed", s.op, s.strat)
	}
	for k := range r.decreased {
		if r.wasSlashable[k] {
			return fmt.Errorf("slashable magnitude of %s in %v deallocated at once", k.op, k.set)
		}
	}
	return nil
}

func (r *replay) slashingEra(p chain.Position) bool { return p.BlockNumber >= r.upgrade }

func (r *replay) event(p chain.Position, ev any, recent bool) error {
	switch ev.(type) {
	case *chain.OperatorSetCreated, *chain.OperatorSetStrategy, *chain.OperatorSetMembership, *chain.AllocationDelaySet,
		*chain.AllocationUpdated, *chain.MaxMagnitudeUpdated, *chain.EncumberedMagnitudeUpdated, *chain.OperatorSlashed,
		*chain.OperatorSharesSlashed, *chain.SlashedOperatorShares, *chain.DepositScalingFactorUpdated,
		*chain.BeaconChainSlashingFactorDecreased, *chain.ProtocolEvent:
		if !r.slashingEra(p) {
			return fmt.Errorf("%T before the slashing upgrade", ev)
		}
		return r.slashingEvent(p, ev)
	}
	switch e := ev.(type) {
	case *chain.OperatorRegistered:
		if !r.txOperators[e.Operator] {
			return fmt.Errorf("operator %s registered twice", e.Operator)
		}
		if recent {
			r.recentOther["operator"]++
		}
	case *chain.MetadataURIUpdated:
		if err := checkAddress("metadata subject", e.Address); err != nil {
			return err
		}
		switch e.Subject {
		case chain.SubjectAVS:
			r.avs[e.Address] = true
		case chain.SubjectOperator:
			if !r.operators[e.Address] {
				return fmt.Errorf("metadata URI for unregistered operator %s", e.Address)
			}
		default:
			return fmt.Errorf("bad subject %q", e.Subject)
		}
	case *chain.MetadataDocument:
	case *chain.AVSStrategies:
		if !r.avs[e.AVS] {
			return fmt.Errorf("strategies for unknown AVS %s", e.AVS)
		}
		for _, s := range e.Strategies {
			if _, ok := r.net.Strategy(s); !ok {
				return fmt.Errorf("AVS strategy %s unknown", s)
			}
		}
	case *chain.RegistrationStatusUpdated:
		if !r.operators[e.Operator] || !r.avs[e.AVS] {
			return fmt.Errorf("registration of %s to %s before both exist", e.Operator, e.AVS)
		}
		key := [2]string{e.Operator, e.AVS}
		if r.registered[key] == e.Registered {
			return fmt.Errorf("registration of %s to %s repeats status %v", e.Operator, e.AVS, e.Registered)
		}
		r.registered[key] = e.Registered
		if recent {
			r.recentOther["registration"]++
		}
	case *chain.DelegationEvent:
		return r.delegation(p, e, recent)
	case *chain.Deposit:
		st, ok := r.net.Strategy(e.Strategy)
		if !ok || st.Kind == chain.KindBeacon {
			return fmt.Errorf("deposit into %s", e.Strategy)
		}
		want := st.UnderlyingToken
		if r.slashingEra(p) {
			want = "" // the slashing-era Deposit event carries no token
		}
		if e.Token != want {
			return fmt.Errorf("deposit token %s, want %s", e.Token, want)
		}
		if e.Shares.Sign() <= 0 {
			return fmt.Errorf("deposit of %s shares", e.Shares)
		}
		if r.slashingEra(p) {
			if err := r.increase(e.Staker, e.Strategy, e.Shares); err != nil {
				return err
			}
		}
		add(r.balances, e.Staker, e.Strategy, e.Shares, 1)
		r.stakersSeen[e.Staker] = true
		if recent {
			r.recentOther["deposit"]++
		}
	case *chain.PodSharesUpdated:
		if r.slashingEra(p) {
			if e.SharesDelta.Sign() <= 0 {
				return fmt.Errorf("pod share update of %s after the slashing upgrade, which lowers the slashing factor instead", e.SharesDelta)
			}
			if err := r.increase(e.PodOwner, chain.BeaconStrategy, e.SharesDelta); err != nil {
				return err
			}
		}
		if bal := add(r.balances, e.PodOwner, chain.BeaconStrategy, e.SharesDelta, 1); bal.Sign() < 0 {
			return fmt.Errorf("pod owner %s goes negative: %s", e.PodOwner, bal)
		}
		r.stakersSeen[e.PodOwner] = true
		if recent {
			r.recentOther["pod"]++
		}
	case *chain.WithdrawalQueued:
		return r.withdrawalQueued(p, e, recent)
	case *chain.WithdrawalCompleted:
		q := r.queued[e.Root]
		switch {
		case q == nil:
			return fmt.Errorf("completion of unknown withdrawal %s", e.Root)
		case q.completed:
			return fmt.Errorf("withdrawal %s completed twice", e.Root)
		case p.BlockNumber < q.start+MinWithdrawalDelayBlocks:
			return fmt.Errorf("withdrawal %s completed %d blocks after its start", e.Root, p.BlockNumber-q.start)
		}
		q.completed, q.done = true, p.BlockNumber
		if r.slashingEra(p) {
			if err := r.completion(p, q); err != nil {
				return err
			}
		}
		if recent {
			r.recentOther["completed"]++
		}
	case *chain.RewardsSubmission:
		return r.rewards(p, e, recent)
	default:
		return fmt.Errorf("unexpected event %T", ev)
	}
	return nil
}

// factor is a position's deposit scaling factor.
func (r *replay) factor(k pair) *big.Int {
	if f := r.dsf[k]; f != nil {
		return f
	}
	return wadInt
}

func (r *replay) beaconFactor(staker string) uint64 {
	if f, ok := r.bcsf[staker]; ok {
		return f
	}
	return wadU64
}

func (r *replay) magnitude(op, strat string) uint64 {
	if m, ok := r.maxMag[pair{op, strat}]; ok {
		return m
	}
	return wadU64
}

// slashingFactor is the DelegationManager's slashing factor of a staker
// delegated to op ("" for none) in a strategy.
func (r *replay) slashingFactor(staker, op, strat string, maxMag uint64) *big.Int {
	f := u64(maxMag)
	if op == "" {
		f = new(big.Int).Set(wadInt)
	}
	if strat == chain.BeaconStrategy {
		f = wMul(f, u64(r.beaconFactor(staker)))
	}
	return f
}

func (r *replay) balance(staker, strat string) *big.Int {
	if v := r.balances[staker][strat]; v != nil && v.Sign() > 0 {
		return v
	}
	return new(big.Int)
}

// withdrawable is DelegationManager.getWithdrawableShares of a position.
func (r *replay) withdrawable(staker, strat string) *big.Int {
	op := r.delegated[staker]
	sf := r.slashingFactor(staker, op, strat, r.magnitude(op, strat))
	return wMul(wMul(r.balance(staker, strat), r.factor(pair{staker, strat})), sf)
}

// allow adds to the rounding budget of an operator's shares in a strategy
// what one operation on a position of shares can cost: a unit of the
// deposit scaling factor, an 18-decimal fixed-point number, is worth up to
// shares / 1e18 wei of withdrawable shares, and the factor's update rounds
// three times; each mulWad rounds down by less than a wei.
func (r *replay) allow(op, strat string, shares *big.Int) {
	if op == "" {
		return
	}
	b := r.budget[pair{op, strat}]
	if b == nil {
		b = new(big.Int)
		r.budget[pair{op, strat}] = b
	}
	b.Add(b, big.NewInt(4))
	if shares != nil {
		b.Add(b, new(big.Int).Div(new(big.Int).Mul(shares, big.NewInt(4)), wadInt))
	}
}

func (r *replay) markInexact(op, strat string, factors ...*big.Int) {
	if op == "" {
		return
	}
	for _, f := range factors {
		if f.Cmp(wadInt) != 0 {
			r.inexact[pair{op, strat}] = true
		}
	}
}

// increase is a deposit (or positive pod update) of d shares after the
// upgrade: the deposit scaling factor the DelegationManager must emit for
// it, the operator share increase that must follow when the staker is
// delegated, and, in a completion, the payout it must match.
func (r *replay) increase(staker, strat string, d *big.Int) error {
	k := pair{staker, strat}
	op := r.delegated[staker]
	sf := r.slashingFactor(staker, op, strat, r.magnitude(op, strat))
	prev := r.balance(staker, strat)
	old := r.factor(k)
	var next *big.Int
	if prev.Sign() == 0 {
		next = wDiv(old, sf)
	} else {
		cur := wMul(wMul(prev, old), sf)
		next = wDiv(wDiv(new(big.Int).Add(cur, d), new(big.Int).Add(prev, d)), sf)
	}
	if r.expDSF[k] != nil {
		return fmt.Errorf("two increases of %s in %s in one transaction", staker, strat)
	}
	r.dsf[k], r.expDSF[k] = next, next
	if op != "" {
		r.expInc[k] = d
		r.markInexact(op, strat, sf, old)
		r.allow(op, strat, new(big.Int).Add(prev, d))
	}
	if len(r.payouts) > 0 || r.payoutsDue > 0 {
		pay := r.payouts[k]
		if pay == nil {
			return fmt.Errorf("deposit of %s in %s in a completion that owes it nothing", staker, strat)
		}
		if pay.Cmp(d) != 0 {
			return fmt.Errorf("completion as shares pays %s of %s, want %s", d, strat, pay)
		}
		delete(r.payouts, k)
		r.paid++
		r.stats.payouts++
	}
	return nil
}

// completion records what a slashing-era completion pays if received as
// shares: per strategy, the scaled shares × the slashing factor of the
// operator it was queued with, as of the last block of the delay.
func (r *replay) completion(p chain.Position, q *queued) error {
	until := q.start + MinWithdrawalDelayBlocks
	if p.BlockNumber <= until {
		return fmt.Errorf("completion in block %d, not after the last slashable block %d", p.BlockNumber, until)
	}
	for i, strat := range q.strategies {
		m := wadU64
		for _, h := range r.magHist[pair{q.delegatedTo, strat}] {
			if h.block <= until {
				m = h.mag
			}
		}
		pay := wMul(q.scaled[i], r.slashingFactor(q.staker, q.delegatedTo, strat, m))
		if pay.Sign() > 0 {
			r.payouts[pair{q.staker, strat}] = pay
			r.payoutsDue++
		}
	}
	return nil
}

func (r *replay) delegation(p chain.Position, e *chain.DelegationEvent, recent bool) error {
	if recent {
		r.recentTypes[e.Type]++
	}
	if !r.operators[e.Operator] {
		return fmt.Errorf("%s names unregistered operator %s", e.Type, e.Operator)
	}
	switch e.Type {
	case chain.Delegation:
		if op, ok := r.delegated[e.Staker]; ok {
			return fmt.Errorf("staker %s delegates while delegated to %s", e.Staker, op)
		}
		if prev, ok := r.previous[e.Staker]; ok && prev != e.Operator {
			r.redelegated++
		}
		r.delegated[e.Staker] = e.Operator
		r.previous[e.Staker] = e.Operator
		if r.slashingEra(p) {
			// _delegate: each position's factor is divided by the
			// operator's max magnitude, and the operator gains the
			// deposit shares (withdrawable ones for beacon ETH).
			for strat, bal := range r.balances[e.Staker] {
				if bal.Sign() <= 0 {
					continue
				}
				k := pair{e.Staker, strat}
				added := new(big.Int).Set(bal)
				if strat == chain.BeaconStrategy {
					added = wMul(wMul(bal, r.factor(k)), u64(r.beaconFactor(e.Staker)))
				}
				if added.Sign() == 0 {
					continue
				}
				mag := u64(r.magnitude(e.Operator, strat))
				r.markInexact(e.Operator, strat, mag, r.factor(k))
				r.allow(e.Operator, strat, wMul(bal, r.factor(k)))
				if strat == chain.BeaconStrategy {
					r.markInexact(e.Operator, strat, u64(r.beaconFactor(e.Staker)))
				}
				r.dsf[k] = wDiv(r.factor(k), mag)
				r.expDSF[k], r.expInc[k] = r.dsf[k], added
			}
		}
	case chain.Undelegation:
		if r.delegated[e.Staker] != e.Operator {
			return fmt.Errorf("staker %s undelegates from %s but is delegated to %q", e.Staker, e.Operator, r.delegated[e.Staker])
		}
		if e.Staker == e.Operator {
			return fmt.Errorf("operator %s undelegates from itself", e.Staker)
		}
		delete(r.delegated, e.Staker)
		r.leaving[e.Staker], r.leavingTx[e.Staker] = e.Operator, p.TxHash
	case chain.SharesIncreased, chain.SharesDecreased:
		if e.Shares == nil || e.Shares.Sign() <= 0 || e.Strategy == "" {
			return fmt.Errorf("%s without a positive amount", e.Type)
		}
		current := r.delegated[e.Staker]
		if current != e.Operator && !(e.Type == chain.SharesDecreased && r.leaving[e.Staker] == e.Operator && r.leavingTx[e.Staker] == p.TxHash) {
			return fmt.Errorf("%s for staker %s to %s while delegated to %q", e.Type, e.Staker, e.Operator, current)
		}
		if r.slashingEra(p) {
			k := pair{e.Staker, e.Strategy}
			switch {
			case e.Type == chain.SharesIncreased:
				want := r.expInc[k]
				if want == nil || r.expDSF[k] != nil {
					return fmt.Errorf("SHARES_INCREASED of %s in %s without a deposit or delegation and its factor before it", e.Staker, e.Strategy)
				}
				if want.Cmp(e.Shares) != 0 {
					return fmt.Errorf("SHARES_INCREASED of %s in %s: %s, want %s", e.Staker, e.Strategy, e.Shares, want)
				}
				delete(r.expInc, k)
			case r.expDec[k] != nil:
				if r.expDec[k].Cmp(e.Shares) != 0 {
					return fmt.Errorf("beacon slashing factor decrease takes %s of %s's operator shares, want %s", e.Shares, e.Staker, r.expDec[k])
				}
				delete(r.expDec, k)
			default:
				if r.decs[k] != nil {
					return fmt.Errorf("two SHARES_DECREASED of %s in %s in one transaction", e.Staker, e.Strategy)
				}
				r.decs[k] = e.Shares
			}
		}
		sign := 1
		if e.Type == chain.SharesDecreased {
			sign = -1
		}
		if v := add(r.opShares, e.Operator, e.Strategy, e.Shares, sign); v.Sign() < 0 {
			return fmt.Errorf("operator %s shares of %s go negative", e.Operator, e.Strategy)
		}
	default:
		return fmt.Errorf("bad delegation type %q", e.Type)
	}
	return nil
}

func (r *replay) withdrawalQueued(p chain.Position, e *chain.WithdrawalQueued, recent bool) error {
	if !chain.IsHash(e.Root) || r.queued[e.Root] != nil {
		return fmt.Errorf("bad or repeated withdrawal root %q", e.Root)
	}
	if e.Nonce.Int64() != r.nonces[e.Staker] {
		return fmt.Errorf("staker %s withdrawal nonce %s, want %d", e.Staker, e.Nonce, r.nonces[e.Staker])
	}
	r.nonces[e.Staker]++
	if uint64(e.StartBlock) != p.BlockNumber {
		return fmt.Errorf("start block %d in block %d", e.StartBlock, p.BlockNumber)
	}
	want := chain.ZeroAddress
	if op, ok := r.delegated[e.Staker]; ok {
		want = op
	} else if r.leavingTx[e.Staker] == p.TxHash {
		want = r.leaving[e.Staker]
	}
	if e.DelegatedTo != want {
		return fmt.Errorf("withdrawal delegatedTo %s, want %s", e.DelegatedTo, want)
	}
	if len(e.Strategies) == 0 || len(e.Strategies) != len(e.Shares) {
		return fmt.Errorf("withdrawal with %d strategies and %d shares", len(e.Strategies), len(e.Shares))
	}
	q := &queued{staker: e.Staker, start: uint64(e.StartBlock), queuedAt: p.BlockTime, strategies: e.Strategies}
	if e.DelegatedTo != chain.ZeroAddress {
		q.delegatedTo = e.DelegatedTo
	}
	if !r.slashingEra(p) {
		if e.ScaledShares != nil {
			return fmt.Errorf("scaled shares before the slashing upgrade")
		}
		for i, s := range e.Strategies {
			if e.Shares[i].Sign() <= 0 {
				return fmt.Errorf("withdrawal of %s shares", e.Shares[i])
			}
			if bal := add(r.balances, e.Staker, s, e.Shares[i], -1); bal.Sign() < 0 {
				return fmt.Errorf("staker %s withdraws more %s than it holds", e.Staker, s)
			}
		}
		q.scaled = e.Shares
	} else {
		if len(e.ScaledShares) != len(e.Strategies) {
			return fmt.Errorf("slashing-era withdrawal with %d strategies and %d scaled shares", len(e.Strategies), len(e.ScaledShares))
		}
		for i, s := range e.Strategies {
			if err := r.queuedPosition(p, e, q.delegatedTo, i, s); err != nil {
				return err
			}
		}
		q.scaled = e.ScaledShares
		r.stats.scaledWithdrawals++
	}
	r.queued[e.Root] = q
	if recent {
		r.recentOther["queued"]++
	}
	return nil
}

// queuedPosition checks strategy i of a slashing-era withdrawal: its
// scaled shares are deposit shares d × the factor before any reset, its
// shares are the withdrawable part of d, the operator lost exactly those,
// and the position's factor was reset exactly when d emptied it.
func (r *replay) queuedPosition(p chain.Position, e *chain.WithdrawalQueued, op string, i int, strat string) error {
	k := pair{e.Staker, strat}
	f := r.factor(k)
	if old := r.resets[k]; old != nil {
		f = old
	}
	scaled := e.ScaledShares[i]
	if scaled.Sign() <= 0 {
		return fmt.Errorf("withdrawal of %s scaled shares", scaled)
	}
	// The deposit shares the withdrawal took: the smallest d whose scaled
	// shares are the event's, unique while the factor is at least WAD.
	d := ceilDiv(new(big.Int).Mul(scaled, wadInt), f)
	if wMul(d, f).Cmp(scaled) != 0 || f.Cmp(wadInt) < 0 {
		return fmt.Errorf("scaled shares %s are no deposit shares × factor %s", scaled, f)
	}
	sf := r.slashingFactor(e.Staker, op, strat, r.magnitude(op, strat))
	w := wMul(scaled, sf)
	if w.Sign() <= 0 || e.Shares[i].Cmp(w) != 0 {
		return fmt.Errorf("withdrawal of %s withdrawable shares of %s, want %s", e.Shares[i], strat, w)
	}
	if dec := r.decs[k]; op != "" && (dec == nil || dec.Cmp(w) != 0) {
		return fmt.Errorf("withdrawal of %s withdrawable %s with an operator share decrease of %v", w, strat, dec)
	} else if op == "" && dec != nil {
		return fmt.Errorf("undelegated withdrawal with an operator share decrease")
	}
	delete(r.decs, k)
	bal := add(r.balances, e.Staker, strat, d, -1)
	switch {
	case bal.Sign() < 0:
		return fmt.Errorf("staker %s withdraws more %s than it holds", e.Staker, strat)
	case bal.Sign() == 0 && r.resets[k] == nil:
		return fmt.Errorf("staker %s empties %s without a factor reset", e.Staker, strat)
	case bal.Sign() > 0 && r.resets[k] != nil:
		return fmt.Errorf("staker %s's factor of %s reset with %s deposit shares left", e.Staker, strat, bal)
	}
	delete(r.resets, k)
	r.markInexact(op, strat, f, sf)
	r.allow(op, strat, nil)
	if op != "" {
		r.queuedOp[pair{op, strat}] = append(r.queuedOp[pair{op, strat}], queuedScaledAt{p.BlockNumber, scaled})
	}
	return nil
}

// slashingEvent replays the events the slashing upgrade brought.
func (r *replay) slashingEvent(p chain.Position, ev any) error {
	switch e := ev.(type) {
	case *chain.DepositScalingFactorUpdated:
		k := pair{e.Staker, e.Strategy}
		r.stats.scalingFactors++
		if e.Factor.Cmp(wadInt) < 0 {
			return fmt.Errorf("deposit scaling factor %s below WAD", e.Factor)
		}
		if want := r.expDSF[k]; want != nil {
			if want.Cmp(e.Factor) != 0 {
				return fmt.Errorf("deposit scaling factor of %s in %s: %s, want %s", e.Staker, e.Strategy, e.Factor, want)
			}
			delete(r.expDSF, k)
			return nil
		}
		if e.Factor.Cmp(wadInt) != 0 || r.resets[k] != nil {
			return fmt.Errorf("deposit scaling factor %s of %s in %s without a deposit", e.Factor, e.Staker, e.Strategy)
		}
		r.resets[k] = r.factor(k)
		delete(r.dsf, k)
	case *chain.BeaconChainSlashingFactorDecreased:
		if e.Previous != r.beaconFactor(e.Staker) || e.New >= e.Previous || e.New == 0 {
			return fmt.Errorf("beacon slashing factor of %s from %d to %d, previous %d", e.Staker, e.Previous, e.New, r.beaconFactor(e.Staker))
		}
		before := r.withdrawable(e.Staker, chain.BeaconStrategy)
		r.bcsf[e.Staker] = e.New
		after := r.withdrawable(e.Staker, chain.BeaconStrategy)
		if op := r.delegated[e.Staker]; op != "" {
			if d := before.Sub(before, after); d.Sign() > 0 {
				r.expDec[pair{e.Staker, chain.BeaconStrategy}] = d
			}
			r.inexact[pair{op, chain.BeaconStrategy}] = true
		}
		r.stats.beaconDecreases++
	case *chain.OperatorSetCreated:
		if !r.avs[e.Set.AVS] || r.sets[e.Set] != nil {
			return fmt.Errorf("operator set %v of an unknown AVS or created twice", e.Set)
		}
		r.sets[e.Set] = &replaySet{strategies: map[string]bool{}, members: map[string]bool{}, left: map[string]uint64{}}
		r.stats.sets++
	case *chain.OperatorSetStrategy:
		set := r.sets[e.Set]
		if _, ok := r.net.Strategy(e.Strategy); !ok || set == nil || set.strategies[e.Strategy] == e.Added {
			return fmt.Errorf("strategy %s added (%v) to set %v: unknown set or strategy, or no change", e.Strategy, e.Added, e.Set)
		}
		set.strategies[e.Strategy] = e.Added
		if !e.Added {
			r.stats.setStrategyRemovals++
		}
	case *chain.OperatorSetMembership:
		set := r.sets[e.Set]
		if set == nil || !r.operators[e.Operator] || set.members[e.Operator] == e.Added {
			return fmt.Errorf("operator %s joins (%v) set %v: the set was not created, or no change", e.Operator, e.Added, e.Set)
		}
		if e.Added && set.slashable(e.Operator, p.BlockNumber) {
			return fmt.Errorf("operator %s rejoins set %v while still slashable by it", e.Operator, e.Set)
		}
		set.members[e.Operator] = e.Added
		if e.Added {
			r.stats.memberships++
		} else {
			set.left[e.Operator] = p.BlockNumber
			r.stats.leaves++
		}
	case *chain.AllocationDelaySet:
		if !r.operators[e.Operator] || uint64(e.EffectBlock) != p.BlockNumber+AllocationConfigurationDelayBlocks+1 {
			return fmt.Errorf("allocation delay of %s effective at %d in block %d", e.Operator, e.EffectBlock, p.BlockNumber)
		}
		r.delays[e.Operator] = append(r.delays[e.Operator], replayDelay{e.Delay, uint64(e.EffectBlock)})
	case *chain.AllocationUpdated:
		return r.allocation(p, e)
	case *chain.EncumberedMagnitudeUpdated:
		if e.EncumberedMagnitude > r.magnitude(e.Operator, e.Strategy) {
			return fmt.Errorf("encumbered magnitude %d of %s above its max magnitude", e.EncumberedMagnitude, e.Operator)
		}
	case *chain.MaxMagnitudeUpdated:
		k := pair{e.Operator, e.Strategy}
		prev := r.magnitude(e.Operator, e.Strategy)
		if e.MaxMagnitude >= prev {
			return fmt.Errorf("max magnitude of %s rises from %d to %d", e.Operator, prev, e.MaxMagnitude)
		}
		var from *allocKey
		for ak, dec := range r.decreased {
			if ak.op == e.Operator && ak.strat == e.Strategy && dec == prev-e.MaxMagnitude {
				from = &ak
			}
		}
		if from == nil {
			return fmt.Errorf("max magnitude of %s falls by %d without an allocation losing as much", e.Operator, prev-e.MaxMagnitude)
		}
		delete(r.decreased, *from)
		r.maxMag[k] = e.MaxMagnitude
		r.magHist[k] = append(r.magHist[k], histPoint{p.BlockNumber, e.MaxMagnitude})
		r.slashes = append(r.slashes, &openSlash{op: e.Operator, strat: e.Strategy, set: from.set, prevMax: prev,
			newMax: e.MaxMagnitude, slashedMagnitude: prev - e.MaxMagnitude})
		r.inexact[k] = true
		// The slash rounds each delegated staker's withdrawable shares
		// down once and the operator's shares up once.
		r.allow(e.Operator, e.Strategy, nil)
		for staker, op := range r.delegated {
			if op == e.Operator && r.balance(staker, e.Strategy).Sign() > 0 {
				r.budget[k].Add(r.budget[k], big.NewInt(1))
			}
		}
		return r.checkAllocated(e.Operator, e.Strategy)
	case *chain.SlashedOperatorShares:
		s := r.openSlash(e.Operator, e.Strategy)
		if s == nil || s.taken {
			return fmt.Errorf("operator shares of %s slashed without a max magnitude update", e.Operator)
		}
		cur := add(r.opShares, e.Operator, e.Strategy, new(big.Int), 1)
		left := ceilDiv(new(big.Int).Mul(cur, u64(s.newMax)), u64(s.prevMax))
		if want := new(big.Int).Sub(cur, left); e.Shares.Cmp(want) != 0 {
			return fmt.Errorf("slash takes %s of %s's %s shares, want %s", e.Shares, e.Operator, cur, want)
		}
		if cur.Sub(cur, e.Shares).Sign() < 0 {
			return fmt.Errorf("operator %s shares of %s go negative", e.Operator, e.Strategy)
		}
		s.taken, s.takenShares = true, e.Shares
	case *chain.OperatorSharesSlashed:
		s := r.openSlash(e.Operator, e.Strategy)
		if s == nil || !s.taken || s.burned {
			return fmt.Errorf("shares of %s burned out of order", e.Operator)
		}
		// The burn is the shares taken plus the slashed part of the
		// scaled shares the operator's stakers queued within the
		// withdrawal delay.
		queued := new(big.Int)
		for _, q := range r.queuedOp[pair{e.Operator, e.Strategy}] {
			if q.block+MinWithdrawalDelayBlocks >= p.BlockNumber {
				queued.Add(queued, q.scaled)
			}
		}
		want := wMul(queued, u64(s.prevMax-s.newMax))
		want.Add(want, s.takenShares)
		if e.BurnedShares.Cmp(want) != 0 {
			return fmt.Errorf("slash burns %s of %s, want %s", e.BurnedShares, e.Strategy, want)
		}
		s.burned = true
	case *chain.OperatorSlashed:
		return r.operatorSlashed(e)
	case *chain.ProtocolEvent:
		known := map[string]string{
			"DelegationApproverUpdated": r.net.Contracts.DelegationManager,
			"OperatorAVSSplitBipsSet":   r.net.Contracts.RewardsCoordinator,
			"DistributionRootSubmitted": r.net.Contracts.RewardsCoordinator,
			"RewardsClaimed":            r.net.Contracts.RewardsCoordinator,
		}
		contract, ok := known[e.Name]
		if !ok || e.Contract != strings.ToLower(contract) || len(e.Args) == 0 {
			return fmt.Errorf("protocol event %s of %s", e.Name, e.Contract)
		}
		for k, v := range e.Args {
			if s, ok := v.(string); !ok || s == "" {
				return fmt.Errorf("protocol event %s argument %s is %T %v, want text", e.Name, k, v, v)
			}
		}
		r.stats.protocol[e.Name]++
	default:
		return fmt.Errorf("unexpected event %T", ev)
	}
	return nil
}

func (r *replay) openSlash(op, strat string) *openSlash {
	for _, s := range r.slashes {
		if s.op == op && s.strat == strat {
			return s
		}
	}
	return nil
}

// allocation replays an AllocationUpdated: an increase needs an allocation
// delay in effect and takes effect after it; a decrease takes effect after
// the deallocation delay, or at once (a slash, or magnitude that was not
// slashable); an operator never allocates more than its max magnitude.
func (r *replay) allocation(p chain.Position, e *chain.AllocationUpdated) error {
	set := r.sets[e.Set]
	if set == nil || !r.operators[e.Operator] {
		return fmt.Errorf("allocation of %s to set %v that was not created", e.Operator, e.Set)
	}
	k := allocKey{e.Operator, e.Set, e.Strategy}
	al := r.allocs[k]
	if al == nil {
		al = &replayAlloc{}
		r.allocs[k] = al
		r.opAllocs[pair{e.Operator, e.Strategy}] = append(r.opAllocs[pair{e.Operator, e.Strategy}], al)
	}
	resolveReplay(al, p.BlockNumber)
	b, eff := p.BlockNumber, uint64(e.EffectBlock)
	switch {
	case al.effect != 0:
		return fmt.Errorf("allocation of %s to %v in %s modified while a change is pending", e.Operator, e.Set, e.Strategy)
	case e.Magnitude > al.cur:
		delay, ok := uint64(0), false
		for _, d := range r.delays[e.Operator] {
			if d.effect <= b {
				delay, ok = uint64(d.delay), true
			}
		}
		if !ok || eff != b+delay {
			return fmt.Errorf("allocation of %s effective at %d in block %d (delay %d, set %v)", e.Operator, eff, b, delay, ok)
		}
		al.target, al.effect = e.Magnitude, eff
		r.stats.allocations++
	case e.Magnitude < al.cur && eff == b:
		r.decreased[k] = al.cur - e.Magnitude
		r.wasSlashable[k] = set.slashable(e.Operator, b) && set.strategies[e.Strategy]
		al.cur, al.target = e.Magnitude, e.Magnitude
	case e.Magnitude < al.cur && eff == b+DeallocationDelayBlocks+1:
		if !set.slashable(e.Operator, b) || !set.strategies[e.Strategy] {
			return fmt.Errorf("delayed deallocation of magnitude that is not slashable")
		}
		al.target, al.effect = e.Magnitude, eff
		r.stats.deallocations++
	default:
		return fmt.Errorf("allocation of %s from %d to %d effective at %d in block %d", e.Operator, al.cur, e.Magnitude, eff, b)
	}
	resolveReplay(al, b)
	return r.checkAllocated(e.Operator, e.Strategy)
}

func resolveReplay(al *replayAlloc, block uint64) {
	if al.effect != 0 && block >= al.effect {
		al.cur, al.effect = al.target, 0
	}
}

// checkAllocated checks that the operator's allocations in a strategy,
// counting pending increases and magnitude still slashable while it is
// deallocated, fit in its max magnitude.
func (r *replay) checkAllocated(op, strat string) error {
	var sum uint64
	for _, al := range r.opAllocs[pair{op, strat}] {
		sum += max(al.cur, al.target)
	}
	if m := r.magnitude(op, strat); sum > m {
		return fmt.Errorf("operator %s allocates %d of %s, more than its max magnitude %d", op, sum, strat, m)
	}
	return nil
}

// operatorSlashed closes the strategies of a slash: the operator is a
// member of the set, which holds the strategies, in ascending order, and
// each proportion slashed is the magnitude taken over the max magnitude
// before, rounded down.
func (r *replay) operatorSlashed(e *chain.OperatorSlashed) error {
	set := r.sets[e.Set]
	if set == nil || !set.members[e.Operator] {
		return fmt.Errorf("slash of %s by set %v it is not a member of", e.Operator, e.Set)
	}
	if len(e.Strategies) == 0 || len(e.Strategies) != len(e.WadsSlashed) || e.Description == "" {
		return fmt.Errorf("slash with %d strategies and %d proportions", len(e.Strategies), len(e.WadsSlashed))
	}
	for i, strat := range e.Strategies {
		if i > 0 && e.Strategies[i-1] >= strat {
			return fmt.Errorf("slashed strategies not in ascending order")
		}
		s := r.openSlash(e.Operator, strat)
		if s == nil || !s.taken || !s.burned || s.set != e.Set || !set.strategies[strat] {
			return fmt.Errorf("slash of %s in %s without its magnitude and share events, or not in the set", e.Operator, strat)
		}
		want := wDiv(u64(s.slashedMagnitude), u64(s.prevMax))
		if e.WadsSlashed[i].Cmp(want) != 0 {
			return fmt.Errorf("wads slashed %s, want %s", e.WadsSlashed[i], want)
		}
		r.slashes = slices.DeleteFunc(r.slashes, func(x *openSlash) bool { return x == s })
	}
	r.stats.slashes++
	return nil
}

func (r *replay) rewards(p chain.Position, e *chain.RewardsSubmission, recent bool) error {
	if !e.ForAll && !r.avs[e.AVS] {
		return fmt.Errorf("rewards from unknown AVS %s", e.AVS)
	}
	if !r.tokens[e.Token] {
		return fmt.Errorf("rewards token %s has no token row", e.Token)
	}
	if e.StartTimestamp%86400 != 0 || e.Duration%86400 != 0 || e.Duration == 0 || e.Duration > 70*86400 {
		return fmt.Errorf("rewards window %d+%d not whole days up to 70", e.StartTimestamp, e.Duration)
	}
	if len(e.Strategies) < 1 || len(e.Strategies) > 3 {
		return fmt.Errorf("rewards for %d strategies", len(e.Strategies))
	}
	for i, s := range e.Strategies {
		if i > 0 && e.Strategies[i-1].Strategy >= s.Strategy {
			return fmt.Errorf("rewards strategies not in ascending order")
		}
		if s.Multiplier.Sign() <= 0 {
			return fmt.Errorf("multiplier %s", s.Multiplier)
		}
	}
	if e.Amount.Sign() <= 0 || !chain.IsHash(e.Hash) {
		return fmt.Errorf("bad amount or hash")
	}
	kind := e.SubmissionKind()
	if kind != chain.RewardsAVS && kind != chain.RewardsForAll && !r.slashingEra(p) {
		return fmt.Errorf("%s rewards before the slashing upgrade", kind)
	}
	switch kind {
	case chain.RewardsForAll, chain.RewardsForAllEarners:
		if !e.ForAll || (kind == chain.RewardsForAll) == r.slashingEra(p) {
			return fmt.Errorf("%s rewards submission in the wrong era or not for all", kind)
		}
		if kind == chain.RewardsForAllEarners {
			r.stats.forAllEarners++
		}
	case chain.RewardsOperatorDirectedAVS, chain.RewardsOperatorDirectedOpSet:
		if err := r.operatorDirected(p, e); err != nil {
			return err
		}
	}
	if e.ForAll {
		r.forAll++
	} else {
		r.rewardAVS[e.AVS] = true
	}
	r.rewardToken[e.Token] = true
	if recent {
		r.recentOther["rewards"]++
	}
	return nil
}

// operatorDirected checks an operator-directed submission: a past period,
// operators in ascending order, registered with the AVS (members of the
// set for an operator set's), amounts summing to the total.
func (r *replay) operatorDirected(p chain.Position, e *chain.RewardsSubmission) error {
	if e.ForAll || e.Submitter == "" || e.Description == "" || len(e.OperatorRewards) == 0 {
		return fmt.Errorf("operator-directed submission without submitter, description or operators")
	}
	if int64(e.StartTimestamp)+int64(e.Duration) >= p.BlockTime.Unix() {
		return fmt.Errorf("operator-directed submission for a period that has not ended")
	}
	var set *replaySet
	if e.SubmissionKind() == chain.RewardsOperatorDirectedOpSet {
		if e.OperatorSetID == nil {
			return fmt.Errorf("operator set submission without a set")
		}
		if set = r.sets[setKey{AVS: e.AVS, ID: *e.OperatorSetID}]; set == nil {
			return fmt.Errorf("submission for operator set %d of %s that was not created", *e.OperatorSetID, e.AVS)
		}
		r.stats.operatorSetRewards++
	} else {
		if e.OperatorSetID != nil {
			return fmt.Errorf("AVS submission with an operator set")
		}
		r.stats.operatorDirected++
	}
	sum := new(big.Int)
	for i, o := range e.OperatorRewards {
		if i > 0 && e.OperatorRewards[i-1].Operator >= o.Operator {
			return fmt.Errorf("operator rewards not in ascending order")
		}
		if o.Amount.Sign() <= 0 {
			return fmt.Errorf("operator reward of %s", o.Amount)
		}
		if set != nil && !set.members[o.Operator] || set == nil && !r.registered[[2]string{o.Operator, e.AVS}] {
			return fmt.Errorf("rewards for operator %s not registered with %s", o.Operator, e.AVS)
		}
		sum.Add(sum, o.Amount)
	}
	if sum.Cmp(e.Amount) != 0 {
		return fmt.Errorf("operator rewards sum to %s, amount %s", sum, e.Amount)
	}
	return nil
}

// finish checks that every operator's ledger of share events equals what
// its delegated stakers can withdraw: exactly, unless slashing factors or
// deposit scaling factors other than WAD touched the pair, where rounding
// down leaves the two a few wei apart per staker and operation.
func (r *replay) finish() error {
	if err := r.endTx(); err != nil {
		return err
	}
	want := map[string]map[string]*big.Int{}
	stakers := map[pair]int{}
	for staker, op := range r.delegated {
		for strat, v := range r.balances[staker] {
			if v.Sign() < 0 {
				return fmt.Errorf("staker %s ends with negative %s", staker, strat)
			}
			if v.Sign() > 0 {
				add(want, op, strat, r.withdrawable(staker, strat), 1)
				stakers[pair{op, strat}]++
			}
		}
	}
	for staker, m := range r.balances {
		for strat, v := range m {
			if v.Sign() > 0 && r.withdrawable(staker, strat).Cmp(v) != 0 {
				r.stats.diverging++
			}
		}
	}
	check := func(op, strat string, got, w *big.Int) error {
		diff := new(big.Int).Sub(got, w)
		if diff.Sign() == 0 {
			return nil
		}
		if !r.inexact[pair{op, strat}] {
			return fmt.Errorf("operator %s strategy %s: share events sum to %s, delegated stakers can withdraw %s", op, strat, got, w)
		}
		d := new(big.Int).Abs(diff).Uint64()
		r.stats.maxDrift = max(r.stats.maxDrift, d)
		if n := stakers[pair{op, strat}]; n > 0 {
			r.stats.maxDriftPerStaker = max(r.stats.maxDriftPerStaker, float64(d)/float64(n))
		}
		budget := r.budget[pair{op, strat}]
		if budget == nil || budget.Cmp(new(big.Int).Abs(diff)) < 0 {
			return fmt.Errorf("operator %s strategy %s: share events sum to %s, delegated stakers can withdraw %s, %d wei apart, more than rounding allows (%v)", op, strat, got, w, d, budget)
		}
		r.stats.maxBudgetUse = max(r.stats.maxBudgetUse, float64(d)/float64(budget.Uint64()))
		return nil
	}
	for op, m := range r.opShares {
		for strat, v := range m {
			w := new(big.Int)
			if want[op] != nil && want[op][strat] != nil {
				w = want[op][strat]
			}
			if err := check(op, strat, v, w); err != nil {
				return err
			}
		}
	}
	for op, m := range want {
		for strat, v := range m {
			if r.opShares[op] == nil || r.opShares[op][strat] == nil {
				if err := check(op, strat, new(big.Int), v); err != nil {
					return err
				}
			}
		}
	}
	r.stats.inexactPairs = len(r.inexact)
	for _, al := range r.allocs {
		if al.effect > r.head && al.target < al.cur {
			r.stats.pendingDeallocations++
		}
	}
	return nil
}
