package demo

import (
	"cmp"
	"fmt"
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
	staker    string
	start     uint64
	completed bool
	done      uint64
	queuedAt  time.Time
}

// replay holds the state a stream builds, following the contracts' rules.
type replay struct {
	net        chain.Network
	tokens     map[string]bool
	operators  map[string]bool
	avs        map[string]bool
	delegated  map[string]string              // staker → operator
	leaving    map[string]string              // staker → operator it undelegated from in the current tx
	leavingTx  map[string]string              // staker → that tx
	balances   map[string]map[string]*big.Int // staker → strategy → shares
	opShares   map[string]map[string]*big.Int // operator → strategy → SHARES_INCREASED − SHARES_DECREASED
	nonces     map[string]int64
	queued     map[string]*queued
	registered map[[2]string]bool
	lastPos    chain.Position
	started    bool

	// What happened, for the tests' assertions.
	stakersSeen map[string]bool
	recentTypes map[chain.DelegationType]int // delegation events in the last 7 days
	recentOther map[string]int               // other kinds in the last 7 days
	redelegated int                          // delegations of a staker to a different operator than before
	previous    map[string]string
	forAll      int
	rewardAVS   map[string]bool
	rewardToken map[string]bool
}

func newReplay(net chain.Network, ref Reference) *replay {
	r := &replay{
		net: net, tokens: map[string]bool{}, operators: map[string]bool{}, avs: map[string]bool{},
		delegated: map[string]string{}, leaving: map[string]string{}, leavingTx: map[string]string{},
		balances: map[string]map[string]*big.Int{}, opShares: map[string]map[string]*big.Int{},
		nonces: map[string]int64{}, queued: map[string]*queued{}, registered: map[[2]string]bool{},
		stakersSeen: map[string]bool{}, recentTypes: map[chain.DelegationType]int{}, recentOther: map[string]int{},
		previous: map[string]string{}, rewardAVS: map[string]bool{}, rewardToken: map[string]bool{},
	}
	for _, t := range ref.Tokens {
		r.tokens[t.Address] = true
	}
	return r
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
	for _, se := range ordered(b) {
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
		recent := !p.BlockTime.Before(recentSince)
		if err := r.event(p, se.ev, recent); err != nil {
			return fmt.Errorf("block %d log %d: %w", p.BlockNumber, p.LogIndex, err)
		}
	}
	return nil
}

func (r *replay) event(p chain.Position, ev any, recent bool) error {
	switch e := ev.(type) {
	case *chain.OperatorRegistered:
		if r.operators[e.Operator] {
			return fmt.Errorf("operator %s registered twice", e.Operator)
		}
		r.operators[e.Operator] = true
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
		if e.Token != st.UnderlyingToken {
			return fmt.Errorf("deposit token %s, want %s", e.Token, st.UnderlyingToken)
		}
		if e.Shares.Sign() <= 0 {
			return fmt.Errorf("deposit of %s shares", e.Shares)
		}
		add(r.balances, e.Staker, e.Strategy, e.Shares, 1)
		r.stakersSeen[e.Staker] = true
		if recent {
			r.recentOther["deposit"]++
		}
	case *chain.PodSharesUpdated:
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
		if recent {
			r.recentOther["completed"]++
		}
	case *chain.RewardsSubmission:
		return r.rewards(e, recent)
	default:
		return fmt.Errorf("unexpected event %T", ev)
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
	for i, s := range e.Strategies {
		if e.Shares[i].Sign() <= 0 {
			return fmt.Errorf("withdrawal of %s shares", e.Shares[i])
		}
		if bal := add(r.balances, e.Staker, s, e.Shares[i], -1); bal.Sign() < 0 {
			return fmt.Errorf("staker %s withdraws more %s than it holds", e.Staker, s)
		}
	}
	r.queued[e.Root] = &queued{staker: e.Staker, start: uint64(e.StartBlock), queuedAt: p.BlockTime}
	if recent {
		r.recentOther["queued"]++
	}
	return nil
}

func (r *replay) rewards(e *chain.RewardsSubmission, recent bool) error {
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

// finish checks that every operator's ledger of share events equals what
// its delegated stakers hold.
func (r *replay) finish() error {
	want := map[string]map[string]*big.Int{}
	for staker, op := range r.delegated {
		for strat, v := range r.balances[staker] {
			if v.Sign() < 0 {
				return fmt.Errorf("staker %s ends with negative %s", staker, strat)
			}
			if v.Sign() > 0 {
				add(want, op, strat, v, 1)
			}
		}
	}
	for op, m := range r.opShares {
		for strat, v := range m {
			w := new(big.Int)
			if want[op] != nil && want[op][strat] != nil {
				w = want[op][strat]
			}
			if v.Cmp(w) != 0 {
				return fmt.Errorf("operator %s strategy %s: share events sum to %s, delegated stakers hold %s", op, strat, v, w)
			}
		}
	}
	for op, m := range want {
		for strat, v := range m {
			if r.opShares[op] == nil || r.opShares[op][strat] == nil {
				return fmt.Errorf("operator %s strategy %s: stakers hold %s without share events", op, strat, v)
			}
		}
	}
	return nil
}
