package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bind "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/indexer/slashingchain"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestIndexedSlashingHistoryMatchesTheContracts deploys the real EigenLayer
// v1.4.1 core contracts on a simulated chain, runs a history with an
// operator set, two allocations, a slash, withdrawals queued and completed
// after it, a deposit after it and v2 rewards, indexes it with `stakegraph
// index`, serves it with `stakegraph serve`, and compares every figure the
// API gives with what the contracts' view functions answer over eth_call.
func TestIndexedSlashingHistoryMatchesTheContracts(t *testing.T) {
	c := slashingchain.Deploy(t)
	h := c.RunHistory(t)
	proxy := c.Serve(t)
	head := c.Head(t)

	dbURL := storetest.NewURL(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	indexChain(t, dbURL, proxy.URL, c.Network(), head)
	key, err := db.CreateAPIKey(ctx, "slashing-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	api := &apiClient{base: serveOnFreePort(t, dbURL, "--network", "holesky", "--response-cache=false"), key: key}

	v := c.View()
	strat := c.Strategy
	strategies := []common.Address{strat}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(slashingchain.DescribeError(err))
		}
	}
	lower := func(a common.Address) string { return strings.ToLower(a.Hex()) }
	eq := func(what, got string, want *big.Int) {
		t.Helper()
		if got != want.String() {
			t.Errorf("%s = %s; the contracts say %s", what, got, want)
		}
	}

	// Stakers: deposit shares, withdrawable shares and their operator.
	for i, s := range c.Stakers {
		var r struct {
			Staker struct {
				OperatorAddress *string
				Shares          []struct{ StrategyAddress, Shares, DepositShares, WithdrawableShares string }
			}
		}
		api.graphql(t, `query($a: Address!) { staker(address: $a) { operatorAddress
			shares { strategyAddress shares depositShares withdrawableShares } } }`, map[string]any{"a": lower(s)}, &r)
		deposit, err := v.StakerDepositShares(s, strat)
		must(err)
		withdrawable, depositShares, err := v.GetWithdrawableShares(s, strategies)
		must(err)
		if deposit.Cmp(depositShares[0]) != 0 {
			t.Fatalf("staker %d: stakerDepositShares %s, getWithdrawableShares' deposit shares %s", i, deposit, depositShares[0])
		}
		got := map[string][3]string{}
		for _, p := range r.Staker.Shares {
			got[p.StrategyAddress] = [3]string{p.Shares, p.DepositShares, p.WithdrawableShares}
		}
		p, ok := got[lower(strat)]
		if deposit.Sign() == 0 {
			if ok && (p[1] != "0" || p[2] != "0") {
				t.Errorf("staker %d: position %v; the contracts say it holds no shares", i, p)
			}
		} else {
			eq(fmt.Sprintf("staker %d depositShares", i), p[1], deposit)
			eq(fmt.Sprintf("staker %d withdrawableShares", i), p[2], withdrawable[0])
			eq(fmt.Sprintf("staker %d shares", i), p[0], withdrawable[0])
		}
		operator, err := v.DelegatedTo(s)
		must(err)
		switch {
		case operator == (common.Address{}) && r.Staker.OperatorAddress != nil:
			t.Errorf("staker %d: delegated to %s; the contracts say to nobody", i, *r.Staker.OperatorAddress)
		case operator != (common.Address{}) && (r.Staker.OperatorAddress == nil || *r.Staker.OperatorAddress != lower(operator)):
			t.Errorf("staker %d: delegated to %v; the contracts say %s", i, r.Staker.OperatorAddress, lower(operator))
		}
	}

	// The slash's OperatorSharesDecreased names staker address(0): it must
	// not become a staker.
	var zero struct {
		Staker struct{ Shares []struct{ Shares string } }
	}
	api.graphql(t, `{ staker(address: "0x0000000000000000000000000000000000000000") { shares { shares } } }`, nil, &zero)
	if len(zero.Staker.Shares) != 0 {
		t.Errorf("the zero address holds shares %v", zero.Staker.Shares)
	}

	// Operators: delegated shares, max magnitudes, allocations and
	// memberships.
	set := h.OperatorSet
	allocated, err := c.Bindings.AllocationManager.GetAllocatedStake(&bind.CallOpts{}, set, c.Operators[:], strategies)
	must(err)
	for i, op := range c.Operators {
		var r struct {
			Operator struct {
				Shares        []struct{ StrategyAddress, Shares string }
				MaxMagnitudes []struct{ StrategyAddress, MaxMagnitude string }
				Allocations   struct {
					Data []struct {
						AvsAddress, StrategyAddress, Magnitude, MaxMagnitude, AllocatedShares string
						OperatorSetID                                                         int `json:"operatorSetId"`
						PendingMagnitude                                                      *string
						EffectBlock                                                           *int
					}
				}
				OperatorSets struct {
					Data []struct {
						AvsAddress    string
						OperatorSetID int `json:"operatorSetId"`
						IsActive      bool
					}
				}
			}
		}
		api.graphql(t, `query($a: Address!) { operator(address: $a) {
			shares { strategyAddress shares }
			maxMagnitudes { strategyAddress maxMagnitude }
			allocations(take: 100) { data { avsAddress operatorSetId strategyAddress magnitude pendingMagnitude effectBlock maxMagnitude allocatedShares } }
			operatorSets(isActive: null, take: 100) { data { avsAddress operatorSetId isActive } } } }`,
			map[string]any{"a": lower(op)}, &r)
		o := r.Operator
		shares, err := v.GetOperatorShares(op, strategies)
		must(err)
		gotShares := "0"
		for _, s := range o.Shares {
			if s.StrategyAddress == lower(strat) {
				gotShares = s.Shares
			}
		}
		eq(fmt.Sprintf("operator %d shares", i), gotShares, shares[0])

		maxMags, err := v.GetMaxMagnitudes(op, strategies)
		must(err)
		gotMax := ""
		for _, m := range o.MaxMagnitudes {
			if m.StrategyAddress == lower(strat) {
				gotMax = m.MaxMagnitude
			}
		}
		eq(fmt.Sprintf("operator %d maxMagnitude", i), gotMax, new(big.Int).SetUint64(maxMags[0]))

		a, err := v.GetAllocation(op, set, strat)
		must(err)
		if len(o.Allocations.Data) != 1 {
			t.Fatalf("operator %d: allocations %+v; the history made one", i, o.Allocations.Data)
		}
		got := o.Allocations.Data[0]
		if got.AvsAddress != lower(set.Avs) || got.OperatorSetID != int(set.Id) || got.StrategyAddress != lower(strat) {
			t.Errorf("operator %d: allocation to %s/%d in %s; want %s/%d in %s", i, got.AvsAddress, got.OperatorSetID,
				got.StrategyAddress, lower(set.Avs), set.Id, lower(strat))
		}
		eq(fmt.Sprintf("operator %d allocation magnitude", i), got.Magnitude, new(big.Int).SetUint64(a.CurrentMagnitude))
		eq(fmt.Sprintf("operator %d allocation maxMagnitude", i), got.MaxMagnitude, new(big.Int).SetUint64(maxMags[0]))
		eq(fmt.Sprintf("operator %d allocatedShares", i), got.AllocatedShares, allocated[i][0])
		if a.PendingDiff.Sign() == 0 {
			if got.PendingMagnitude != nil || got.EffectBlock != nil {
				t.Errorf("operator %d: pending change %v at %v; the contracts have none", i, *got.PendingMagnitude, got.EffectBlock)
			}
		} else {
			want := new(big.Int).Add(new(big.Int).SetUint64(a.CurrentMagnitude), a.PendingDiff)
			if got.PendingMagnitude == nil || got.EffectBlock == nil || *got.EffectBlock != int(a.EffectBlock) {
				t.Errorf("operator %d: no pending change; the contracts have %s at block %d", i, want, a.EffectBlock)
			} else {
				eq(fmt.Sprintf("operator %d pendingMagnitude", i), *got.PendingMagnitude, want)
			}
		}
		encumbered, err := v.GetEncumberedMagnitude(op, strat)
		must(err)
		if encumbered > maxMags[0] {
			t.Errorf("operator %d: encumbered magnitude %d above max magnitude %d", i, encumbered, maxMags[0])
		}

		member, err := v.IsMemberOfOperatorSet(op, set)
		must(err)
		if len(o.OperatorSets.Data) != 1 || o.OperatorSets.Data[0].IsActive != member ||
			o.OperatorSets.Data[0].AvsAddress != lower(set.Avs) || o.OperatorSets.Data[0].OperatorSetID != int(set.Id) {
			t.Errorf("operator %d: memberships %+v; isMemberOfOperatorSet says %v", i, o.OperatorSets.Data, member)
		}
	}

	// The AVS: its operators are the set's members; its shares are theirs.
	members, err := v.GetMembers(set)
	must(err)
	membersShares := new(big.Int)
	for _, m := range members {
		s, err := v.GetOperatorShares(m, strategies)
		must(err)
		membersShares.Add(membersShares, s[0])
	}
	var avs struct {
		Avs struct {
			TotalOperators int
			Shares         []struct{ StrategyAddress, Shares string }
			OperatorSets   struct {
				Data []struct {
					ID             int
					Strategies     []string
					TotalOperators int
					AllocatedStake []struct{ StrategyAddress, Shares string }
				}
			}
			Rewards struct {
				TotalSubmissions int
				TotalRewards     string
				Submissions      []struct {
					RewardsSubmissionHash string
					Kind                  string
					TotalAmount           string
					OperatorSetID         *int `json:"operatorSetId"`
					Operators             []struct{ OperatorAddress, Amount string }
				}
			}
		}
	}
	api.graphql(t, `query($a: Address!) { avs(address: $a) { totalOperators shares { strategyAddress shares }
		operatorSets { data { id strategies totalOperators allocatedStake { strategyAddress shares } } }
		rewards { totalSubmissions totalRewards submissions { rewardsSubmissionHash kind totalAmount operatorSetId
			operators { operatorAddress amount } } } } }`, map[string]any{"a": lower(c.AVS)}, &avs)
	if avs.Avs.TotalOperators != len(members) {
		t.Errorf("AVS totalOperators = %d; the set has %d members", avs.Avs.TotalOperators, len(members))
	}
	gotAVSShares := "0"
	for _, s := range avs.Avs.Shares {
		if s.StrategyAddress == lower(strat) {
			gotAVSShares = s.Shares
		}
	}
	eq("AVS shares", gotAVSShares, membersShares)
	inSet, err := v.GetStrategiesInOperatorSet(set)
	must(err)
	if sets := avs.Avs.OperatorSets.Data; len(sets) != 1 || sets[0].ID != int(set.Id) || sets[0].TotalOperators != len(members) ||
		len(sets[0].Strategies) != len(inSet) || sets[0].Strategies[0] != lower(inSet[0]) {
		t.Errorf("AVS operator sets %+v; the contracts have set %d with %d members and strategies %v", sets, set.Id, len(members), inSet)
	} else {
		setAllocated, err := c.Bindings.AllocationManager.GetAllocatedStake(&bind.CallOpts{}, set, members, strategies)
		must(err)
		want := new(big.Int)
		for _, a := range setAllocated {
			want.Add(want, a[0])
		}
		if len(sets[0].AllocatedStake) != 1 {
			t.Errorf("set allocated stake %+v; want one strategy", sets[0].AllocatedStake)
		} else {
			eq("operator set allocatedStake", sets[0].AllocatedStake[0].Shares, want)
		}
	}

	// Rewards: every submission is in the RewardsCoordinator's mapping of
	// its kind, and the operator-directed ones carry their operators.
	rc := c.Bindings.RewardsCoordinator
	isKind := map[string]func(*bind.CallOpts, common.Address, [32]byte) (bool, error){
		"avs":                     rc.IsAVSRewardsSubmissionHash,
		"operator_directed_avs":   rc.IsOperatorDirectedAVSRewardsSubmissionHash,
		"operator_directed_opset": rc.IsOperatorDirectedOperatorSetRewardsSubmissionHash,
	}
	rw := avs.Avs.Rewards
	if rw.TotalSubmissions != 3 || len(rw.Submissions) != 3 {
		t.Errorf("AVS rewards: %d submissions (%d listed); the history made 3", rw.TotalSubmissions, len(rw.Submissions))
	}
	total := new(big.Int)
	for _, s := range rw.Submissions {
		amount, _ := new(big.Int).SetString(s.TotalAmount, 10)
		if amount != nil {
			total.Add(total, amount)
		}
		check, ok := isKind[s.Kind]
		if !ok {
			t.Errorf("submission %s: kind %s; the history made none of that kind", s.RewardsSubmissionHash, s.Kind)
			continue
		}
		known, err := check(&bind.CallOpts{}, c.AVS, common.HexToHash(s.RewardsSubmissionHash))
		must(err)
		if !known {
			t.Errorf("submission %s: the RewardsCoordinator has no %s submission with that hash", s.RewardsSubmissionHash, s.Kind)
		}
		want := map[string]map[common.Address]*big.Int{
			"operator_directed_avs": h.OperatorDirectedAVSRewards, "operator_directed_opset": h.OperatorDirectedOperatorSetRewards,
		}[s.Kind]
		if len(s.Operators) != len(want) {
			t.Errorf("submission %s (%s): operators %+v; it directed %d", s.RewardsSubmissionHash, s.Kind, s.Operators, len(want))
		}
		for _, o := range s.Operators {
			if w := want[common.HexToAddress(o.OperatorAddress)]; w == nil || w.String() != o.Amount {
				t.Errorf("submission %s: operator %s amount %s; it directed %v", s.RewardsSubmissionHash, o.OperatorAddress, o.Amount, w)
			}
		}
		if (s.Kind == "operator_directed_opset") != (s.OperatorSetID != nil && *s.OperatorSetID == int(set.Id)) {
			t.Errorf("submission %s (%s): operator set %v", s.RewardsSubmissionHash, s.Kind, s.OperatorSetID)
		}
	}
	eq("AVS totalRewards", rw.TotalRewards, total)

	// Withdrawals: scaled shares when queued, payout when completed (read
	// the block before completion) or now (pending).
	for name, w := range map[string]slashingchain.QueuedWithdrawal{
		"partial": h.PartialWithdrawal, "full": h.FullWithdrawal, "undelegation": h.UndelegationWithdrawal,
	} {
		view := v
		if w.CompletedBlock != 0 {
			view = c.ViewAt(w.CompletedBlock - 1)
		}
		queued, payout, err := view.GetQueuedWithdrawal(w.Root)
		must(err)
		pending, err := v.IsPendingWithdrawal(w.Root)
		must(err)
		var r struct {
			Withdrawal struct {
				IsCompleted  bool
				ScaledShares []struct{ StrategyAddress, ScaledShares string }
				PayoutShares []struct{ StrategyAddress, Shares string }
			}
		}
		api.graphql(t, `query($r: String!) { withdrawal(withdrawalRoot: $r) { isCompleted
			scaledShares { strategyAddress scaledShares } payoutShares { strategyAddress shares } } }`,
			map[string]any{"r": w.Root.Hex()}, &r)
		got := r.Withdrawal
		if got.IsCompleted == pending {
			t.Errorf("%s withdrawal: isCompleted %v; isPendingWithdrawal says %v", name, got.IsCompleted, pending)
		}
		if len(got.ScaledShares) != len(queued.ScaledShares) || len(got.PayoutShares) != len(payout) {
			t.Errorf("%s withdrawal: scaled %+v, payout %+v; the contracts say %v, %v", name, got.ScaledShares, got.PayoutShares, queued.ScaledShares, payout)
			continue
		}
		for j := range payout {
			if got.ScaledShares[j].StrategyAddress != lower(queued.Strategies[j]) || got.PayoutShares[j].StrategyAddress != lower(queued.Strategies[j]) {
				t.Errorf("%s withdrawal: strategy %d is %s/%s; want %s", name, j, got.ScaledShares[j].StrategyAddress,
					got.PayoutShares[j].StrategyAddress, lower(queued.Strategies[j]))
			}
			eq(name+" withdrawal scaledShares", got.ScaledShares[j].ScaledShares, queued.ScaledShares[j])
			eq(name+" withdrawal payoutShares", got.PayoutShares[j].Shares, payout[j])
		}
	}

	// The slash: the wads and shares it took.
	var sl struct {
		Slashings struct {
			Data []struct {
				OperatorAddress, AvsAddress string
				OperatorSetID               int `json:"operatorSetId"`
				BlockNumber                 int
				Strategies                  []struct{ StrategyAddress, WadSlashed, SharesSlashed, SharesBurned string }
			}
		}
	}
	api.graphql(t, `{ slashings { data { operatorAddress avsAddress operatorSetId blockNumber
		strategies { strategyAddress wadSlashed sharesSlashed sharesBurned } } } }`, nil, &sl)
	before, after := c.ViewAt(h.SlashBlock-1), c.ViewAt(h.SlashBlock)
	if len(sl.Slashings.Data) != 1 || len(sl.Slashings.Data[0].Strategies) != 1 {
		t.Fatalf("slashings %+v; the history slashed once in one strategy", sl.Slashings.Data)
	}
	s := sl.Slashings.Data[0]
	if s.OperatorAddress != lower(c.Operators[0]) || s.AvsAddress != lower(set.Avs) || s.OperatorSetID != int(set.Id) ||
		s.BlockNumber != int(h.SlashBlock) || s.Strategies[0].StrategyAddress != lower(strat) {
		t.Errorf("slashing %+v; want operator %s by %s/%d at block %d", s, lower(c.Operators[0]), lower(set.Avs), set.Id, h.SlashBlock)
	}
	magBefore, err := before.GetMaxMagnitudes(c.Operators[0], strategies)
	must(err)
	magAfter, err := after.GetMaxMagnitudes(c.Operators[0], strategies)
	must(err)
	// wadSlashed is the slashed magnitude as a proportion of the max
	// magnitude before the slash, rounded up (mulWadRoundUp's inverse is
	// exact here).
	slashed := new(big.Int).SetUint64(magBefore[0] - magAfter[0])
	wantWad := new(big.Int).Div(new(big.Int).Mul(slashed, chainWAD()), new(big.Int).SetUint64(magBefore[0]))
	eq("wadSlashed", s.Strategies[0].WadSlashed, wantWad)
	sharesBefore, err := before.GetOperatorShares(c.Operators[0], strategies)
	must(err)
	sharesAfter, err := after.GetOperatorShares(c.Operators[0], strategies)
	must(err)
	eq("sharesSlashed", s.Strategies[0].SharesSlashed, new(big.Int).Sub(sharesBefore[0], sharesAfter[0]))
	burnable, err := c.Bindings.StrategyManager.GetBurnableShares(&bind.CallOpts{}, strat)
	must(err)
	eq("sharesBurned", s.Strategies[0].SharesBurned, burnable)

	// The strategy: totalShares is what its stakers can withdraw, the sum of
	// their getWithdrawableShares. The contract's totalShares also holds the
	// pending withdrawals' shares and the slashed shares still to be burned,
	// and it does not round each staker's figure down: the two differ by
	// those, up to a few wei of rounding.
	var st struct {
		Strategy struct{ TotalShares, DelegatedShares string }
	}
	api.graphql(t, `query($a: Address!) { strategy(address: $a) { totalShares delegatedShares } }`, map[string]any{"a": lower(strat)}, &st)
	stakersShares := new(big.Int)
	for _, s := range c.Stakers {
		w, _, err := v.GetWithdrawableShares(s, strategies)
		must(err)
		stakersShares.Add(stakersShares, w[0])
	}
	eq("strategy totalShares", st.Strategy.TotalShares, stakersShares)
	onChain, err := v.TotalShares()
	must(err)
	_, pendingPayout, err := v.GetQueuedWithdrawal(h.UndelegationWithdrawal.Root)
	must(err)
	rounding := new(big.Int).Sub(new(big.Int).Sub(new(big.Int).Sub(onChain, pendingPayout[0]), burnable), stakersShares)
	if rounding.Sign() < 0 || rounding.Cmp(big.NewInt(1000)) > 0 {
		t.Errorf("strategy totalShares %s + pending withdrawals %s + burnable %s is %s wei short of the contract's totalShares %s",
			stakersShares, pendingPayout[0], burnable, rounding, onChain)
	}
	delegated := new(big.Int)
	for _, op := range c.Operators {
		s, err := v.GetOperatorShares(op, strategies)
		must(err)
		delegated.Add(delegated, s[0])
	}
	eq("strategy delegatedShares", st.Strategy.DelegatedShares, delegated)

	// The totals, as of the newest indexed block: both operators (each
	// delegated to itself, so also a staker), the three stakers and no
	// phantom zero address; the TVL counts the withdrawable shares at the
	// strategy's exchange rate.
	var m struct {
		Metrics struct {
			TotalOperators, TotalStakers int
			TvlStrategies                map[string]float64
		}
	}
	api.graphql(t, `{ metrics { totalOperators totalStakers tvlStrategies } }`, nil, &m)
	operators := 0
	for _, op := range c.Operators {
		d, err := v.DelegatedTo(op)
		must(err)
		if d == op {
			operators++
		}
	}
	if m.Metrics.TotalOperators != operators || m.Metrics.TotalStakers != operators+len(c.Stakers) {
		t.Errorf("metrics: %d operators, %d stakers; the contracts have %d operators delegated to themselves and %d stakers",
			m.Metrics.TotalOperators, m.Metrics.TotalStakers, operators, operators+len(c.Stakers))
	}
	rate, err := c.Bindings.Strategy.SharesToUnderlyingView(&bind.CallOpts{}, chainWAD())
	must(err)
	tvl, _ := new(big.Rat).SetFrac(new(big.Int).Mul(stakersShares, rate), new(big.Int).Mul(chainWAD(), chainWAD())).Float64()
	if got := m.Metrics.TvlStrategies["TEST"]; math.Abs(got-tvl) > tvl*1e-12 {
		t.Errorf("metrics tvlStrategies.TEST = %v; the withdrawable shares are worth %v TEST", got, tvl)
	}

	// REST shows the same: the set, the allocations and the slashing.
	var setPage struct {
		OperatorSetID  int `json:"operatorSetId"`
		TotalOperators int
		Operators      struct {
			Data []struct {
				OperatorAddress string
				Allocations     []struct{ AllocatedShares string }
			}
		}
	}
	api.get(t, fmt.Sprintf("/operator-sets/%s/%d", lower(set.Avs), set.Id), &setPage)
	if setPage.TotalOperators != len(members) || len(setPage.Operators.Data) != len(members) {
		t.Errorf("GET /operator-sets: %+v; the set has members %v", setPage, members)
	}
	var allocs struct {
		Data []struct{ AllocatedShares string }
	}
	api.get(t, "/operators/"+lower(c.Operators[0])+"/allocations", &allocs)
	if len(allocs.Data) != 1 {
		t.Errorf("GET /operators/{address}/allocations: %+v; want one allocation", allocs.Data)
	} else {
		eq("REST allocatedShares", allocs.Data[0].AllocatedShares, allocated[0][0])
	}
	var slashings struct {
		Data []struct{ OperatorAddress string }
		Meta struct{ Total int }
	}
	api.get(t, "/slashings?avsAddress="+lower(c.AVS), &slashings)
	if slashings.Meta.Total != 1 || len(slashings.Data) != 1 || slashings.Data[0].OperatorAddress != lower(c.Operators[0]) {
		t.Errorf("GET /slashings: %+v; the history slashed operator 1 once", slashings)
	}
}

func chainWAD() *big.Int { return new(big.Int).Set(chain.WAD) }

// indexChain runs `stakegraph index` over the network served at rpcURL until
// its cursor reaches block head, then stops it.
func indexChain(t *testing.T, dbURL, rpcURL string, n chain.Network, head uint64) {
	t.Helper()
	strategies := []map[string]any{}
	for _, s := range n.Strategies {
		strategies = append(strategies, map[string]any{"symbol": s.Symbol, "address": s.Address,
			"underlyingToken": s.UnderlyingToken, "decimals": s.Decimals, "kind": string(s.Kind)})
	}
	raw, err := json.Marshal(map[string]any{
		"chainId": n.ChainID, "startBlock": n.StartBlock, "strategies": strategies,
		"contracts": map[string]string{
			"delegationManager": n.Contracts.DelegationManager, "strategyManager": n.Contracts.StrategyManager,
			"eigenPodManager": n.Contracts.EigenPodManager, "avsDirectory": n.Contracts.AVSDirectory,
			"rewardsCoordinator": n.Contracts.RewardsCoordinator, "allocationManager": n.Contracts.AllocationManager,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "contracts.json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"index", "--network", "holesky", "--rpc-url", rpcURL, "--contracts", file,
			"--confirmations", "0", "--poll-interval", "50ms", "--no-metadata", "--prices", filepath.Join(t.TempDir(), "none.json"),
			"--metrics-addr", ""},
			func(k string) string { return map[string]string{"DATABASE_URL": dbURL}[k] }, &stdout, &stderr)
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		cur, ok, err := db.Cursor(context.Background())
		if err == nil && ok && cur.Block >= head {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("index exited with %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index never reached block %d:\n%s", head, stderr.String())
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("index exited with %d:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("index did not stop when interrupted")
	}
	if s := stderr.String(); strings.Contains(s, `"level":"ERROR"`) {
		t.Errorf("index logged errors:\n%s", s)
	}
	// The indexer reads every log of the core contracts: the deployment's
	// and the history's events are all known ones.
	if s := stderr.String(); strings.Contains(s, "an event the decoder does not know") {
		t.Errorf("index met events it does not know:\n%s", s)
	}
}

// apiClient calls a running server's GraphQL and REST endpoints with an API
// key.
type apiClient struct {
	base, key string
}

// graphql runs query with variables and decodes its data into out; the
// test fails on any error.
func (a *apiClient) graphql(t *testing.T, query string, variables map[string]any, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": variables})
	req, _ := http.NewRequest(http.MethodPost, a.base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	var r struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	a.do(t, req, &r)
	if len(r.Errors) > 0 {
		t.Fatalf("GraphQL %s: %+v", query, r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		t.Fatalf("GraphQL %s: %v in %s", query, err, r.Data)
	}
}

// get fetches a REST path and decodes its JSON into out.
func (a *apiClient) get(t *testing.T, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.base+path, nil)
	a.do(t, req, out)
}

func (a *apiClient) do(t *testing.T, req *http.Request, out any) {
	t.Helper()
	req.Header.Set("X-API-Token", a.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s %s: %v in %s", req.Method, req.URL.Path, err, body)
	}
}
