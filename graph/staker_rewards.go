package graph

import (
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
// programmatic incentives, is not computed and is 0.
func stakerRewardsFrom(shares []store.StrategyShares, apys []store.StakerAVSApy, claims []store.ClaimedRewards) *model.StakerRewards {
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
	return out
}
