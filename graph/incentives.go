package graph

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
)

// maxIncentiveHoldings bounds the holdings one programmaticIncentives
// request may value.
const maxIncentiveHoldings = 100

// apyPlaces is the number of decimal places of an APY in percent.
const apyPlaces = 8

var (
	// weeksPerYear is 365/7: the APY annualises a week as the rewards
	// APY annualises any duration, over 365 days.
	weeksPerYear = big.NewRat(365, 7)
	maxUint256   = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
)

// programmaticIncentives resolves Query.programmaticIncentives: the APY of
// each group of strategies from the latest incentive week, and what the
// holdings would earn in a week, each in proportion to its ETH value
// within its group.
func programmaticIncentives(ctx context.Context, holdings []*model.TokenHoldingInput) (*model.ProgrammaticIncentives, error) {
	if len(holdings) > maxIncentiveHoldings {
		return nil, fmt.Errorf("%w: holdings: at most %d, got %d", derrors.InvalidArgument, maxIncentiveHoldings, len(holdings))
	}
	tokens := make([]string, len(holdings))
	amounts := make([]*big.Int, len(holdings))
	for i, h := range holdings {
		n, ok := new(big.Int).SetString(h.Amount, 10)
		if !ok || n.Sign() < 0 || n.Cmp(maxUint256) > 0 {
			return nil, fmt.Errorf("%w: holdings: amount %s of %s is not an integer in [0, 2^256)", derrors.InvalidArgument, h.Amount, h.TokenAddress)
		}
		tokens[i], amounts[i] = strings.ToLower(h.TokenAddress), n
	}
	l := loadersFor(ctx)
	if err := l.spend(); err != nil {
		return nil, err
	}
	pi, err := l.db.ProgrammaticIncentives(ctx, l.now, tokens)
	if err != nil {
		return nil, err
	}
	return incentivesFromStore(pi, holdings != nil, amounts), nil
}

// incentiveAPYs returns the programmatic incentives' APY of each strategy
// the latest incentive week names (its group's APY, in percent).
func incentiveAPYs(pi *store.ProgrammaticIncentives) map[string]float64 {
	out := map[string]float64{}
	for _, g := range pi.Groups {
		apy := ratToFloat(groupAPY(pi, decimalRat(g.WeeklyAmount), decimalRat(g.TVLETH)))
		for _, s := range g.Strategies {
			out[s] = apy
		}
	}
	return out
}

// groupAPY is the APY, in percent, of a group whose week pays weekly (in
// the incentive token's smallest unit) on shares worth tvl ETH: its
// stakers' part, valued in ETH, over tvl, over a year of 365 days.
func groupAPY(pi *store.ProgrammaticIncentives, weekly, tvl *big.Rat) *big.Rat {
	return yearlyPercent(pi, new(big.Rat).Mul(weekly, decimalRat(pi.StakerShare)), tvl)
}

// yearlyPercent is the yearly ETH value of weekly (in the incentive
// token's smallest unit) over eth, in percent; 0 without eth.
func yearlyPercent(pi *store.ProgrammaticIncentives, weekly, eth *big.Rat) *big.Rat {
	if eth.Sign() <= 0 {
		return new(big.Rat)
	}
	unit := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(pi.TokenDecimals)), nil))
	r := new(big.Rat).Mul(weekly, decimalRat(pi.TokenETHPrice))
	r.Quo(r, unit).Mul(r, weeksPerYear).Mul(r, big.NewRat(100, 1))
	return r.Quo(r, eth)
}

// incentiveGroup is one group's figures: what its week pays, the ETH
// value of its strategies' shares, and the ETH value of the holdings in
// it.
type incentiveGroup struct {
	weekly, tvl, staked *big.Rat
}

// incentivesFromStore computes the incentives of pi for the holdings
// amounts of pi.Tokens; withHoldings says whether holdings were given at
// all (an empty list is holdings worth nothing).
func incentivesFromStore(pi *store.ProgrammaticIncentives, withHoldings bool, amounts []*big.Int) *model.ProgrammaticIncentives {
	share := decimalRat(pi.StakerShare)
	groups := map[bool]*incentiveGroup{
		true:  {weekly: new(big.Rat), tvl: new(big.Rat), staked: new(big.Rat)},
		false: {weekly: new(big.Rat), tvl: new(big.Rat), staked: new(big.Rat)},
	}
	for _, g := range pi.Groups {
		groups[g.Eigen].weekly = decimalRat(g.WeeklyAmount)
		groups[g.Eigen].tvl = decimalRat(g.TVLETH)
	}
	for i, t := range pi.Tokens {
		unit := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Decimals)), nil))
		eth := new(big.Rat).SetInt(amounts[i])
		eth.Mul(eth, decimalRat(t.ETHPrice)).Quo(eth, unit)
		groups[t.Eigen].staked.Add(groups[t.Eigen].staked, eth)
	}
	// earned is a group's stakers' weekly incentives for its holdings.
	earned := func(g *incentiveGroup) *big.Rat {
		if g.tvl.Sign() <= 0 {
			return new(big.Rat)
		}
		r := new(big.Rat).Mul(g.weekly, share)
		r.Mul(r, g.staked)
		return r.Quo(r, g.tvl)
	}
	eigen, eth := groups[true], groups[false]
	out := &model.ProgrammaticIncentives{
		EigenStrategyApy:       decimalText(groupAPY(pi, eigen.weekly, eigen.tvl), apyPlaces),
		EthAndLstStrategiesApy: decimalText(groupAPY(pi, eth.weekly, eth.tvl), apyPlaces),
		WeeklyIncentives:       &model.GroupAmounts{EigenStrategy: floorText(eigen.weekly), EthAndLstStrategies: floorText(eth.weekly)},
		WeeklyRewardsEigen:     &model.GroupAmounts{EigenStrategy: "0", EthAndLstStrategies: "0"},
	}
	if pi.Token != "" {
		token, end := pi.Token, pi.WeekEnd
		out.TokenAddress, out.WeekEnd = &token, &end
	}
	if withHoldings {
		earnedEigen, earnedETH := earned(eigen), earned(eth)
		total := new(big.Rat).Add(earnedEigen, earnedETH)
		staked := new(big.Rat).Add(eigen.staked, eth.staked)
		out.WeeklyRewardsEigen = &model.GroupAmounts{EigenStrategy: floorText(earnedEigen), EthAndLstStrategies: floorText(earnedETH)}
		totalText, aggregate := floorText(total), decimalText(yearlyPercent(pi, total, staked), apyPlaces)
		out.TotalWeeklyRewardsEigen, out.AggregateApy = &totalText, &aggregate
	}
	return out
}

// floorText writes r rounded down to an integer.
func floorText(r *big.Rat) string {
	return new(big.Int).Quo(r.Num(), r.Denom()).String()
}

// decimalText writes r rounded to places decimal places, without trailing
// zeros.
func decimalText(r *big.Rat, places int) string {
	s := r.FloatString(places)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
