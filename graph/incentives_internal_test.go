package graph

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// TestIncentivesFromStore checks the incentive arithmetic on figures
// worked out by hand.
func TestIncentivesFromStore(t *testing.T) {
	e18 := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	tokens := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), e18) }
	pi := &store.ProgrammaticIncentives{
		Token: "0xec53bf9167f50cdeb3ae105f56099aaab9061f83", TokenDecimals: 18, TokenETHPrice: "0.5",
		WeekEnd: time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC), StakerShare: "0.9",
		Groups: []store.IncentiveGroup{
			{Eigen: true, WeeklyAmount: tokens(7000).String(), TVLETH: "1000"},
			{Eigen: false, WeeklyAmount: tokens(14000).String(), TVLETH: "100000"},
		},
		Tokens: []store.IncentiveToken{
			{Address: "0xec53bf9167f50cdeb3ae105f56099aaab9061f83", Decimals: 18, ETHPrice: "0.5", Eigen: true},
			{Address: "0x00000000000000000000000000000000000000b6", Decimals: 6, ETHPrice: "2"},
		},
	}
	got := incentivesFromStore(pi, true, []*big.Int{tokens(200), big.NewInt(5000_000000)})
	// EIGEN: 7000 tokens × 0.5 ETH × 0.9 × 365/7 × 100 / 1000 ETH = 16425%.
	// ETH and LST: 14000 × 0.5 × 0.9 × 365/7 × 100 / 100000 = 328.5%.
	// 200 EIGEN are 100 ETH of 1000: 7000 × 0.9 × 0.1 = 630 tokens a week.
	// 5000 B are 10000 ETH of 100000: 14000 × 0.9 × 0.1 = 1260 a week.
	// Together 1890 tokens = 945 ETH a week on 10100 ETH:
	// 945 × 365/7 × 100 / 10100 = 487.871287128...%.
	want := &model.ProgrammaticIncentives{
		EigenStrategyApy:        "16425",
		EthAndLstStrategiesApy:  "328.5",
		AggregateApy:            ptr("487.87128713"),
		TotalWeeklyRewardsEigen: ptr(tokens(1890).String()),
		WeeklyRewardsEigen:      &model.GroupAmounts{EigenStrategy: tokens(630).String(), EthAndLstStrategies: tokens(1260).String()},
		WeeklyIncentives:        &model.GroupAmounts{EigenStrategy: tokens(7000).String(), EthAndLstStrategies: tokens(14000).String()},
		TokenAddress:            &pi.Token,
		WeekEnd:                 &pi.WeekEnd,
	}
	checkIncentives(t, "holdings", got, want)

	// Without holdings there is nothing to earn and no aggregate.
	pi.Tokens = nil
	got = incentivesFromStore(pi, false, nil)
	want.AggregateApy, want.TotalWeeklyRewardsEigen = nil, nil
	want.WeeklyRewardsEigen = &model.GroupAmounts{EigenStrategy: "0", EthAndLstStrategies: "0"}
	checkIncentives(t, "no holdings", got, want)

	// Holdings worth nothing earn nothing, at an APY of 0.
	got = incentivesFromStore(pi, true, nil)
	want.AggregateApy, want.TotalWeeklyRewardsEigen = ptr("0"), ptr("0")
	checkIncentives(t, "empty holdings", got, want)

	// Before any incentive there are no figures, and no division by zero.
	got = incentivesFromStore(&store.ProgrammaticIncentives{StakerShare: "0.9"}, false, nil)
	checkIncentives(t, "no incentives", got, &model.ProgrammaticIncentives{
		EigenStrategyApy: "0", EthAndLstStrategiesApy: "0",
		WeeklyRewardsEigen: &model.GroupAmounts{EigenStrategy: "0", EthAndLstStrategies: "0"},
		WeeklyIncentives:   &model.GroupAmounts{EigenStrategy: "0", EthAndLstStrategies: "0"},
	})
}

func checkIncentives(t *testing.T, name string, got, want *model.ProgrammaticIncentives) {
	t.Helper()
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	for _, c := range []struct{ field, got, want string }{
		{"eigenStrategyApy", got.EigenStrategyApy, want.EigenStrategyApy},
		{"ethAndLstStrategiesApy", got.EthAndLstStrategiesApy, want.EthAndLstStrategiesApy},
		{"aggregateApy", str(got.AggregateApy), str(want.AggregateApy)},
		{"totalWeeklyRewardsEigen", str(got.TotalWeeklyRewardsEigen), str(want.TotalWeeklyRewardsEigen)},
		{"weeklyRewardsEigen", got.WeeklyRewardsEigen.EigenStrategy + " " + got.WeeklyRewardsEigen.EthAndLstStrategies, ""},
		{"tokenAddress", str(got.TokenAddress), str(want.TokenAddress)},
	} {
		if c.field == "weeklyRewardsEigen" {
			c.want = want.WeeklyRewardsEigen.EigenStrategy + " " + want.WeeklyRewardsEigen.EthAndLstStrategies
		}
		if c.got != c.want {
			t.Errorf("%s: %s = %s, want %s", name, c.field, c.got, c.want)
		}
	}
	if g, w := *got.WeeklyIncentives, *want.WeeklyIncentives; g != w {
		t.Errorf("%s: weeklyIncentives = %+v, want %+v", name, g, w)
	}
	if (got.WeekEnd == nil) != (want.WeekEnd == nil) || (got.WeekEnd != nil && !got.WeekEnd.Equal(*want.WeekEnd)) {
		t.Errorf("%s: weekEnd = %v, want %v", name, got.WeekEnd, want.WeekEnd)
	}
}

// TestStakerNativeAPY checks that a staker's nativeApy weighs each
// strategy's incentive APY by the ETH value of its shares, and that the
// aggregate APY adds it to the AVS rewards' APY.
func TestStakerNativeAPY(t *testing.T) {
	shares := []store.StrategyShares{
		{StrategyAddress: "0xbeac0eeeeeeeeeeeeeeeeeeeeeeeeeeeeeebeac0", ETHValue: "30"},
		{StrategyAddress: "0x00000000000000000000000000000000000000e1", ETHValue: "10"},
		{StrategyAddress: "0x00000000000000000000000000000000000000a1", ETHValue: "60"}, // not incentivised
	}
	apys := []store.StakerAVSApy{{AVS: "0x00000000000000000000000000000000000000f1", Strategy: "0x00000000000000000000000000000000000000a1", APY: "5"}}
	native := map[string]float64{
		"0xbeac0eeeeeeeeeeeeeeeeeeeeeeeeeeeeeebeac0": 2,
		"0x00000000000000000000000000000000000000e1": 40,
		"0x00000000000000000000000000000000000000b2": 7, // not held
	}
	got := stakerRewardsFrom(shares, apys, nil, native)
	// 0.3 × 2 + 0.1 × 40 = 4.6; the AVS adds 0.6 × 5 = 3.
	if math.Abs(got.NativeApy-4.6) > 1e-12 || math.Abs(got.AggregateApy-7.6) > 1e-12 {
		t.Errorf("native %v, aggregate %v; want 4.6 and 7.6", got.NativeApy, got.AggregateApy)
	}
	if got := stakerRewardsFrom(shares, apys, nil, nil); got.NativeApy != 0 || math.Abs(got.AggregateApy-3) > 1e-12 {
		t.Errorf("without incentives: native %v, aggregate %v; want 0 and 3", got.NativeApy, got.AggregateApy)
	}
}
