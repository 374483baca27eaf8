package demo

import (
	"fmt"
	"math/big"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
)

var testNow = time.Date(2025, 6, 1, 12, 34, 56, 0, time.UTC)

// demoRun is a generated world with the generator that made it.
type demoRun struct {
	w *World
	g *generator
}

// demoWorld generates the demo world for seed 1 once per test binary.
var demoWorld = sync.OnceValues(func() (demoRun, error) {
	w, g, err := generate(Options{Now: testNow, Seed: 1}, DemoScale)
	return demoRun{w, g}, err
})

func mustDemo(t *testing.T) *World {
	t.Helper()
	run, err := demoWorld()
	if err != nil {
		t.Fatal(err)
	}
	return run.w
}

// mustDemoGenerator returns the generator of the demo world in its final
// state.
func mustDemoGenerator(t *testing.T) *generator {
	t.Helper()
	run, err := demoWorld()
	if err != nil {
		t.Fatal(err)
	}
	return run.g
}

// firstDifference names the first part of two worlds that differs, or
// returns "" when they are equal.
func firstDifference(a, b *World) string {
	if !reflect.DeepEqual(a.Reference, b.Reference) {
		return "reference data"
	}
	if len(a.Batches) != len(b.Batches) {
		return fmt.Sprintf("%d batches against %d", len(a.Batches), len(b.Batches))
	}
	for i := range a.Batches {
		if !reflect.DeepEqual(a.Batches[i], b.Batches[i]) {
			return fmt.Sprintf("batch %d", i)
		}
	}
	if !reflect.DeepEqual(a, b) {
		return "the head or the worlds' other fields"
	}
	return ""
}

// TestGenerateIsDeterministic generates the demo world twice with the
// same options and compares them whole. That the seed and the clock
// matter is checked on small worlds, which the same code generates.
func TestGenerateIsDeterministic(t *testing.T) {
	a := mustDemo(t)
	b, err := Generate(Options{Now: testNow, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := firstDifference(a, b); d != "" {
		t.Fatalf("same options gave different worlds, first in %s", d)
	}

	sc := DemoScale
	sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions, sc.SlashingDays = 40, 6, 30, 800, 40, 10
	small := func(o Options) *World {
		t.Helper()
		w, err := GenerateScale(o, sc)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	one := small(Options{Now: testNow, Seed: 1})
	if d := firstDifference(one, small(Options{Now: testNow, Seed: 1})); d != "" {
		t.Fatalf("same options gave different small worlds, first in %s", d)
	}
	if firstDifference(one, small(Options{Now: testNow, Seed: 2})) == "" {
		t.Fatal("seeds 1 and 2 gave the same world")
	}
	later := small(Options{Now: testNow.Add(time.Hour), Seed: 1})
	if later.Head.BlockNumber != one.Head.BlockNumber+300 {
		t.Fatalf("an hour later the head moved from %d to %d, want +300", one.Head.BlockNumber, later.Head.BlockNumber)
	}
}

func TestGenerateIsConsistent(t *testing.T) {
	w := mustDemo(t)
	net := chain.Networks["mainnet"]
	r := newReplay(net, w)
	since := testNow.Add(-7 * 24 * time.Hour)
	for i := range w.Batches {
		if err := r.apply(&w.Batches[i], clocks["mainnet"], since); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if err := r.finish(); err != nil {
		t.Fatal(err)
	}

	// The head is the last block at or before Now.
	if w.Head.BlockTime.After(testNow) || testNow.Sub(w.Head.BlockTime) >= slot {
		t.Errorf("head at %s for now %s", w.Head.BlockTime, testNow)
	}

	// All four delegation types, and every other kind, in the last 7 days.
	for _, typ := range []chain.DelegationType{chain.Delegation, chain.Undelegation, chain.SharesIncreased, chain.SharesDecreased} {
		if n := r.recentTypes[typ]; n < 20 {
			t.Errorf("only %d %s events in the last 7 days", n, typ)
		}
	}
	for _, kind := range []string{"deposit", "pod", "queued", "completed", "rewards", "registration"} {
		if n := r.recentOther[kind]; n < 3 {
			t.Errorf("only %d %s events in the last 7 days", n, kind)
		}
	}
	if r.redelegated < 100 {
		t.Errorf("only %d redelegations to another operator", r.redelegated)
	}

	// Withdrawals in all three states at Now.
	head := w.Head.BlockNumber
	var completed, withdrawable, waiting int
	for _, q := range r.queued {
		switch {
		case q.completed:
			completed++
		case q.start+MinWithdrawalDelayBlocks <= head:
			withdrawable++
		default:
			waiting++
		}
	}
	if completed < 1000 || withdrawable < 100 || waiting < 100 {
		t.Errorf("withdrawals: %d completed, %d withdrawable, %d not yet withdrawable", completed, withdrawable, waiting)
	}

	// Rewards: several tokens, many AVS, a few for all.
	if len(r.rewardToken) < 4 || len(r.rewardAVS) < 15 || r.forAll < 3 {
		t.Errorf("rewards: %d tokens, %d AVS, %d for all", len(r.rewardToken), len(r.rewardAVS), r.forAll)
	}
	t.Logf("withdrawals: %d completed, %d withdrawable, %d waiting; rewards from %d AVS in %d tokens, %d for all; %d redelegations",
		completed, withdrawable, waiting, len(r.rewardAVS), len(r.rewardToken), r.forAll, r.redelegated)
	checkSlashingEra(t, w, r)
}

// checkSlashingEra checks that the demo's slashing era holds every kind of
// slashing-era activity.
func checkSlashingEra(t *testing.T, w *World, r *replay) {
	t.Helper()
	st := r.stats
	t.Logf("slashing era from block %d: %+v", w.SlashingUpgrade, st)
	if w.SlashingUpgrade == 0 || w.SlashingUpgrade != w.Batches[DemoScale.Days-DemoScale.SlashingDays].Head.BlockNumber-BlocksPerDay+1 {
		t.Errorf("slashing upgrade at block %d", w.SlashingUpgrade)
	}
	within := func(what string, got, lo, hi int) {
		t.Helper()
		if got < lo || got > hi {
			t.Errorf("%s = %d, want %d..%d", what, got, lo, hi)
		}
	}
	within("operator sets", st.sets, 10, 40)
	within("set memberships", st.memberships, 100, 2000)
	within("operators leaving sets", st.leaves, 1, 100)
	within("allocations", st.allocations, 100, 3000)
	within("deallocations", st.deallocations, 10, 1000)
	within("deallocations pending at the head", st.pendingDeallocations, 1, 1000)
	within("slashes", st.slashes, 3, 12)
	within("beacon slashing factor decreases", st.beaconDecreases, 50, 5000)
	within("scaled withdrawals", st.scaledWithdrawals, 500, 10_000)
	within("completions as shares after the upgrade", st.payouts, 10, 5000)
	within("positions whose deposit and withdrawable shares differ", st.diverging, 50, 20_000)
	within("operator-directed AVS submissions", st.operatorDirected, 3, 100)
	within("operator set submissions", st.operatorSetRewards, 3, 100)
	within("rewards for all earners", st.forAllEarners, 2, 10)
	for _, name := range []string{"DelegationApproverUpdated", "OperatorAVSSplitBipsSet", "DistributionRootSubmitted", "RewardsClaimed"} {
		within(name+" events", st.protocol[name], 3, 2000)
	}
}

func TestGenerateSize(t *testing.T) {
	w := mustDemo(t)
	c := w.Counts()
	t.Log(c)
	within := func(what string, got, lo, hi int) {
		t.Helper()
		if got < lo || got > hi {
			t.Errorf("%s = %d, want %d..%d", what, got, lo, hi)
		}
	}
	within("operators", c.OperatorsRegistered, 400, 400)
	within("total events", c.Total, 200_000, 450_000)
	within("delegation events", c.Delegations, c.Total/3, c.Total)
	within("withdrawals queued", c.WithdrawalsQueued, 8_000, 40_000)
	within("rewards submissions", c.RewardsSubmissions, 500, 1_000)
	within("registrations", c.Registrations, 1_000, 10_000)
	if c.Delegations < c.Deposits || c.Delegations < c.PodShares {
		t.Errorf("delegation events are not the largest share: %v", c)
	}

	r := newReplay(chain.Networks["mainnet"], w)
	for i := range w.Batches {
		if err := r.apply(&w.Batches[i], clocks["mainnet"], testNow); err != nil {
			t.Fatal(err)
		}
	}
	within("AVS", len(r.avs), 40, 40)
	within("stakers", len(r.stakersSeen), 19_000, 20_500)

	// Total value in ETH of what stakers hold, excluding EIGEN: millions.
	prices := map[string]*big.Int{}
	for _, s := range w.Strategies {
		if s.Kind == chain.KindEigen {
			continue
		}
		v := new(big.Int).Mul(s.SharesToUnderlying, big.NewInt(newStrategyInfo(s.Strategy).priceMicro))
		prices[s.Address] = v // wei value per 1e18 shares × 1e6
	}
	tvl := new(big.Int)
	for _, m := range r.balances {
		for strat, v := range m {
			if p := prices[strat]; p != nil {
				tvl.Add(tvl, new(big.Int).Mul(v, p))
			}
		}
	}
	tvl.Quo(tvl, pow10(42)) // shares × rate/1e18 × price/1e6, in whole ETH
	t.Logf("TVL excluding EIGEN: %s ETH", tvl)
	if tvl.Cmp(big.NewInt(2_000_000)) < 0 || tvl.Cmp(big.NewInt(15_000_000)) > 0 {
		t.Errorf("TVL %s ETH, want millions", tvl)
	}
}

func TestReferenceData(t *testing.T) {
	w := mustDemo(t)
	tokens := map[string]bool{}
	for _, tok := range w.Tokens {
		if err := checkAddress("token", tok.Address); err != nil {
			t.Error(err)
		}
		tokens[tok.Address] = true
	}
	for _, want := range []string{mainnetWETH, mainnetEIGEN} {
		if !tokens[want] {
			t.Errorf("token %s missing", want)
		}
	}
	if len(w.Strategies) != len(chain.Networks["mainnet"].Strategies) {
		t.Errorf("%d strategies", len(w.Strategies))
	}
	for _, s := range w.Strategies {
		if s.UnderlyingToken != "" && !tokens[s.UnderlyingToken] {
			t.Errorf("strategy %s underlying %s has no token row", s.Symbol, s.UnderlyingToken)
		}
		rate, _ := new(big.Float).SetInt(s.SharesToUnderlying).Float64()
		if rate < 0.99e18 || rate > 1.2e18 {
			t.Errorf("strategy %s rate %s", s.Symbol, s.SharesToUnderlying)
		}
	}
	var visible, hidden, verified int
	for _, m := range w.Curated {
		switch {
		case !m.IsVisible:
			hidden++
		case m.IsVerified:
			verified++
			visible++
		default:
			visible++
		}
	}
	if hidden < 2 || visible < 12 || verified < 5 || len(w.Curated) > 30 {
		t.Errorf("curated metadata: %d visible (%d verified), %d hidden", visible, verified, hidden)
	}
}

func TestGenerateHolesky(t *testing.T) {
	sc := DemoScale
	sc.Stakers, sc.Operators, sc.AVS, sc.RewardsSubmissions = 500, 30, 6, 40
	opts := Options{Now: testNow, Seed: 7, Network: chain.Networks["holesky"]}
	w, err := GenerateScale(opts, sc)
	if err != nil {
		t.Fatal(err)
	}
	r := newReplay(opts.Network, w)
	for i := range w.Batches {
		if err := r.apply(&w.Batches[i], clocks["holesky"], testNow); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if err := r.finish(); err != nil {
		t.Fatal(err)
	}
	if w.Head.BlockNumber < 4_000_000 || w.Head.BlockNumber > 5_000_000 {
		t.Errorf("holesky head %d", w.Head.BlockNumber)
	}
}

// TestGenerateSmallSlashingEra replays the world TestSeedBenchMatchesApplyBatch
// loads: a small world's 30 days of slashing era still hold operator sets,
// allocations, slashes and scaled withdrawals.
func TestGenerateSmallSlashingEra(t *testing.T) {
	sc := BenchScale
	sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 90, 8, 40, 3_000, 150
	w, err := GenerateScale(Options{Now: testNow, Seed: 6}, sc)
	if err != nil {
		t.Fatal(err)
	}
	r := newReplay(chain.Networks["mainnet"], w)
	for i := range w.Batches {
		if err := r.apply(&w.Batches[i], clocks["mainnet"], testNow); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if err := r.finish(); err != nil {
		t.Fatal(err)
	}
	st := r.stats
	t.Logf("%+v", st)
	if st.sets == 0 || st.allocations == 0 || st.slashes == 0 || st.scaledWithdrawals == 0 || st.diverging == 0 || st.scalingFactors == 0 {
		t.Errorf("slashing era without every kind of activity: %+v", st)
	}
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	if _, err := Generate(Options{Seed: 1}); err == nil {
		t.Error("zero Now accepted")
	}
	if _, err := Generate(Options{Now: time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC), Seed: 1, Network: chain.Networks["holesky"]}); err == nil {
		t.Error("history before holesky genesis accepted")
	}
	sc := DemoScale
	sc.Stakers = 0
	if _, err := GenerateScale(Options{Now: testNow}, sc); err == nil {
		t.Error("scale without stakers accepted")
	}
	sc = DemoScale
	sc.SlashPPM = -1
	if _, err := GenerateScale(Options{Now: testNow}, sc); err == nil {
		t.Error("negative slash rate accepted")
	}
}
