package graph

import (
	"context"
	"sort"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// stakerRewardsFrom derives a staker's rewards from its shares (whose ETH
// values weigh the strategies), the APYs of the AVS its operator serves in
// the strategies it holds, and what it claimed. A strategy's APY is the sum
// of the AVS' APYs in it; an AVS's APY for the staker, and the staker's
// aggregate APY, weigh each strategy's APY by the ETH value of the staker's
// shares in it over the ETH value of all its shares. nativeApy, the APY of
// programmatic incentives, weighs native's APY of each strategy (nil when
// the staker earns no incentives) the same way, and adds to the aggregate.
func stakerRewardsFrom(shares []store.StrategyShares, apys []store.StakerAVSApy, claims []store.ClaimedRewards, native map[string]float64) *model.StakerRewards {
	weight := map[string]float64{}
	total := 0.0
	for _, s := range shares {
		eth := model.DecimalToFloat(s.ETHValue)
		weight[s.StrategyAddress] += eth
		total += eth
	}
	if total > 0 {
		for k := range weight {
			weight[k] /= total
		}
	}
	out := &model.StakerRewards{
		TokenAmounts: make([]*model.ClaimedRewards, len(claims)),
		StrategyApys: []*model.StakerStrategyApy{},
		AvsApys:      []*model.StakerAvsApy{},
	}
	for i, c := range claims {
		out.TokenAmounts[i] = &model.ClaimedRewards{TokenAddress: c.Token, CumulativeAmount: c.Amount}
	}
	byStrategy := map[string]*model.StakerStrategyApy{}
	var avs *model.StakerAvsApy
	for _, r := range apys { // ordered by AVS, then strategy
		apy := model.DecimalToFloat(r.APY)
		if avs == nil || avs.AvsAddress != r.AVS {
			avs = &model.StakerAvsApy{AvsAddress: r.AVS, Strategies: []*model.StakerStrategyApy{}}
			out.AvsApys = append(out.AvsApys, avs)
		}
		avs.Strategies = append(avs.Strategies, &model.StakerStrategyApy{StrategyAddress: r.Strategy, Apy: apy, Tokens: []*model.TokenApy{}})
		avs.Apy += weight[r.Strategy] * apy
		s, ok := byStrategy[r.Strategy]
		if !ok {
			s = &model.StakerStrategyApy{StrategyAddress: r.Strategy, Tokens: []*model.TokenApy{}}
			byStrategy[r.Strategy] = s
			out.StrategyApys = append(out.StrategyApys, s)
		}
		s.Apy += apy
	}
	sort.Slice(out.StrategyApys, func(i, j int) bool { return out.StrategyApys[i].StrategyAddress < out.StrategyApys[j].StrategyAddress })
	for _, s := range out.StrategyApys {
		out.AggregateApy += weight[s.StrategyAddress] * s.Apy
	}
	for strategy, apy := range native {
		out.NativeApy += weight[strategy] * apy
	}
	out.AggregateApy += out.NativeApy
	return out
}

// stakerIncentiveAPYs returns the programmatic incentives' APY of each
// strategy for staker, or nil when it earns none: incentives for all
// earners go to stakers delegated to an operator registered with at least
// one AVS.
func stakerIncentiveAPYs(ctx context.Context, staker *model.Staker) (map[string]float64, error) {
	if staker.OperatorAddress == nil {
		return nil, nil
	}
	op, err := operatorByAddress(ctx, *staker.OperatorAddress)
	if err != nil || op == nil || op.TotalAvs == 0 {
		return nil, err
	}
	pi, err := loadersFor(ctx).programmaticIncentives(ctx)
	if err != nil {
		return nil, err
	}
	return incentiveAPYs(pi), nil
}
