package slashingchain

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
)

// mulWad is the contracts' a·b/1e18, rounded down.
func mulWad(a, b *big.Int) *big.Int {
	return new(big.Int).Div(new(big.Int).Mul(a, b), WAD)
}

// divWad is the contracts' a·1e18/b, rounded down.
func divWad(a, b *big.Int) *big.Int {
	return new(big.Int).Div(new(big.Int).Mul(a, WAD), b)
}

func wadFraction(numerator, denominator int64) *big.Int {
	return new(big.Int).Div(new(big.Int).Mul(WAD, big.NewInt(numerator)), big.NewInt(denominator))
}

func TestRunHistory(t *testing.T) {
	c := Deploy(t)
	h := c.RunHistory(t)
	op1, op2 := c.Operators[0], c.Operators[1]
	s1, s2, s3 := c.Stakers[0], c.Stakers[1], c.Stakers[2]
	strategies := []common.Address{c.Strategy}
	threeQuarters := wadFraction(3, 4)

	eq := func(what string, got, want *big.Int) {
		t.Helper()
		if got.Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", what, got, want)
		}
	}
	one := func(what string, got []*big.Int, err error) *big.Int {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d values, want 1", what, len(got))
		}
		return got[0]
	}
	operatorShares := func(v *View, op common.Address) *big.Int {
		t.Helper()
		s, err := v.GetOperatorShares(op, strategies)
		return one("getOperatorShares", s, err)
	}
	withdrawable := func(v *View, staker common.Address) (*big.Int, *big.Int) {
		t.Helper()
		w, d, err := v.GetWithdrawableShares(staker, strategies)
		return one("getWithdrawableShares", w, err), one("getWithdrawableShares", d, nil)
	}
	depositShares := func(v *View, staker common.Address) *big.Int {
		t.Helper()
		s, err := v.StakerDepositShares(staker, c.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	magnitude := func(v *View, op common.Address) uint64 {
		t.Helper()
		m, err := v.GetMaxMagnitudes(op, strategies)
		if err != nil || len(m) != 1 {
			t.Fatalf("getMaxMagnitudes: %v %v", m, err)
		}
		return m[0]
	}

	// Before the slash: 160 shares delegated to operator 1 (100 + 60), 40
	// to operator 2; the allocations are in effect.
	before, after := c.ViewAt(h.SlashBlock-1), c.ViewAt(h.SlashBlock)
	eq("operator 1 shares before the slash", operatorShares(before, op1), Ether(160))
	eq("operator 2 shares before the slash", operatorShares(before, op2), Ether(40))
	for i, op := range c.Operators {
		a, err := before.GetAllocation(op, h.OperatorSet, c.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		if a.CurrentMagnitude != h.Magnitudes[i] || a.PendingDiff.Sign() != 0 {
			t.Errorf("operator %d allocation before the slash = %+v, want %d in effect", i+1, a, h.Magnitudes[i])
		}
		if m := magnitude(before, op); m != WAD.Uint64() {
			t.Errorf("operator %d max magnitude before the slash = %d, want WAD", i+1, m)
		}
	}
	members, err := before.GetMembers(h.OperatorSet)
	if err != nil || len(members) != 2 {
		t.Errorf("members before the slash = %v (%v), want both operators", members, err)
	}

	// The slash of half of a 0.5 allocation takes 0.25 of operator 1's
	// magnitude: its max magnitude is 0.75, its allocation and encumbered
	// magnitude 0.25, and a quarter of its delegated shares is gone.
	if m := magnitude(after, op1); m != threeQuarters.Uint64() {
		t.Errorf("operator 1 max magnitude after the slash = %d, want %s", m, threeQuarters)
	}
	if m := magnitude(after, op2); m != WAD.Uint64() {
		t.Errorf("operator 2 max magnitude after the slash = %d, want WAD", m)
	}
	a, err := after.GetAllocation(op1, h.OperatorSet, c.Strategy)
	if err != nil {
		t.Fatal(err)
	}
	if want := wadFraction(1, 4).Uint64(); a.CurrentMagnitude != want {
		t.Errorf("operator 1 allocation after the slash = %d, want %d", a.CurrentMagnitude, want)
	}
	if e, err := after.GetEncumberedMagnitude(op1, c.Strategy); err != nil || e != wadFraction(1, 4).Uint64() {
		t.Errorf("operator 1 encumbered magnitude after the slash = %d (%v), want 0.25 WAD", e, err)
	}
	eq("operator 1 shares after the slash", operatorShares(after, op1), Ether(120))
	eq("operator 2 shares after the slash", operatorShares(after, op2), Ether(40))
	for i, s := range []common.Address{s1, s2} {
		w, d := withdrawable(after, s)
		eq("deposit shares after the slash", d, h.Deposits[i])
		eq("stakerDepositShares after the slash", depositShares(after, s), h.Deposits[i])
		eq("withdrawable shares after the slash", w, mulWad(h.Deposits[i], threeQuarters))
		if w.Cmp(d) == 0 {
			t.Errorf("staker %d: withdrawable and deposit shares both %s after the slash", i+1, w)
		}
	}
	if w, d := withdrawable(after, s3); w.Cmp(d) != 0 {
		t.Errorf("staker 3 (operator 2, not slashed): withdrawable %s != deposit %s", w, d)
	}

	// Staker 1 queued 40 of its 100 deposit shares: 30 withdrawable.
	pw := h.PartialWithdrawal
	queued := c.ViewAt(pw.QueuedBlock)
	w, shares, err := queued.GetQueuedWithdrawal(pw.Root)
	if err != nil {
		t.Fatal(err)
	}
	if w.Staker != s1 || w.DelegatedTo != op1 || len(w.ScaledShares) != 1 || len(shares) != 1 {
		t.Fatalf("queued withdrawal %x = %+v, %v", pw.Root, w, shares)
	}
	eq("partial withdrawal scaled shares", w.ScaledShares[0], Ether(40))
	eq("partial withdrawal shares", shares[0], Ether(30))
	eq("partial withdrawal shares (event)", pw.SharesToWithdraw[0], Ether(30))
	eq("staker 1 deposit shares after queueing", depositShares(queued, s1), Ether(60))
	eq("operator 1 shares after the partial withdrawal", operatorShares(queued, op1), Ether(90))
	eq("full withdrawal shares (event)", h.FullWithdrawal.SharesToWithdraw[0], Ether(45))
	eq("operator 1 shares after both withdrawals", operatorShares(c.ViewAt(h.FullWithdrawal.QueuedBlock), op1), Ether(45))

	// Completion: staker 1 receives 30 TEST; staker 2 gets its 45 shares
	// back as deposit shares, delegated to operator 1 again.
	if pending, err := c.ViewAt(pw.CompletedBlock).IsPendingWithdrawal(pw.Root); err != nil || pending {
		t.Errorf("partial withdrawal pending after completion: %v %v", pending, err)
	}
	bal, err := c.ViewAt(pw.CompletedBlock - 1).TokenBalance(s1)
	if err != nil {
		t.Fatal(err)
	}
	balAfter, err := c.ViewAt(pw.CompletedBlock).TokenBalance(s1)
	if err != nil {
		t.Fatal(err)
	}
	eq("tokens staker 1 received", new(big.Int).Sub(balAfter, bal), Ether(30))
	completed := c.ViewAt(h.FullWithdrawal.CompletedBlock)
	eq("staker 2 deposit shares after completing as shares", depositShares(completed, s2), Ether(45))
	w2, _ := withdrawable(completed, s2)
	// Re-added shares reset the deposit scaling factor to 1/0.75.
	eq("staker 2 withdrawable shares after completing as shares", w2, mulWad(mulWad(Ether(45), divWad(WAD, threeQuarters)), threeQuarters))
	eq("operator 1 shares after the completions", operatorShares(completed, op1), Ether(90))

	// At the end: staker 1's fresh 20 are delegated in full; the strategy
	// still counts the slashed (burnable, not yet burned) shares and has
	// paid out 30.
	end := c.View()
	eq("operator 1 shares at the end", operatorShares(end, op1), Ether(110))
	eq("staker 1 deposit shares at the end", depositShares(end, s1), Ether(80))
	w1, _ := withdrawable(end, s1)
	if diff := new(big.Int).Sub(w1, Ether(65)); diff.CmpAbs(big.NewInt(100)) > 0 {
		t.Errorf("staker 1 withdrawable shares at the end = %s, want about 65e18", w1)
	}
	total, err := end.TotalShares()
	if err != nil {
		t.Fatal(err)
	}
	eq("strategy total shares", total, Ether(190))

	// Operator 2 left the set; staker 3's undelegation queued its 40 shares.
	if m, err := end.IsMemberOfOperatorSet(op2, h.OperatorSet); err != nil || m {
		t.Errorf("operator 2 still a member: %v %v", m, err)
	}
	if m, err := end.IsMemberOfOperatorSet(op1, h.OperatorSet); err != nil || !m {
		t.Errorf("operator 1 not a member: %v %v", m, err)
	}
	if members, err := end.GetMembers(h.OperatorSet); err != nil || len(members) != 1 || members[0] != op1 {
		t.Errorf("members at the end = %v (%v), want operator 1", members, err)
	}
	eq("operator 2 shares at the end", operatorShares(end, op2), new(big.Int))
	uw := h.UndelegationWithdrawal
	if _, shares, err := end.GetQueuedWithdrawal(uw.Root); err != nil || len(shares) != 1 || shares[0].Cmp(Ether(40)) != 0 {
		t.Errorf("undelegation withdrawal shares = %v (%v), want [40e18]", shares, err)
	}
	if to, err := end.DelegatedTo(s3); err != nil || to != (common.Address{}) {
		t.Errorf("staker 3 delegated to %s (%v) after undelegating", to.Hex(), err)
	}

	// The rewards submissions succeeded.
	var zero common.Hash
	if h.OperatorDirectedAVSSubmission == zero || h.OperatorDirectedOperatorSetSubmission == zero || h.AVSSubmission == zero {
		t.Errorf("rewards submission hashes: %x %x %x", h.OperatorDirectedAVSSubmission, h.OperatorDirectedOperatorSetSubmission, h.AVSSubmission)
	}
	for name, hash := range map[string]common.Hash{
		"operator-directed AVS":          h.OperatorDirectedAVSSubmission,
		"operator-directed operator set": h.OperatorDirectedOperatorSetSubmission,
	} {
		var ok bool
		var err error
		if name == "operator-directed AVS" {
			ok, err = c.Bindings.RewardsCoordinator.IsOperatorDirectedAVSRewardsSubmissionHash(nil, c.AVS, hash)
		} else {
			ok, err = c.Bindings.RewardsCoordinator.IsOperatorDirectedOperatorSetRewardsSubmissionHash(nil, c.AVS, hash)
		}
		if err != nil || !ok {
			t.Errorf("%s submission %x not recorded: %v %v", name, hash, ok, err)
		}
	}

	// Every event the indexer reads from the slashing-era contracts is in
	// the history's logs, each from the contract that defines it.
	emitters := map[string]common.Address{
		"OperatorSetCreated":                                  c.Core.AllocationManager,
		"StrategyAddedToOperatorSet":                          c.Core.AllocationManager,
		"OperatorAddedToOperatorSet":                          c.Core.AllocationManager,
		"AllocationDelaySet":                                  c.Core.AllocationManager,
		"AllocationUpdated":                                   c.Core.AllocationManager,
		"MaxMagnitudeUpdated":                                 c.Core.AllocationManager,
		"EncumberedMagnitudeUpdated":                          c.Core.AllocationManager,
		"OperatorSlashed":                                     c.Core.AllocationManager,
		"OperatorSharesSlashed":                               c.Core.DelegationManager,
		"DepositScalingFactorUpdated":                         c.Core.DelegationManager,
		"SlashingWithdrawalQueued":                            c.Core.DelegationManager,
		"SlashingWithdrawalCompleted":                         c.Core.DelegationManager,
		"OperatorDirectedAVSRewardsSubmissionCreated":         c.Core.RewardsCoordinator,
		"OperatorDirectedOperatorSetRewardsSubmissionCreated": c.Core.RewardsCoordinator,
		"AVSRewardsSubmissionCreated":                         c.Core.RewardsCoordinator,
		"Deposit":                                             c.Core.StrategyManager,
		"StakerDelegated":                                     c.Core.DelegationManager,
		"OperatorSharesIncreased":                             c.Core.DelegationManager,
		"OperatorSharesDecreased":                             c.Core.DelegationManager,
		"OperatorRemovedFromOperatorSet":                      c.Core.AllocationManager,
		"StakerUndelegated":                                   c.Core.DelegationManager,
		"OperatorRegistered":                                  c.Core.DelegationManager,
		"OperatorMetadataURIUpdated":                          c.Core.DelegationManager,
		"AVSMetadataURIUpdated":                               c.Core.AllocationManager,
	}
	seen := map[string]int{}
	for _, l := range c.Logs(t, h.FromBlock, h.ToBlock) {
		if name := EventName(l.Topics[0]); name != "" && emitters[name] == l.Address {
			seen[name]++
		}
	}
	for name := range emitters {
		if seen[name] == 0 {
			t.Errorf("no %s event in the history's logs", name)
		}
	}
	if seen["OperatorSlashed"] != 1 || seen["OperatorSetCreated"] != 1 || seen["SlashingWithdrawalQueued"] != 3 || seen["SlashingWithdrawalCompleted"] != 2 {
		t.Errorf("event counts: %v", seen)
	}
	if t.Failed() {
		t.Logf("events: %v", seen)
	}
}

// TestServe reads the chain over HTTP JSON-RPC, as the indexer does.
func TestServe(t *testing.T) {
	c := Deploy(t)
	p := c.Serve(t)
	ec, err := ethclient.Dial(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	n, err := ec.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != c.DeployedBlock {
		t.Errorf("head over HTTP = %d, want %d", n, c.DeployedBlock)
	}
	code, err := ec.CodeAt(context.Background(), c.Core.AllocationManager, nil)
	if err != nil || len(code) != 45 {
		t.Errorf("AllocationManager proxy code: %d bytes (%v), want the 45-byte minimal proxy", len(code), err)
	}
	id, err := ec.ChainID(context.Background())
	if err != nil || id.Int64() != ChainID {
		t.Errorf("chain id %v (%v), want %d", id, err, ChainID)
	}
}
