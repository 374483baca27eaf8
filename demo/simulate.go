package demo

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/stakegraph/stakegraph/chain"
)

// This file holds the actions of the simulation. Each action that emits
// anything is one transaction, and its events are exactly those the
// contracts emit for it, in their order.

var (
	gwei         = big.NewInt(1_000_000_000)
	validatorWei = new(big.Int).Mul(big.NewInt(32), pow10(18))
	million      = big.NewInt(1_000_000)
)

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

var pow10s = func() []*big.Int {
	out := make([]*big.Int, 40)
	for i := range out {
		out[i] = pow10(i)
	}
	return out
}()

// Decade weights of drawn amounts: the chance of each power of ten above
// the base, in ten-thousandths.
var (
	liquidDecades    = []int{2500, 3000, 2800, 1300, 350, 45, 5}    // from 0.01 ETH
	eigenDecades     = []int{1000, 2500, 3000, 2200, 1000, 250, 50} // from 1 EIGEN
	validatorDecades = []int{8800, 1050, 140, 10}                   // from 1 validator
	wethRewards      = []int{2000, 5000, 2500, 500}                 // from 0.1 WETH
	eigenRewards     = []int{2500, 4500, 2500, 500}                 // from 100 EIGEN
	ownTokenRewards  = []int{4000, 4000, 2000}                      // from 1,000 tokens
	rewardDurations  = []uint32{7, 14, 21, 28, 30, 35, 60, 70}      // days
)

func pickWeight(g *generator, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := g.rng.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// decadeAmount draws an amount of at least 10^base: a power of ten chosen by
// weights times a uniform mantissa in [1, 10) with six decimals.
func (g *generator) decadeAmount(base int, weights []int) *big.Int {
	e := base + pickWeight(g, weights) - 6
	v := big.NewInt(1_000_000 + g.rng.Int64N(9_000_000))
	return v.Mul(v, pow10s[e])
}

// scaled scales a deposit size down for worlds with many stakers.
func (g *generator) scaled(v *big.Int) *big.Int {
	if g.amountPPM < 1_000_000 {
		v.Mul(v, big.NewInt(g.amountPPM)).Quo(v, million)
	}
	return v
}

// liquidShares converts an ETH value in wei into shares of a liquid
// strategy: value / price gives underlying tokens, which the rate turns
// into shares.
func (g *generator) liquidShares(strat int, valueWei *big.Int) *big.Int {
	s := g.strategies[strat]
	v := new(big.Int).Mul(valueWei, pow10s[24])
	return v.Quo(v, new(big.Int).Mul(s.rate, big.NewInt(s.priceMicro)))
}

func (g *generator) newValidators() *big.Int {
	d := pickWeight(g, validatorDecades)
	lo := int64(1)
	for range d {
		lo *= 10
	}
	n := lo + g.rng.Int64N(9*lo)
	if d == len(validatorDecades)-1 {
		n = lo + g.rng.Int64N(lo) // cap the largest pods
	}
	n = max(1, n*g.amountPPM/1_000_000)
	return new(big.Int).Mul(big.NewInt(n), validatorWei)
}

// moreValidators is the stake of validators a pod owner adds: a pod's
// first validators come in any number, later ones mostly a few at a time.
func (g *generator) moreValidators(first bool) *big.Int {
	if first || g.chance(100_000) {
		return g.newValidators()
	}
	return new(big.Int).Mul(big.NewInt(1+g.rng.Int64N(9)), validatorWei)
}

// ---- operators and AVS ----

func (g *generator) registerOperator(block uint64, i int32) {
	op := g.operators[i]
	g.beginTx(block)
	if g.slashingEra() {
		// The slashing-era registerAsOperator sets the allocation delay and
		// the delegation approver before the operator delegates to itself.
		g.emitAllocationDelay(i)
		g.emitApprover(i)
		g.batch.Delegations = append(g.batch.Delegations, chain.DelegationEvent{
			Position: g.pos(), Type: chain.Delegation, Staker: op.addr, Operator: op.addr,
		})
		g.batch.OperatorsRegistered = append(g.batch.OperatorsRegistered, chain.OperatorRegistered{Position: g.pos(), Operator: op.addr})
	} else {
		g.batch.OperatorsRegistered = append(g.batch.OperatorsRegistered, chain.OperatorRegistered{Position: g.pos(), Operator: op.addr})
		g.batch.Delegations = append(g.batch.Delegations, chain.DelegationEvent{
			Position: g.pos(), Type: chain.Delegation, Staker: op.addr, Operator: op.addr,
		})
	}
	g.emitOperatorMetadata(op)
	op.registered = true
	var cum int64
	if n := len(g.opCum); n > 0 {
		cum = g.opCum[n-1]
	}
	g.opOrder = append(g.opOrder, i)
	g.opCum = append(g.opCum, cum+op.weight)

	if op.selfStake {
		p := profileLiquid
		if g.beacon >= 0 && g.chance(500_000) {
			p = profileBeacon
		}
		idx := g.addStaker(op.addr, p, i)
		g.later(2, actDeposit, idx, -1, nil)
	}
	for ai, a := range g.avs {
		if a.exists {
			g.maybeRegister(i, int32(ai))
		}
	}
	if g.chance(250_000) {
		g.later(120, actOperatorMetadata, i, -1, nil)
	}
}

func (g *generator) updateOperatorMetadata(block uint64, i int32) {
	g.beginTx(block)
	g.emitOperatorMetadata(g.operators[i])
}

func (g *generator) emitOperatorMetadata(op *operatorState) {
	op.version++
	s := slug(op.name)
	uri := fmt.Sprintf("https://raw.githubusercontent.com/%s/eigenlayer-metadata/main/operator-v%d.json", s, op.version)
	p := g.pos()
	g.batch.MetadataURIs = append(g.batch.MetadataURIs, chain.MetadataURIUpdated{
		Position: p, Subject: chain.SubjectOperator, Address: op.addr, URI: uri,
	})
	if op.docMode == docMissing {
		return
	}
	doc := chain.MetadataDocument{
		Position:    p,
		Subject:     chain.SubjectOperator,
		Address:     op.addr,
		Name:        op.name,
		Description: ptr(fmt.Sprintf("%s %s.", op.name, descriptionPhrases[g.rng.IntN(len(descriptionPhrases))])),
		Website:     ptr("https://" + s + ".io"),
		Logo:        ptr(fmt.Sprintf("https://raw.githubusercontent.com/%s/eigenlayer-metadata/main/logo.png", s)),
		Twitter:     ptr("https://twitter.com/" + strings.ReplaceAll(s, "-", "")),
	}
	if op.docMode == docNoName {
		doc.Name = ""
		doc.Description = nil
	}
	if g.chance(300_000) {
		doc.Discord = ptr("https://discord.gg/" + strings.ReplaceAll(s, "-", ""))
	}
	if g.chance(250_000) {
		doc.Telegram = ptr("https://t.me/" + strings.ReplaceAll(s, "-", ""))
	}
	g.batch.MetadataDocuments = append(g.batch.MetadataDocuments, doc)
}

func (g *generator) createAVS(block uint64, i int32) {
	a := g.avs[i]
	g.beginTx(block)
	s := slug(a.name)
	p := g.pos()
	g.batch.MetadataURIs = append(g.batch.MetadataURIs, chain.MetadataURIUpdated{
		Position: p, Subject: chain.SubjectAVS, Address: a.addr,
		URI: fmt.Sprintf("https://%s.xyz/eigenlayer/avs-metadata.json", s),
	})
	if a.docMode != docMissing {
		doc := chain.MetadataDocument{
			Position:    p,
			Subject:     chain.SubjectAVS,
			Address:     a.addr,
			Name:        a.name,
			Description: ptr(fmt.Sprintf("%s %s.", a.name, descriptionPhrases[g.rng.IntN(len(descriptionPhrases))])),
			Website:     ptr("https://" + s + ".xyz"),
			Logo:        ptr("https://" + s + ".xyz/logo.png"),
			Twitter:     ptr("https://twitter.com/" + strings.ReplaceAll(s, "-", "")),
		}
		if a.docMode == docNoName {
			doc.Name, doc.Description = "", nil
		}
		if g.chance(500_000) {
			doc.Discord = ptr("https://discord.gg/" + strings.ReplaceAll(s, "-", ""))
		}
		if g.chance(300_000) {
			doc.Telegram = ptr("https://t.me/" + strings.ReplaceAll(s, "-", ""))
		}
		g.batch.MetadataDocuments = append(g.batch.MetadataDocuments, doc)
	}
	g.emitAVSStrategies(a)
	a.exists = true
	for _, oi := range g.opOrder {
		g.maybeRegister(oi, i)
	}
	if g.chance(250_000) {
		g.later(90, actAVSStrategies, i, -1, nil)
	}
	if g.slashingEra() && g.chance(300_000) {
		g.later(3, actCreateSets, i, -1, nil)
	}
}

func (g *generator) emitAVSStrategies(a *avsState) {
	addrs := make([]string, len(a.strategies))
	for j, si := range a.strategies {
		addrs[j] = g.strategies[si].Address
	}
	g.batch.AVSStrategies = append(g.batch.AVSStrategies, chain.AVSStrategies{Position: g.pos(), AVS: a.addr, Strategies: addrs})
}

// updateAVSStrategies widens an AVS's restakeable strategies: EIGEN if it
// lacks it, otherwise every liquid token.
func (g *generator) updateAVSStrategies(block uint64, i int32) {
	a := g.avs[i]
	next := slices.Clone(a.strategies)
	if g.eigen >= 0 && !slices.Contains(next, g.eigen) {
		next = append(next, g.eigen)
	} else {
		for _, l := range g.liquid {
			if !slices.Contains(next, l) {
				next = append(next, l)
			}
		}
	}
	if len(next) == len(a.strategies) {
		return
	}
	slices.Sort(next)
	a.strategies = next
	g.beginTx(block)
	g.emitAVSStrategies(a)
}

// maybeRegister schedules the registration of an operator to an AVS with a
// chance that grows with both the AVS's popularity and the operator's
// eagerness.
func (g *generator) maybeRegister(op, avs int32) {
	p := 950_000 * g.avs[avs].popPPM / 1_000_000 * g.operators[op].actPPM / 1_000_000
	if g.chance(p) {
		g.later(15, actRegister, op, avs, nil)
	}
}

func (g *generator) setRegistration(block uint64, op, avs int32, on bool) {
	key := [2]int32{op, avs}
	if g.registered[key] == on {
		return
	}
	g.beginTx(block)
	g.batch.Registrations = append(g.batch.Registrations, chain.RegistrationStatusUpdated{
		Position: g.pos(), Operator: g.operators[op].addr, AVS: g.avs[avs].addr, Registered: on,
	})
	g.registered[key] = on
	if sets := g.avs[avs].sets; on && len(sets) > 0 && g.slashingEra() && g.chance(350_000) {
		g.later(2, actJoinSet, op, sets[g.rng.IntN(len(sets))], nil)
	}
	switch {
	case on && g.chance(120_000):
		g.later(60, actDeregister, op, avs, nil)
	case !on && g.chance(300_000):
		g.later(30, actRegister, op, avs, nil)
	}
}

// ---- stakers ----

// addStaker adds a staker delegated to operator (or to none when operator
// is -1) and returns its index.
func (g *generator) addStaker(addr string, p profile, operator int32) int32 {
	idx := int32(len(g.stakers))
	g.stakers = append(g.stakers, &stakerState{addr: addr, profile: p, operator: operator, isOperator: operator >= 0})
	if p == profileBeacon || p == profileMixed {
		g.beaconers = append(g.beaconers, idx)
	}
	if operator < 0 {
		g.undelegated++
	}
	return idx
}

func (g *generator) arrive(block uint64) {
	var p profile
	switch r := g.rng.IntN(100); {
	case r < 22:
		p = profileBeacon
	case r < 82:
		p = profileLiquid
	case r < 92:
		p = profileEigen
	default:
		p = profileMixed
	}
	if (p == profileBeacon || p == profileMixed) && g.beacon < 0 || p == profileEigen && g.eigen < 0 {
		p = profileLiquid
	}
	idx := g.addStaker(g.address("staker", uint64(len(g.stakers))), p, -1)
	g.beginTx(block)
	g.depositFor(idx, true)
	if p == profileMixed {
		g.later(10, actDeposit, idx, -1, nil)
	}
	if g.chance(850_000) {
		if g.chance(600_000) {
			g.schedule(block+1+g.rng.Uint64N(600), actDelegate, idx, -1, nil)
		} else {
			g.later(6, actDelegate, idx, -1, nil)
		}
	}
}

// randomStaker picks an arrived staker satisfying ok, trying a few times.
func (g *generator) randomStaker(ok func(*stakerState) bool) (int32, bool) {
	if len(g.stakers) == 0 {
		return 0, false
	}
	for range 8 {
		idx := int32(g.rng.IntN(len(g.stakers)))
		if ok(g.stakers[idx]) {
			return idx, true
		}
	}
	return 0, false
}

func (g *generator) deposit(block uint64, idx int32) {
	if idx < 0 {
		var ok bool
		if idx, ok = g.randomStaker(func(*stakerState) bool { return true }); !ok {
			return
		}
	}
	g.beginTx(block)
	g.depositFor(idx, false)
}

// depositFor emits a deposit fitting the staker's profile in the current
// transaction.
func (g *generator) depositFor(idx int32, first bool) {
	s := g.stakers[idx]
	switch s.profile {
	case profileBeacon:
		g.podDelta(idx, g.moreValidators(first))
		return
	case profileMixed:
		if first || g.chance(500_000) {
			g.podDelta(idx, g.moreValidators(first))
			return
		}
	case profileEigen:
		if first || g.chance(800_000) {
			amount := g.scaled(g.decadeAmount(18, eigenDecades))
			g.strategyDeposit(idx, g.eigen, amount)
			return
		}
	}
	strat := -1
	if !first && g.chance(600_000) {
		for _, h := range s.holdings {
			if g.strategies[h.strat].Kind == chain.KindLiquid {
				strat = h.strat
				break
			}
		}
	}
	if strat < 0 {
		strat = g.liquid[pickCum(g.rng, g.liquidCum)]
	}
	value := g.scaled(g.decadeAmount(16, liquidDecades))
	g.strategyDeposit(idx, strat, g.liquidShares(strat, value))
}

// strategyDeposit emits StrategyManager.Deposit (the slashing-era variant,
// without the token, from the upgrade on) and credits the shares.
func (g *generator) strategyDeposit(idx int32, strat int, shares *big.Int) {
	if shares.Sign() <= 0 {
		return
	}
	s := g.stakers[idx]
	st := g.strategies[strat]
	token := st.UnderlyingToken
	if g.slashingEra() {
		token = ""
	}
	g.batch.Deposits = append(g.batch.Deposits, chain.Deposit{
		Position: g.pos(), Staker: s.addr, Token: token, Strategy: st.Address, Shares: shares,
	})
	g.credit(s, strat, shares)
}

// credit adds deposit shares to a position and, for a delegated staker, to
// the operator's shares (OperatorSharesIncreased). From the slashing
// upgrade on the DelegationManager first updates the position's deposit
// scaling factor and emits it.
func (g *generator) credit(s *stakerState, strat int, shares *big.Int) {
	var dsf *big.Int
	if g.slashingEra() {
		dsf = g.scalingFactorAfterDeposit(s, strat, shares)
	}
	s.add(strat, shares, g.beacon)
	if dsf != nil {
		s.position(strat).dsf = dsf
		g.emitScalingFactor(s, strat, dsf)
	}
	g.operatorShares(s, strat, shares, chain.SharesIncreased)
}

// podDelta emits EigenPodManager.PodSharesUpdated and, for a delegated
// staker, the matching operator share change.
func (g *generator) podDelta(idx int32, delta *big.Int) {
	if delta.Sign() == 0 {
		return
	}
	s := g.stakers[idx]
	g.batch.PodShares = append(g.batch.PodShares, chain.PodSharesUpdated{Position: g.pos(), PodOwner: s.addr, SharesDelta: delta})
	if delta.Sign() > 0 {
		g.credit(s, g.beacon, delta)
		return
	}
	abs := new(big.Int).Neg(delta)
	s.sub(g.beacon, abs)
	g.operatorShares(s, g.beacon, abs, chain.SharesDecreased)
}

// operatorShares emits OperatorSharesIncreased/Decreased when the staker
// is delegated, and moves the operator's shares.
func (g *generator) operatorShares(s *stakerState, strat int, shares *big.Int, t chain.DelegationType) {
	if s.operator < 0 {
		return
	}
	op := g.operators[s.operator]
	g.batch.Delegations = append(g.batch.Delegations, chain.DelegationEvent{
		Position: g.pos(), Type: t, Staker: s.addr, Operator: op.addr,
		Strategy: g.strategies[strat].Address, Shares: shares,
	})
	v := op.delegated(strat, len(g.strategies))
	if t == chain.SharesIncreased {
		v.Add(v, shares)
	} else {
		v.Sub(v, shares)
	}
}

// podUpdate is a pod checkpoint or credential proof of a beacon restaker:
// new validators, consensus rewards, or now and then a penalty.
func (g *generator) podUpdate(block uint64) {
	if len(g.beaconers) == 0 {
		return
	}
	idx := g.beaconers[g.rng.IntN(len(g.beaconers))]
	s := g.stakers[idx]
	bal := s.holding(g.beacon)
	var delta *big.Int
	switch r := g.rng.IntN(100); {
	case bal == nil:
		delta = g.newValidators()
	case r < 5:
		delta = g.moreValidators(false)
	case r < 11:
		delta = new(big.Int).Mul(bal, big.NewInt(1+g.rng.Int64N(30)))
		delta.Quo(delta, big.NewInt(1000)).Quo(delta, gwei).Mul(delta, gwei).Neg(delta)
	default:
		delta = new(big.Int).Mul(bal, big.NewInt(3+g.rng.Int64N(23)))
		delta.Quo(delta, big.NewInt(10000)).Quo(delta, gwei).Mul(delta, gwei)
	}
	if delta.Sign() == 0 {
		return
	}
	g.beginTx(block)
	if delta.Sign() < 0 && g.slashingEra() {
		// A balance decrease lowers the pod owner's beacon-chain slashing
		// factor instead of its shares.
		g.beaconSlash(idx, bal, new(big.Int).Neg(delta))
		return
	}
	g.podDelta(idx, delta)
}

// ---- delegation and withdrawals ----

// delegate delegates staker idx (a random undelegated staker when idx < 0)
// to an operator chosen by weight, avoiding operator avoid: the
// StakerDelegated event and an increase for every strategy it holds.
func (g *generator) delegate(block uint64, idx, avoid int32) {
	if idx < 0 {
		var ok bool
		if idx, ok = g.randomStaker(func(s *stakerState) bool { return s.operator < 0 }); !ok {
			return
		}
	}
	s := g.stakers[idx]
	if s.operator >= 0 || len(g.opOrder) == 0 {
		return
	}
	op := g.opOrder[pickCum(g.rng, g.opCum)]
	for try := 0; op == avoid && try < 4; try++ {
		op = g.opOrder[pickCum(g.rng, g.opCum)]
	}
	if op == avoid {
		return
	}
	g.beginTx(block)
	g.batch.Delegations = append(g.batch.Delegations, chain.DelegationEvent{
		Position: g.pos(), Type: chain.Delegation, Staker: s.addr, Operator: g.operators[op].addr,
	})
	s.operator = op
	g.undelegated--
	if g.slashingEra() {
		g.delegateShares(s)
		return
	}
	for _, h := range s.holdings {
		g.operatorShares(s, h.strat, new(big.Int).Set(h.shares), chain.SharesIncreased)
	}
}

// withdraw queues a partial (or whole) withdrawal of one or two strategies
// by staker idx, or by a random staker when idx < 0.
func (g *generator) withdraw(block uint64, idx int32) {
	if idx < 0 {
		var ok bool
		if idx, ok = g.randomStaker(func(s *stakerState) bool { return len(s.holdings) > 0 }); !ok {
			return
		}
	}
	s := g.stakers[idx]
	if len(s.holdings) == 0 {
		return
	}
	n := 1
	if len(s.holdings) > 1 && g.chance(250_000) {
		n = 2
	}
	var strats []int
	var amounts []*big.Int
	for _, j := range g.rng.Perm(len(s.holdings))[:n] {
		h := s.holdings[j]
		amount := new(big.Int).Set(h.shares)
		if !g.chance(250_000) {
			amount.Mul(amount, big.NewInt(5+g.rng.Int64N(86))).Quo(amount, big.NewInt(100))
		}
		if amount.Sign() > 0 {
			strats = append(strats, h.strat)
			amounts = append(amounts, amount)
		}
	}
	if len(strats) == 0 {
		return
	}
	g.beginTx(block)
	if g.slashingEra() {
		g.queueScaled(idx, strats, amounts, g.chance(80_000))
		return
	}
	for j, strat := range strats {
		g.operatorShares(s, strat, amounts[j], chain.SharesDecreased)
	}
	for j, strat := range strats {
		s.sub(strat, amounts[j])
	}
	g.queueWithdrawal(idx, s.operator, strats, amounts, nil, g.chance(80_000))
}

// undelegate undelegates staker idx, or a random delegated staker when
// idx < 0: StakerUndelegated, then per strategy held a decrease and a
// withdrawal of all of it (one withdrawal per strategy, as the
// DelegationManager does). Some stakers go on to delegate to another
// operator and take their shares with them.
func (g *generator) undelegate(block uint64, idx int32) {
	if idx < 0 {
		var ok bool
		if idx, ok = g.randomStaker(func(s *stakerState) bool { return s.operator >= 0 && !s.isOperator }); !ok {
			return
		}
	}
	s := g.stakers[idx]
	if s.operator < 0 || s.isOperator {
		return
	}
	op := s.operator
	g.beginTx(block)
	g.batch.Delegations = append(g.batch.Delegations, chain.DelegationEvent{
		Position: g.pos(), Type: chain.Undelegation, Staker: s.addr, Operator: g.operators[op].addr,
	})
	redelegate := g.chance(450_000)
	held := s.holdings
	s.holdings = nil
	for _, h := range held {
		asShares := redelegate && g.chance(800_000) || g.chance(50_000)
		if g.slashingEra() {
			g.undelegateScaled(idx, h, asShares)
			continue
		}
		g.operatorShares(s, h.strat, h.shares, chain.SharesDecreased)
		g.queueWithdrawal(idx, op, []int{h.strat}, []*big.Int{h.shares}, nil, asShares)
	}
	s.operator = -1
	g.undelegated++
	if redelegate {
		g.later(3, actDelegate, idx, op, nil)
	}
}

// queueWithdrawal emits WithdrawalQueued for shares already removed from
// the staker and schedules its completion: most withdrawals are completed
// some days after the minimum delay, some never. scaled is nil before the
// slashing upgrade.
func (g *generator) queueWithdrawal(idx, op int32, strats []int, shares, scaled []*big.Int, asShares bool) {
	s := g.stakers[idx]
	delegatedTo := chain.ZeroAddress
	if op >= 0 {
		delegatedTo = g.operators[op].addr
	}
	withdrawer := s.addr
	if g.chance(30_000) {
		withdrawer = g.address("withdrawer", uint64(idx))
	}
	addrs := make([]string, len(strats))
	for j, si := range strats {
		addrs[j] = g.strategies[si].Address
	}
	root := g.hashHex("withdrawal", uint64(idx), uint64(s.nonce))
	g.batch.WithdrawalsQueued = append(g.batch.WithdrawalsQueued, chain.WithdrawalQueued{
		Position:     g.pos(),
		Root:         root,
		Nonce:        big.NewInt(s.nonce),
		Staker:       s.addr,
		DelegatedTo:  delegatedTo,
		Withdrawer:   withdrawer,
		StartBlock:   uint32(g.curBlock),
		Strategies:   addrs,
		Shares:       shares,
		ScaledShares: scaled,
	})
	s.nonce++
	if !g.chance(850_000) {
		return
	}
	at := g.curBlock + MinWithdrawalDelayBlocks + g.expBlocks(6*BlocksPerDay)
	if at <= g.headBlock {
		w := &pendingWithdrawal{root: root, staker: idx, op: op, start: g.curBlock, strats: strats, shares: shares, scaled: scaled, asShares: asShares}
		if w.scaled == nil {
			// A withdrawal queued before the upgrade completes after it
			// with its shares read as scaled shares.
			w.scaled = shares
		}
		g.schedule(at, actComplete, idx, -1, w)
	}
}

// complete completes a queued withdrawal, as tokens or by crediting the
// shares back (a deposit or pod update and, when delegated, an operator
// share increase per strategy) before WithdrawalCompleted, as the M2
// DelegationManager does; completeScaled completes it after the upgrade.
func (g *generator) complete(block uint64, w *pendingWithdrawal) {
	if block >= g.upgradeBlock {
		g.completeScaled(block, w)
		return
	}
	g.beginTx(block)
	if w.asShares {
		for j, strat := range w.strats {
			if strat == g.beacon {
				g.podDelta(w.staker, w.shares[j])
			} else {
				g.strategyDeposit(w.staker, strat, w.shares[j])
			}
		}
	}
	g.batch.WithdrawalsDone = append(g.batch.WithdrawalsDone, chain.WithdrawalCompleted{Position: g.pos(), Root: w.root})
}

// ---- rewards ----

func (g *generator) submitRewards(block uint64) {
	var cum []int64
	var candidates []int
	var total int64
	for i, a := range g.avs {
		if a.exists && len(a.rewardTokens) > 0 {
			total += a.popPPM
			cum = append(cum, total)
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return
	}
	ai := candidates[pickCum(g.rng, cum)]
	a := g.avs[ai]
	token := a.rewardTokens[g.rng.IntN(len(a.rewardTokens))]
	var amount *big.Int
	switch token {
	case g.weth:
		amount = g.decadeAmount(17, wethRewards)
	case g.eigenToken:
		amount = g.decadeAmount(20, eigenRewards)
	default:
		amount = g.decadeAmount(21, ownTokenRewards)
	}
	n := 1 + g.rng.IntN(min(3, len(a.strategies)))
	var strats []int
	for _, j := range g.rng.Perm(len(a.strategies))[:n] {
		strats = append(strats, a.strategies[j])
	}
	g.beginTx(block)
	g.emitRewards(a.addr, false, a.nonce, g.hashHex("rewards", uint64(ai), uint64(a.nonce)), token, amount, strats)
	a.nonce++
}

// submitRewardsForAll is a programmatic-incentives style submission in
// EIGEN for every staker of beacon ETH and EIGEN, from a submitter that is
// not an AVS.
func (g *generator) submitRewardsForAll(block uint64) {
	var strats []int
	for _, si := range []int{g.beacon, g.eigen} {
		if si >= 0 {
			strats = append(strats, si)
		}
	}
	if len(strats) == 0 {
		strats = append(strats, g.liquid[0])
	}
	amount := new(big.Int).Mul(big.NewInt(1_000_000+g.rng.Int64N(600_000)), pow10s[18])
	g.beginTx(block)
	g.emitRewards(g.submitter, true, g.forAllNo, g.hashHex("rewards-for-all", uint64(g.forAllNo)), g.eigenToken, amount, strats)
	if g.slashingEra() {
		// Programmatic incentives moved to submissions for all earners.
		r := &g.batch.RewardsSubmissions[len(g.batch.RewardsSubmissions)-1]
		r.Kind = chain.RewardsForAllEarners
	}
	g.forAllNo++
}

// multipliers draws the multipliers of a submission's strategies, in the
// ascending address order the RewardsCoordinator wants (strats is sorted
// so in place).
func (g *generator) multipliers(strats []int) []chain.StrategyMultiplier {
	slices.SortFunc(strats, func(x, y int) int { return strings.Compare(g.strategies[x].Address, g.strategies[y].Address) })
	mults := make([]chain.StrategyMultiplier, len(strats))
	for j, si := range strats {
		m := pow10s[18]
		if g.chance(300_000) {
			m = new(big.Int).Mul(big.NewInt(1+g.rng.Int64N(20)), pow10s[17])
		}
		mults[j] = chain.StrategyMultiplier{Strategy: g.strategies[si].Address, Multiplier: m}
	}
	return mults
}

func (g *generator) emitRewards(submitter string, forAll bool, nonce int64, hash string, token int, amount *big.Int, strats []int) {
	mults := g.multipliers(strats)
	day := uint32(g.blockTime.Unix() / 86400)
	var start uint32
	switch r := g.rng.IntN(100); {
	case forAll:
		start = day - 7
	case r < 70:
		start = day - uint32(g.rng.IntN(8))
	case r < 90:
		start = day + 1 + uint32(g.rng.IntN(7))
	default:
		start = day - 8 - uint32(g.rng.IntN(23))
	}
	duration := rewardDurations[g.rng.IntN(len(rewardDurations))]
	if forAll {
		duration = 7
	}
	g.batch.RewardsSubmissions = append(g.batch.RewardsSubmissions, chain.RewardsSubmission{
		Position:       g.pos(),
		AVS:            submitter,
		ForAll:         forAll,
		Nonce:          big.NewInt(nonce),
		Hash:           hash,
		Token:          g.tokens[token].address,
		Amount:         amount,
		StartTimestamp: start * 86400,
		Duration:       duration * 86400,
		Strategies:     mults,
	})
}
