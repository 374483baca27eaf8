package demo

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stakegraph/stakegraph/chain"
)

// This file holds the slashing era of the simulation: from the upgrade
// block on, AVS create operator sets, operators join them and allocate
// magnitude, some are slashed, and every staker's share movement follows
// the slashing-era DelegationManager (deposit scaling factors, scaled
// withdrawals, withdrawable shares). The arithmetic is the contracts':
// SlashingLib's mulWad and divWad round down, a slash's magnitude rounds
// up.

// wad64 is WAD as the AllocationManager's uint64 magnitudes hold it.
const wad64 uint64 = 1_000_000_000_000_000_000

// mulWad is x × y / 1e18, rounded down.
func mulWad(x, y *big.Int) *big.Int {
	z := new(big.Int).Mul(x, y)
	return z.Quo(z, chain.WAD)
}

// divWad is x × 1e18 / y, rounded down.
func divWad(x, y *big.Int) *big.Int {
	z := new(big.Int).Mul(x, chain.WAD)
	return z.Quo(z, y)
}

func bigU(v uint64) *big.Int { return new(big.Int).SetUint64(v) }

// mulDivUp is ⌈x × y / z⌉.
func mulDivUp(x, y, z *big.Int) *big.Int {
	n := new(big.Int).Mul(x, y)
	n.Add(n, z)
	n.Sub(n, big.NewInt(1))
	return n.Quo(n, z)
}

// operatorSet is an AVS's operator set.
type operatorSet struct {
	avs     int32
	id      uint32
	strats  []int   // the strategies in the set, ascending by index
	members []int32 // the operators in the set, in joining order
}

// allocation is an operator's magnitude allocated to one operator set in
// one strategy: current is in effect; target takes effect at effect (0:
// nothing pending). freed is magnitude a completed deallocation freed that
// the operator's encumbered magnitude still counts, until the
// deallocation queue is cleared.
type allocation struct {
	op      int32
	set     int32
	strat   int
	current uint64
	target  uint64
	effect  uint64
	freed   uint64
}

// magPoint is an operator's max magnitude in a strategy from a block on.
type magPoint struct {
	block uint64
	mag   uint64
}

// queuedScaled is the scaled shares of a withdrawal a staker of an operator
// queued in a block, slashable with the operator until the withdrawal
// delay has passed.
type queuedScaled struct {
	block  uint64
	scaled *big.Int
}

// operatorSlashing is an operator's AllocationManager state, per strategy
// where it is a slice.
type operatorSlashing struct {
	delay          uint32
	delayEffect    uint64 // the block the allocation delay applies from; 0: not set
	delayScheduled bool
	maxMag         []uint64
	history        [][]magPoint // max magnitudes set by slashes
	encumbered     []uint64
	dealloc        [][]int32 // the deallocation queue: allocation indexes
	queued         [][]queuedScaled
	allocs         []int32 // indexes in generator.allocs
	sets           []int32 // the sets it is a member of
	left           []setExit
}

// setExit is an operator leaving a set: it stays slashable by the set for
// the deallocation delay.
type setExit struct {
	set   int32
	block uint64
}

// slashableBy reports whether the operator can be slashed by set si: it is
// a member, or left less than the deallocation delay ago.
func (sl *operatorSlashing) slashableBy(si int32, block uint64) bool {
	if slices.Contains(sl.sets, si) {
		return true
	}
	for _, l := range sl.left {
		if l.set == si && block <= l.block+DeallocationDelayBlocks {
			return true
		}
	}
	return false
}

// delegated returns the operator's delegated shares in a strategy.
func (op *operatorState) delegated(strat, strategies int) *big.Int {
	if op.shares == nil {
		op.shares = make([]*big.Int, strategies)
	}
	if op.shares[strat] == nil {
		op.shares[strat] = new(big.Int)
	}
	return op.shares[strat]
}

// slashingEra reports whether the current transaction follows the slashing
// upgrade.
func (g *generator) slashingEra() bool { return g.curBlock >= g.upgradeBlock }

// opSlashing returns operator i's AllocationManager state, creating it
// with every max magnitude at WAD.
func (g *generator) opSlashing(i int32) *operatorSlashing {
	op := g.operators[i]
	if op.slashing == nil {
		n := len(g.strategies)
		sl := &operatorSlashing{
			maxMag:     make([]uint64, n),
			history:    make([][]magPoint, n),
			encumbered: make([]uint64, n),
			dealloc:    make([][]int32, n),
			queued:     make([][]queuedScaled, n),
		}
		for j := range sl.maxMag {
			sl.maxMag[j] = wad64
		}
		op.slashing = sl
	}
	return op.slashing
}

// maxMagnitude is an operator's max magnitude in a strategy (WAD for no
// operator).
func (g *generator) maxMagnitude(op int32, strat int) uint64 {
	if op < 0 || g.operators[op].slashing == nil {
		return wad64
	}
	return g.operators[op].slashing.maxMag[strat]
}

// magnitudeAt is an operator's max magnitude in a strategy as of a block.
func (g *generator) magnitudeAt(op int32, strat int, block uint64) uint64 {
	if op < 0 || g.operators[op].slashing == nil {
		return wad64
	}
	m := wad64
	for _, p := range g.operators[op].slashing.history[strat] {
		if p.block > block {
			break
		}
		m = p.mag
	}
	return m
}

// slashingFactor is the factor a staker's deposit shares in a strategy are
// scaled by: its operator's max magnitude, times its beacon-chain slashing
// factor for beacon ETH.
func (g *generator) slashingFactor(s *stakerState, strat int) *big.Int {
	f := bigU(g.maxMagnitude(s.operator, strat))
	if strat == g.beacon {
		f = mulWad(f, bigU(s.beaconSlashingFactor()))
	}
	return f
}

// withdrawable is what the staker can withdraw from a position: deposit
// shares × deposit scaling factor × slashing factor.
func (g *generator) withdrawable(s *stakerState, h *holding) *big.Int {
	return mulWad(mulWad(h.shares, h.factor()), g.slashingFactor(s, h.strat))
}

// scalingFactorAfterDeposit is the position's deposit scaling factor once
// added shares are deposited (SlashingLib.update): a first deposit divides
// the factor by the slashing factor; a later one keeps the withdrawable
// shares whole.
func (g *generator) scalingFactorAfterDeposit(s *stakerState, strat int, added *big.Int) *big.Int {
	sf := g.slashingFactor(s, strat)
	h := s.position(strat)
	if h == nil {
		return divWad(chain.WAD, sf)
	}
	current := mulWad(mulWad(h.shares, h.factor()), sf)
	num := current.Add(current, added)
	den := new(big.Int).Add(h.shares, added)
	return divWad(divWad(num, den), sf)
}

// emitScalingFactor emits DelegationManager.DepositScalingFactorUpdated.
func (g *generator) emitScalingFactor(s *stakerState, strat int, dsf *big.Int) {
	g.batch.DepositScalingFactors = append(g.batch.DepositScalingFactors, chain.DepositScalingFactorUpdated{
		Position: g.pos(), Staker: s.addr, Strategy: g.strategies[strat].Address, Factor: new(big.Int).Set(dsf),
	})
}

// delegateShares delegates a staker's positions to its new operator as the
// slashing-era DelegationManager does: each position's factor is divided by
// the operator's max magnitude (forgiving earlier slashes) and the
// operator gains the deposit shares, or the withdrawable ones for beacon
// ETH.
func (g *generator) delegateShares(s *stakerState) {
	for i := range s.holdings {
		h := &s.holdings[i]
		added := new(big.Int).Set(h.shares)
		if h.strat == g.beacon {
			added = mulWad(mulWad(h.shares, h.factor()), bigU(s.beaconSlashingFactor()))
		}
		if added.Sign() == 0 {
			continue
		}
		h.dsf = divWad(h.factor(), bigU(g.maxMagnitude(s.operator, h.strat)))
		g.emitScalingFactor(s, h.strat, h.dsf)
		g.operatorShares(s, h.strat, added, chain.SharesIncreased)
	}
}

// queueScaled queues a withdrawal of deposit shares after the upgrade: per
// strategy, the operator loses the withdrawable shares, the staker the
// deposit shares (an emptied position's factor is reset), and the
// withdrawal holds the scaled shares.
func (g *generator) queueScaled(idx int32, strats []int, amounts []*big.Int, asShares bool) {
	s := g.stakers[idx]
	var keep []int
	var withdrawable, scaled []*big.Int
	for j, strat := range strats {
		h := s.position(strat)
		sc := mulWad(amounts[j], h.factor())
		w := mulWad(sc, g.slashingFactor(s, strat))
		if w.Sign() == 0 {
			continue
		}
		g.operatorShares(s, strat, w, chain.SharesDecreased)
		if s.sub(strat, amounts[j]) {
			g.emitScalingFactor(s, strat, chain.WAD)
		}
		g.trackQueued(s.operator, strat, sc)
		keep = append(keep, strat)
		withdrawable = append(withdrawable, w)
		scaled = append(scaled, sc)
	}
	if len(keep) > 0 {
		g.queueWithdrawal(idx, s.operator, keep, withdrawable, scaled, asShares)
	}
}

// undelegateScaled queues the withdrawal of a whole position of an
// undelegating staker (still delegated while this runs).
func (g *generator) undelegateScaled(idx int32, h holding, asShares bool) {
	s := g.stakers[idx]
	sc := mulWad(h.shares, h.factor())
	w := mulWad(sc, g.slashingFactor(s, h.strat))
	if w.Sign() > 0 {
		g.operatorShares(s, h.strat, w, chain.SharesDecreased)
	}
	g.emitScalingFactor(s, h.strat, chain.WAD)
	g.trackQueued(s.operator, h.strat, sc)
	g.queueWithdrawal(idx, s.operator, []int{h.strat}, []*big.Int{w}, []*big.Int{sc}, asShares)
}

// trackQueued records scaled shares queued by a staker of op, which a
// slash of op burns from until the withdrawal delay has passed.
func (g *generator) trackQueued(op int32, strat int, scaled *big.Int) {
	if op < 0 {
		return
	}
	sl := g.opSlashing(op)
	q := sl.queued[strat]
	for len(q) > 0 && q[0].block+MinWithdrawalDelayBlocks < g.curBlock {
		q = q[1:]
	}
	sl.queued[strat] = append(q, queuedScaled{g.curBlock, scaled})
}

// completeScaled completes a withdrawal after the upgrade:
// WithdrawalCompleted, then, when it is received as shares, each strategy's
// scaled shares × the slashing factor of the operator it was queued with
// as of the end of the withdrawal delay are credited back as a deposit.
func (g *generator) completeScaled(block uint64, w *pendingWithdrawal) {
	slashableUntil := w.start + MinWithdrawalDelayBlocks
	if block <= slashableUntil {
		// The slashing-era DelegationManager completes a withdrawal only
		// after its last slashable block.
		g.schedule(slashableUntil+1, actComplete, w.staker, -1, w)
		return
	}
	g.beginTx(block)
	g.batch.WithdrawalsDone = append(g.batch.WithdrawalsDone, chain.WithdrawalCompleted{Position: g.pos(), Root: w.root})
	if !w.asShares {
		return
	}
	s := g.stakers[w.staker]
	for j, strat := range w.strats {
		f := bigU(g.magnitudeAt(w.op, strat, slashableUntil))
		if strat == g.beacon {
			f = mulWad(f, bigU(s.beaconSlashingFactor()))
		}
		payout := mulWad(w.scaled[j], f)
		if payout.Sign() == 0 {
			continue
		}
		if strat == g.beacon {
			g.podDelta(w.staker, payout)
		} else {
			g.strategyDeposit(w.staker, strat, payout)
		}
	}
}

// beaconSlash lowers a pod owner's beacon-chain slashing factor by a
// balance decrease of dec out of bal, and the operator's shares by what
// the staker can no longer withdraw.
func (g *generator) beaconSlash(idx int32, bal, dec *big.Int) {
	s := g.stakers[idx]
	h := s.position(g.beacon)
	prev := s.beaconSlashingFactor()
	next := new(big.Int).Sub(bal, dec)
	next.Mul(next, bigU(prev)).Quo(next, bal)
	if next.Sign() <= 0 || next.Uint64() >= prev {
		return
	}
	before := g.withdrawable(s, h)
	s.beaconFactor = next.Uint64()
	after := g.withdrawable(s, h)
	g.batch.BeaconSlashingFactors = append(g.batch.BeaconSlashingFactors, chain.BeaconChainSlashingFactorDecreased{
		Position: g.pos(), Staker: s.addr, Previous: prev, New: s.beaconFactor,
	})
	if d := before.Sub(before, after); d.Sign() > 0 {
		g.operatorShares(s, g.beacon, d, chain.SharesDecreased)
	}
}

// ---- scheduling ----

// scheduleSlashingDay schedules the day's random slashing-era actions.
func (g *generator) scheduleSlashingDay(d int, start uint64, rewardsPerDayMicro int64) {
	g.scheduleRandom(start, actOperatorDirected, rewardsPerDayMicro/10)
	g.scheduleRandom(start, actOperatorSetRewards, rewardsPerDayMicro/10)
	g.scheduleRandom(start, actClaim, int64(len(g.stakers))*500)
	g.scheduleRandom(start, actSplit, int64(len(g.opOrder))*2000)
	g.scheduleRandom(start, actApprover, int64(len(g.opOrder))*300)
	if (d-g.upgradeDay)%7 == 3 {
		g.schedule(start+g.rng.Uint64N(BlocksPerDay), actDistributionRoot, -1, -1, nil)
	}
}

// executeSlashing runs a slashing-era action.
func (g *generator) executeSlashing(a action) {
	switch a.kind {
	case actSlashingUpgrade:
		g.slashingUpgrade(a.block)
	case actCreateSets:
		g.createSets(a.block, a.a)
	case actJoinSet:
		g.joinSet(a.block, a.a, a.b)
	case actLeaveSet:
		g.leaveSet(a.block, a.a, a.b)
	case actSetStrategy:
		g.changeSetStrategy(a.block, a.b)
	case actAllocationDelay:
		if g.opSlashing(a.a).delayEffect == 0 {
			g.beginTx(a.block)
			g.emitAllocationDelay(a.a)
		}
	case actAllocate:
		g.allocate(a.block, a.a, a.b)
	case actDeallocate:
		g.deallocate(a.block, a.a, a.b)
	case actSlash:
		g.slash(a.block, a.b)
	case actOperatorDirected:
		g.operatorDirectedRewards(a.block)
	case actOperatorSetRewards:
		g.operatorSetRewards(a.block)
	case actDistributionRoot:
		g.distributionRoot(a.block)
	case actClaim:
		g.claim(a.block)
	case actSplit:
		g.split(a.block)
	case actApprover:
		if len(g.opOrder) > 0 {
			op := g.opOrder[g.rng.IntN(len(g.opOrder))]
			g.beginTx(a.block)
			g.emitApprover(op)
		}
	}
}

// slashingUpgrade starts the slashing era: a share of the AVS, the more
// popular the likelier, create operator sets in its first weeks, and the
// slashes are spread over the time after operators can first allocate.
func (g *generator) slashingUpgrade(block uint64) {
	var candidates []int32
	for i, a := range g.avs {
		if a.exists {
			candidates = append(candidates, int32(i))
		}
	}
	n := min(len(candidates), max(2, len(candidates)*3/10))
	era := g.headBlock - block + 1
	for range n {
		var cum []int64
		var total int64
		for _, ai := range candidates {
			total += g.avs[ai].popPPM
			cum = append(cum, total)
		}
		k := pickCum(g.rng, cum)
		g.schedule(block+g.rng.Uint64N(max(era/4, 1)), actCreateSets, candidates[k], -1, nil)
		candidates = slices.Delete(candidates, k, k+1)
	}
	slashes := max(2, int64(g.sc.Operators)*int64(g.sc.SlashPPM)/1_000_000)
	first := block + AllocationConfigurationDelayBlocks + 2*BlocksPerDay
	if first < g.headBlock {
		for range slashes {
			g.schedule(first+g.rng.Uint64N(g.headBlock-first+1), actSlash, -1, 0, nil)
		}
	}
}

// ---- operator sets and allocations ----

// createSets has AVS ai create one to three operator sets, each with one to
// three of its restakeable strategies, and schedules operators registered
// with it to join them.
func (g *generator) createSets(block uint64, ai int32) {
	a := g.avs[ai]
	if len(a.sets) > 0 || len(a.strategies) == 0 {
		return
	}
	g.beginTx(block)
	n := 1 + g.rng.IntN(3)
	for range n {
		set := &operatorSet{avs: ai, id: uint32(len(a.sets))}
		si := int32(len(g.sets))
		g.sets = append(g.sets, set)
		a.sets = append(a.sets, si)
		cs := g.setKey(set)
		g.batch.OperatorSetsCreated = append(g.batch.OperatorSetsCreated, chain.OperatorSetCreated{Position: g.pos(), Set: cs})
		k := 1 + g.rng.IntN(min(3, len(a.strategies)))
		for _, j := range g.rng.Perm(len(a.strategies))[:k] {
			set.strats = append(set.strats, a.strategies[j])
		}
		slices.Sort(set.strats)
		for _, strat := range set.strats {
			g.batch.OperatorSetStrategies = append(g.batch.OperatorSetStrategies, chain.OperatorSetStrategy{
				Position: g.pos(), Set: cs, Strategy: g.strategies[strat].Address, Added: true,
			})
		}
	}
	for _, si := range a.sets {
		for _, op := range g.opOrder {
			if g.registered[[2]int32{op, ai}] && g.chance(350_000) {
				g.later(3, actJoinSet, op, si, nil)
			}
		}
		if g.chance(300_000) {
			g.later(8, actSetStrategy, -1, si, nil)
		}
	}
}

// setKey names a set as the events do.
func (g *generator) setKey(set *operatorSet) chain.OperatorSet {
	return chain.OperatorSet{AVS: g.avs[set.avs].addr, ID: set.id}
}

// joinSet adds operator op to set si; the operator then sets its
// allocation delay if it has none and, most of the time, allocates.
func (g *generator) joinSet(block uint64, op, si int32) {
	sl := g.opSlashing(op)
	if sl.slashableBy(si, block) {
		return
	}
	set := g.sets[si]
	g.beginTx(block)
	g.batch.OperatorSetMemberships = append(g.batch.OperatorSetMemberships, chain.OperatorSetMembership{
		Position: g.pos(), Operator: g.operators[op].addr, Set: g.setKey(set), Added: true,
	})
	set.members = append(set.members, op)
	sl.sets = append(sl.sets, si)
	if sl.delayEffect == 0 && !sl.delayScheduled {
		sl.delayScheduled = true
		g.later(1, actAllocationDelay, op, -1, nil)
	}
	if g.chance(800_000) {
		g.later(2, actAllocate, op, si, nil)
	}
	if g.chance(60_000) {
		g.later(12, actLeaveSet, op, si, nil)
	}
}

// leaveSet removes operator op from set si; it stays slashable by the set
// for the deallocation delay.
func (g *generator) leaveSet(block uint64, op, si int32) {
	sl := g.opSlashing(op)
	k := slices.Index(sl.sets, si)
	if k < 0 {
		return
	}
	set := g.sets[si]
	g.beginTx(block)
	g.batch.OperatorSetMemberships = append(g.batch.OperatorSetMemberships, chain.OperatorSetMembership{
		Position: g.pos(), Operator: g.operators[op].addr, Set: g.setKey(set), Added: false,
	})
	sl.sets = slices.Delete(sl.sets, k, k+1)
	sl.left = append(sl.left, setExit{si, block})
	set.members = slices.DeleteFunc(set.members, func(m int32) bool { return m == op })
}

// changeSetStrategy removes one of a set's strategies or adds another of
// its AVS's.
func (g *generator) changeSetStrategy(block uint64, si int32) {
	set := g.sets[si]
	var strat int
	added := false
	if len(set.strats) > 1 && g.chance(700_000) {
		strat = set.strats[g.rng.IntN(len(set.strats))]
	} else {
		var others []int
		for _, s := range g.avs[set.avs].strategies {
			if !slices.Contains(set.strats, s) {
				others = append(others, s)
			}
		}
		if len(others) == 0 {
			return
		}
		strat, added = others[g.rng.IntN(len(others))], true
	}
	g.beginTx(block)
	g.batch.OperatorSetStrategies = append(g.batch.OperatorSetStrategies, chain.OperatorSetStrategy{
		Position: g.pos(), Set: g.setKey(set), Strategy: g.strategies[strat].Address, Added: added,
	})
	if added {
		set.strats = append(set.strats, strat)
		slices.Sort(set.strats)
	} else {
		set.strats = slices.DeleteFunc(set.strats, func(s int) bool { return s == strat })
	}
}

// allocationDelays are the allocation delays operators choose, in blocks,
// with their weights.
var (
	allocationDelays       = []uint32{0, 1, 300, 7200, 50400}
	allocationDelayWeights = []int{30, 20, 20, 20, 10}
)

// emitAllocationDelay emits AllocationDelaySet for an operator's first
// allocation delay, which applies once the configuration delay has passed.
func (g *generator) emitAllocationDelay(op int32) {
	sl := g.opSlashing(op)
	sl.delay = allocationDelays[pickWeight(g, allocationDelayWeights)]
	sl.delayEffect = g.curBlock + AllocationConfigurationDelayBlocks + 1
	sl.delayScheduled = true
	g.batch.AllocationDelays = append(g.batch.AllocationDelays, chain.AllocationDelaySet{
		Position: g.pos(), Operator: g.operators[op].addr, Delay: sl.delay, EffectBlock: uint32(sl.delayEffect),
	})
}

// allocationOf returns operator op's allocation to set si in a strategy,
// creating it.
func (g *generator) allocationOf(op, si int32, strat int) *allocation {
	sl := g.opSlashing(op)
	for _, ai := range sl.allocs {
		if al := g.allocs[ai]; al.set == si && al.strat == strat {
			return al
		}
	}
	al := &allocation{op: op, set: si, strat: strat}
	sl.allocs = append(sl.allocs, int32(len(g.allocs)))
	g.allocs = append(g.allocs, al)
	return al
}

// resolve applies an allocation's pending change once its effect block is
// reached.
func resolve(al *allocation, block uint64) {
	if al.effect == 0 || block < al.effect {
		return
	}
	if al.target < al.current {
		al.freed += al.current - al.target
	}
	al.current, al.effect = al.target, 0
}

// emitEncumbered emits the operator's encumbered magnitude in a strategy.
func (g *generator) emitEncumbered(op int32, strat int) {
	g.batch.EncumberedMagnitudes = append(g.batch.EncumberedMagnitudes, chain.EncumberedMagnitudeUpdated{
		Position: g.pos(), Operator: g.operators[op].addr, Strategy: g.strategies[strat].Address,
		EncumberedMagnitude: g.operators[op].slashing.encumbered[strat],
	})
}

// clearDeallocations completes the operator's deallocations in a strategy
// whose effect block is reached, in queue order, freeing their magnitude.
func (g *generator) clearDeallocations(op int32, strat int) {
	sl := g.opSlashing(op)
	q := sl.dealloc[strat]
	for len(q) > 0 {
		al := g.allocs[q[0]]
		resolve(al, g.curBlock)
		if al.effect != 0 {
			break
		}
		if al.freed > 0 {
			sl.encumbered[strat] -= al.freed
			al.freed = 0
			g.emitEncumbered(op, strat)
		}
		q = q[1:]
	}
	sl.dealloc[strat] = q
}

// slashable reports whether an allocation can be slashed by its set: the
// operator is slashable by the set, the set holds the strategy and
// magnitude is allocated.
func (g *generator) slashable(al *allocation, block uint64) bool {
	return al.current > 0 && g.operators[al.op].slashing.slashableBy(al.set, block) &&
		slices.Contains(g.sets[al.set].strats, al.strat)
}

// modifyAllocation sets an allocation (with nothing pending, deallocations
// cleared) to magnitude m, as AllocationManager.modifyAllocations does: an
// increase is encumbered at once and takes effect after the operator's
// allocation delay; a decrease of slashable magnitude takes effect after
// the deallocation delay, any other at once.
func (g *generator) modifyAllocation(al *allocation, m uint64) {
	sl := g.opSlashing(al.op)
	effect := g.curBlock
	switch {
	case m > al.current:
		sl.encumbered[al.strat] += m - al.current
		g.emitEncumbered(al.op, al.strat)
		effect += uint64(sl.delay)
		al.target, al.effect = m, effect
	case g.slashable(al, g.curBlock):
		effect += DeallocationDelayBlocks + 1
		al.target, al.effect = m, effect
		sl.dealloc[al.strat] = append(sl.dealloc[al.strat], g.allocIndex(al))
	default:
		sl.encumbered[al.strat] -= al.current - m
		g.emitEncumbered(al.op, al.strat)
		al.current, al.target, al.effect = m, m, 0
	}
	g.batch.Allocations = append(g.batch.Allocations, chain.AllocationUpdated{
		Position: g.pos(), Operator: g.operators[al.op].addr, Set: g.setKey(g.sets[al.set]),
		Strategy: g.strategies[al.strat].Address, Magnitude: m, EffectBlock: uint32(effect),
	})
	resolve(al, g.curBlock)
}

// allocIndex is the index of an allocation in generator.allocs.
func (g *generator) allocIndex(al *allocation) int32 {
	for _, ai := range g.operators[al.op].slashing.allocs {
		if g.allocs[ai] == al {
			return ai
		}
	}
	panic("demo: allocation not listed")
}

// allocate has operator op allocate part of its free magnitude to each
// strategy of set si, once its allocation delay applies. Some allocate
// more later, some deallocate, a few so late that the deallocation is
// still pending at the head.
func (g *generator) allocate(block uint64, op, si int32) {
	sl := g.opSlashing(op)
	if !slices.Contains(sl.sets, si) {
		return
	}
	if sl.delayEffect == 0 || block < sl.delayEffect {
		next := block + BlocksPerDay
		if sl.delayEffect > 0 {
			next = sl.delayEffect + g.expBlocks(BlocksPerDay)
		}
		if next <= g.headBlock {
			g.schedule(next, actAllocate, op, si, nil)
		}
		return
	}
	g.beginTx(block)
	for _, strat := range g.sets[si].strats {
		g.clearDeallocations(op, strat)
		al := g.allocationOf(op, si, strat)
		resolve(al, block)
		free := sl.maxMag[strat] - sl.encumbered[strat]
		if al.effect != 0 || free < wad64/100 {
			continue
		}
		add := free / 1_000_000 * uint64(50_000+g.rng.Int64N(350_000))
		g.modifyAllocation(al, al.current+add)
	}
	switch r := g.rng.IntN(100); {
	case r < 15:
		g.later(8, actAllocate, op, si, nil)
	case r < 30:
		// Late enough that the deallocation is pending at the head.
		at := g.headBlock - g.rng.Uint64N(10*BlocksPerDay)
		if at > block {
			g.schedule(at, actDeallocate, op, si, nil)
		}
	case r < 38:
		g.later(5, actDeallocate, op, si, nil)
	}
}

// deallocate lowers, or ends, operator op's allocations to set si.
func (g *generator) deallocate(block uint64, op, si int32) {
	sl := g.operators[op].slashing
	if sl == nil {
		return
	}
	g.beginTx(block)
	for _, strat := range g.sets[si].strats {
		g.clearDeallocations(op, strat)
		al := g.allocationOf(op, si, strat)
		resolve(al, block)
		if al.effect != 0 || al.current == 0 {
			continue
		}
		var m uint64
		if g.chance(700_000) {
			m = al.current / 1_000_000 * uint64(100_000+g.rng.Int64N(600_000))
		}
		g.modifyAllocation(al, m)
	}
}

var slashDescriptions = []string{
	"Double signing in epoch %d",
	"Missed %d consecutive attestation windows",
	"Invalid state root submitted at batch %d",
	"Equivocation on task %d",
	"Liveness fault: %d tasks unanswered",
}

// slash slashes an operator with slashable magnitude: one or two
// strategies of one of the operator sets it is a member of, 1% to 25% of
// the magnitude it allocated to the set. With nothing slashable it tries
// again a day later, up to 20 times (tries counts them).
func (g *generator) slash(block uint64, tries int32) {
	var candidates []*allocation
	for _, al := range g.allocs {
		resolve(al, block)
		if al.effect == 0 && g.slashable(al, block) && slices.Contains(g.operators[al.op].slashing.sets, al.set) &&
			g.operators[al.op].delegated(al.strat, len(g.strategies)).Sign() > 0 {
			candidates = append(candidates, al)
		}
	}
	if len(candidates) == 0 {
		if next := block + BlocksPerDay; next <= g.headBlock && tries < 20 {
			g.schedule(next, actSlash, -1, tries+1, nil)
		}
		return
	}
	first := candidates[g.rng.IntN(len(candidates))]
	targets := []*allocation{first}
	for _, al := range candidates {
		if al != first && al.op == first.op && al.set == first.set && len(targets) < 2 && g.chance(500_000) {
			targets = append(targets, al)
		}
	}
	slices.SortFunc(targets, func(x, y *allocation) int {
		return strings.Compare(g.strategies[x.strat].Address, g.strategies[y.strat].Address)
	})
	op := g.operators[first.op]
	sl := op.slashing
	g.beginTx(block)
	var addrs []string
	var wads []*big.Int
	for _, al := range targets {
		strat := al.strat
		w := big.NewInt((10_000 + g.rng.Int64N(240_000)) * 1_000_000_000_000)
		slashed := mulDivUp(bigU(al.current), w, chain.WAD).Uint64()
		prevMax := sl.maxMag[strat]
		newMax := prevMax - slashed
		al.current -= slashed
		al.target = al.current
		sl.encumbered[strat] -= slashed + al.freed
		al.freed = 0
		g.emitEncumbered(first.op, strat)
		g.batch.Allocations = append(g.batch.Allocations, chain.AllocationUpdated{
			Position: g.pos(), Operator: op.addr, Set: g.setKey(g.sets[al.set]), Strategy: g.strategies[strat].Address,
			Magnitude: al.current, EffectBlock: uint32(block),
		})
		sl.maxMag[strat] = newMax
		sl.history[strat] = append(sl.history[strat], magPoint{block, newMax})
		g.batch.MaxMagnitudes = append(g.batch.MaxMagnitudes, chain.MaxMagnitudeUpdated{
			Position: g.pos(), Operator: op.addr, Strategy: g.strategies[strat].Address, MaxMagnitude: newMax,
		})
		// DelegationManager.slashOperatorShares: the operator's shares fall
		// by what the new max magnitude no longer backs (rounded so as not
		// to over-slash), and the queued withdrawals still slashable burn
		// in proportion.
		shares := op.delegated(strat, len(g.strategies))
		taken := new(big.Int).Sub(shares, mulDivUp(shares, bigU(newMax), bigU(prevMax)))
		shares.Sub(shares, taken)
		g.batch.SlashedOperatorShares = append(g.batch.SlashedOperatorShares, chain.SlashedOperatorShares{
			Position: g.pos(), Operator: op.addr, Strategy: g.strategies[strat].Address, Shares: taken,
		})
		queued := new(big.Int)
		for _, q := range sl.queued[strat] {
			if q.block+MinWithdrawalDelayBlocks >= block {
				queued.Add(queued, q.scaled)
			}
		}
		burned := mulWad(queued, bigU(prevMax-newMax))
		burned.Add(burned, taken)
		g.batch.OperatorSharesSlashed = append(g.batch.OperatorSharesSlashed, chain.OperatorSharesSlashed{
			Position: g.pos(), Operator: op.addr, Strategy: g.strategies[strat].Address, BurnedShares: burned,
		})
		addrs = append(addrs, g.strategies[strat].Address)
		wads = append(wads, divWad(bigU(slashed), bigU(prevMax)))
	}
	g.batch.Slashings = append(g.batch.Slashings, chain.OperatorSlashed{
		Position: g.pos(), Operator: op.addr, Set: g.setKey(g.sets[first.set]), Strategies: addrs, WadsSlashed: wads,
		Description: fmt.Sprintf(slashDescriptions[g.rng.IntN(len(slashDescriptions))], 1+g.rng.IntN(400_000)),
	})
	g.afterSlash(first.op)
}

// afterSlash has some stakers of a slashed operator react: a few leave it,
// a few withdraw part of their stake, a few add to it.
func (g *generator) afterSlash(op int32) {
	n := 0
	for i, s := range g.stakers {
		if s.operator != op || s.isOperator || len(s.holdings) == 0 {
			continue
		}
		switch r := g.rng.IntN(100); {
		case r < 8:
			g.later(3, actUndelegate, int32(i), -1, nil)
		case r < 14:
			g.later(4, actWithdraw, int32(i), -1, nil)
		case r < 20:
			g.later(4, actDeposit, int32(i), -1, nil)
		default:
			continue
		}
		if n++; n == 60 {
			return
		}
	}
}

// ---- rewards and other protocol events ----

// operatorDirectedRewards is an AVS's operator-directed rewards submission
// to some of the operators registered with it, for a past period.
func (g *generator) operatorDirectedRewards(block uint64) {
	var cum []int64
	var candidates []int32
	var total int64
	for i, a := range g.avs {
		if a.exists && len(a.rewardTokens) > 0 {
			total += a.popPPM
			cum = append(cum, total)
			candidates = append(candidates, int32(i))
		}
	}
	if len(candidates) == 0 {
		return
	}
	ai := candidates[pickCum(g.rng, cum)]
	var ops []int32
	for _, op := range g.opOrder {
		if g.registered[[2]int32{op, ai}] {
			ops = append(ops, op)
		}
	}
	a := g.avs[ai]
	if len(ops) == 0 {
		return
	}
	n := 1 + g.rng.IntN(min(3, len(a.strategies)))
	var strats []int
	for _, j := range g.rng.Perm(len(a.strategies))[:n] {
		strats = append(strats, a.strategies[j])
	}
	g.beginTx(block)
	g.emitOperatorDirected(ai, nil, ops, strats)
}

// operatorSetRewards is an operator-directed rewards submission for an
// operator set, to some of its members.
func (g *generator) operatorSetRewards(block uint64) {
	var sets []int32
	for i, set := range g.sets {
		if len(set.members) > 0 && len(set.strats) > 0 && len(g.avs[set.avs].rewardTokens) > 0 {
			sets = append(sets, int32(i))
		}
	}
	if len(sets) == 0 {
		return
	}
	set := g.sets[sets[g.rng.IntN(len(sets))]]
	strats := slices.Clone(set.strats)
	if len(strats) > 3 {
		strats = strats[:3]
	}
	g.beginTx(block)
	g.emitOperatorDirected(set.avs, set, set.members, strats)
}

// emitOperatorDirected emits an operator-directed submission of AVS ai to
// up to twenty of ops (for set when it is not nil) in one of its reward
// tokens, over a period that ended before today, as the RewardsCoordinator
// requires.
func (g *generator) emitOperatorDirected(ai int32, set *operatorSet, ops []int32, strats []int) {
	a := g.avs[ai]
	token := a.rewardTokens[g.rng.IntN(len(a.rewardTokens))]
	k := 1 + g.rng.IntN(min(20, len(ops)))
	var rewards []chain.OperatorReward
	total := new(big.Int)
	for _, j := range g.rng.Perm(len(ops))[:k] {
		var amount *big.Int
		switch token {
		case g.weth:
			amount = g.decadeAmount(15, wethRewards)
		case g.eigenToken:
			amount = g.decadeAmount(18, eigenRewards)
		default:
			amount = g.decadeAmount(19, ownTokenRewards)
		}
		rewards = append(rewards, chain.OperatorReward{Operator: g.operators[ops[j]].addr, Amount: amount})
		total.Add(total, amount)
	}
	slices.SortFunc(rewards, func(x, y chain.OperatorReward) int { return strings.Compare(x.Operator, y.Operator) })
	mults := g.multipliers(strats)
	duration := rewardDurations[g.rng.IntN(len(rewardDurations))]
	day := uint32(g.blockTime.Unix() / 86400)
	start := day - duration - 1 - uint32(g.rng.IntN(14))
	kind := chain.RewardsOperatorDirectedAVS
	var setID *uint32
	what := a.name
	if set != nil {
		kind = chain.RewardsOperatorDirectedOpSet
		id := set.id
		setID = &id
		what = fmt.Sprintf("%s operator set %d", a.name, set.id)
	}
	g.batch.RewardsSubmissions = append(g.batch.RewardsSubmissions, chain.RewardsSubmission{
		Position:        g.pos(),
		AVS:             a.addr,
		Kind:            kind,
		OperatorSetID:   setID,
		Submitter:       a.addr,
		Description:     fmt.Sprintf("%s operator rewards for %d days from %s", what, duration, time.Unix(int64(start)*86400, 0).UTC().Format(time.DateOnly)),
		OperatorRewards: rewards,
		Nonce:           big.NewInt(a.nonce),
		Hash:            g.hashHex("rewards-operator-directed", uint64(ai), uint64(a.nonce)),
		Token:           g.tokens[token].address,
		Amount:          total,
		StartTimestamp:  start * 86400,
		Duration:        duration * 86400,
		Strategies:      mults,
	})
	a.nonce++
}

// contract returns the address of a core contract of the world's network.
func (g *generator) contract(name string) string {
	c := g.opts.Network.Contracts
	addr := map[string]string{
		"DelegationManager":  c.DelegationManager,
		"RewardsCoordinator": c.RewardsCoordinator,
		"AllocationManager":  c.AllocationManager,
	}[name]
	if addr == "" {
		return g.address("contract/"+name, 0)
	}
	return strings.ToLower(addr)
}

// protocolEvent emits an event of a core contract kept by name with its
// arguments as text.
func (g *generator) protocolEvent(contract, name string, args map[string]any) {
	g.batch.ProtocolEvents = append(g.batch.ProtocolEvents, chain.ProtocolEvent{
		Position: g.pos(), Contract: g.contract(contract), Name: name, Args: args,
	})
}

// emitApprover emits DelegationApproverUpdated for an operator: most have
// no approver.
func (g *generator) emitApprover(op int32) {
	approver := chain.ZeroAddress
	if g.chance(200_000) {
		approver = g.address("approver", uint64(op))
	}
	g.protocolEvent("DelegationManager", "DelegationApproverUpdated", map[string]any{
		"operator": g.operators[op].addr, "newDelegationApprover": approver,
	})
}

// distributionRoot is the rewards updater's weekly distribution root.
func (g *generator) distributionRoot(block uint64) {
	g.beginTx(block)
	g.lastRoot = g.hashHex("distribution-root", uint64(g.roots))
	end := g.blockTime.Unix() / 86400 * 86400
	g.protocolEvent("RewardsCoordinator", "DistributionRootSubmitted", map[string]any{
		"rootIndex":                      strconv.FormatInt(int64(g.upgradeDay/7)+g.roots, 10),
		"root":                           g.lastRoot,
		"rewardsCalculationEndTimestamp": strconv.FormatInt(end, 10),
		"activatedAt":                    strconv.FormatInt(g.blockTime.Unix()+7*86400, 10),
	})
	g.roots++
}

// claim is a staker claiming rewards against the latest root.
func (g *generator) claim(block uint64) {
	if g.lastRoot == "" || len(g.stakers) == 0 {
		return
	}
	s := g.stakers[g.rng.IntN(len(g.stakers))]
	token, amount := g.eigenToken, g.decadeAmount(17, eigenRewards)
	if g.chance(300_000) {
		token, amount = g.weth, g.decadeAmount(14, wethRewards)
	}
	recipient := s.addr
	if g.chance(50_000) {
		recipient = g.address("recipient", uint64(g.rng.IntN(1000)))
	}
	g.beginTx(block)
	g.protocolEvent("RewardsCoordinator", "RewardsClaimed", map[string]any{
		"root": g.lastRoot, "earner": s.addr, "claimer": s.addr, "recipient": recipient,
		"token": g.tokens[token].address, "claimedAmount": amount.String(),
	})
}

var splitBips = []int64{0, 500, 800, 1000, 1500, 2000, 5000, 10000}

// split is an operator setting its share of an AVS's rewards, effective
// after the activation delay.
func (g *generator) split(block uint64) {
	if len(g.opOrder) == 0 || len(g.avs) == 0 {
		return
	}
	for range 8 {
		op := g.opOrder[g.rng.IntN(len(g.opOrder))]
		ai := int32(g.rng.IntN(len(g.avs)))
		key := [2]int32{op, ai}
		if !g.registered[key] {
			continue
		}
		old, ok := g.splits[key]
		if !ok {
			old = 1000 // the default split
		}
		next := splitBips[g.rng.IntN(len(splitBips))]
		if next == old {
			return
		}
		g.splits[key] = next
		g.beginTx(block)
		g.protocolEvent("RewardsCoordinator", "OperatorAVSSplitBipsSet", map[string]any{
			"caller": g.operators[op].addr, "operator": g.operators[op].addr, "avs": g.avs[ai].addr,
			"activatedAt":             strconv.FormatInt(g.blockTime.Unix()+7*86400, 10),
			"oldOperatorAVSSplitBips": strconv.FormatInt(old, 10),
			"newOperatorAVSSplitBips": strconv.FormatInt(next, 10),
		})
		return
	}
}
