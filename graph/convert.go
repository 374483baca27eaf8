package graph

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// This file converts store rows into GraphQL models: one named converter
// per type. Amounts stay exact until here; Float fields of the schema are
// filled from decimal text at this edge.

func avsFromStore(a *store.AVS) *model.Avs {
	return &model.Avs{
		Address:               a.Address,
		MetadataURL:           a.MetadataURI,
		MetadataName:          a.MetadataName,
		MetadataDescription:   a.MetadataDescription,
		MetadataDiscord:       a.MetadataDiscord,
		MetadataLogo:          a.MetadataLogo,
		MetadataTelegram:      a.MetadataTelegram,
		MetadataWebsite:       a.MetadataWebsite,
		MetadataX:             a.MetadataX,
		TotalStakers:          a.TotalStakers,
		TotalOperators:        a.TotalOperators,
		MaxApy:                a.MaxAPY,
		MaxApyNumber:          model.DecimalToFloat(a.MaxAPY),
		CreatedAtBlock:        strconv.FormatInt(a.CreatedAtBlock, 10),
		UpdatedAtBlock:        strconv.FormatInt(a.UpdatedAtBlock, 10),
		CreatedAt:             a.CreatedAt,
		UpdatedAt:             a.UpdatedAt,
		RestakeableStrategies: nonNil(a.RestakeableStrategies),
	}
}

func avsAddressFromStore(a *store.AVS) *model.AvsAddress {
	return &model.AvsAddress{Address: a.Address, Name: a.MetadataName, Logo: a.MetadataLogo}
}

func curatedMetadataFromStore(m *store.CuratedMetadata) *model.CuratedMetadata {
	return &model.CuratedMetadata{
		MetadataName:         m.Name,
		MetadataDescription:  m.Description,
		MetadataDiscord:      m.Discord,
		MetadataLogo:         m.Logo,
		MetadataTelegram:     m.Telegram,
		MetadataWebsite:      m.Website,
		MetadataX:            m.X,
		MetadataGithub:       m.Github,
		MetadataTokenAddress: m.TokenAddress,
		AvsAddress:           m.AVSAddress,
		Tags:                 nonNil(m.Tags),
		IsVisible:            m.IsVisible,
		IsVerified:           m.IsVerified,
	}
}

func strategyAPYFromStore(a store.StrategyAPY) *model.StrategyApy {
	return &model.StrategyApy{StrategyAddress: a.StrategyAddress, Apy: a.APY}
}

func operatorFromStore(o *store.Operator) *model.Operator {
	return &model.Operator{
		Address:             o.Address,
		MetadataName:        o.MetadataName,
		MetadataDescription: o.MetadataDescription,
		MetadataDiscord:     o.MetadataDiscord,
		MetadataLogo:        o.MetadataLogo,
		MetadataTelegram:    o.MetadataTelegram,
		MetadataWebsite:     o.MetadataWebsite,
		MetadataX:           o.MetadataX,
		TotalStakers:        o.TotalStakers,
		TotalAvs:            o.TotalAVS,
		MaxApy:              o.MaxAPY,
		MaxApyNumber:        model.DecimalToFloat(o.MaxAPY),
		CreatedAtBlock:      strconv.FormatInt(o.CreatedAtBlock, 10),
		UpdatedAtBlock:      strconv.FormatInt(o.UpdatedAtBlock, 10),
		CreatedAt:           o.CreatedAt,
		UpdatedAt:           o.UpdatedAt,
	}
}

func avsOperatorFromStore(x *store.AVSOperator) *model.AvsOperator {
	return &model.AvsOperator{
		Operator:           *operatorFromStore(&x.Operator),
		AvsAddress:         x.AVSAddress,
		IsActive:           x.IsActive,
		RestakedStrategies: nonNil(x.RestakedStrategies),
	}
}

func registrationFromStore(r store.Registration) *model.AvsRegistration {
	return &model.AvsRegistration{
		AvsAddress:         r.AVSAddress,
		OperatorAddress:    r.OperatorAddress,
		IsActive:           r.IsActive,
		RestakedStrategies: nonNil(r.RestakedStrategies),
		CreatedAt:          r.CreatedAt,
		UpdatedAt:          r.UpdatedAt,
	}
}

func stakerFromStore(s *store.Staker) *model.Staker {
	created, updated := int(s.CreatedAtBlock), int(s.UpdatedAtBlock)
	createdAt, updatedAt := s.CreatedAt, s.UpdatedAt
	return &model.Staker{
		Address:         s.Address,
		OperatorAddress: s.OperatorAddress,
		CreatedAtBlock:  &created,
		CreatedAt:       &createdAt,
		UpdatedAtBlock:  &updated,
		UpdatedAt:       &updatedAt,
	}
}

// unseenStaker is the staker at an address the service has never seen.
func unseenStaker(address string) *model.Staker {
	return &model.Staker{Address: address}
}

func strategySharesFromStore(s store.StrategyShares) *model.StrategyShares {
	return &model.StrategyShares{
		StrategyAddress:     s.StrategyAddress,
		Shares:              s.Shares,
		DepositShares:       s.DepositShares,
		WithdrawableShares:  s.WithdrawableShares,
		UnderlyingToken:     s.UnderlyingToken,
		UnderlyingValueText: s.UnderlyingValue,
		ETHValueText:        s.ETHValue,
	}
}

func strategySharesListFromStore(rows []store.StrategyShares) []*model.StrategyShares {
	out := make([]*model.StrategyShares, len(rows))
	for i, r := range rows {
		out[i] = strategySharesFromStore(r)
	}
	return out
}

func strategyFromStore(s *store.StrategyState) *model.Strategy {
	return &model.Strategy{
		Address:            s.Address,
		Symbol:             s.Symbol,
		Kind:               model.StrategyKind(s.Kind),
		UnderlyingToken:    s.UnderlyingToken,
		Decimals:           s.Decimals,
		SharesToUnderlying: s.SharesToUnderlying,
		EthPrice:           model.DecimalToFloat(s.ETHPrice),
		TotalShares:        s.TotalShares,
		DelegatedShares:    s.DelegatedShares,
		Tvl:                model.DecimalToFloat(s.TVL),
		TvlEth:             model.DecimalToFloat(s.TVLETH),
	}
}

func delegationEventFromStore(e store.DelegationEvent) *model.DelegationEvent {
	args := &model.DelegationEventArgs{
		Operator: e.OperatorAddress,
		Staker:   e.StakerAddress,
		Strategy: e.StrategyAddress,
		Shares:   e.Shares,
	}
	if e.Shares != nil {
		n := model.NumberFromDecimal(*e.Shares)
		args.SharesNumber = &n
	}
	return &model.DelegationEvent{
		Tx:              e.TxHash,
		BlockNumber:     int(e.BlockNumber),
		BlockTime:       e.BlockTime,
		LogIndex:        e.LogIndex,
		Type:            model.DelegationEventType(e.Type),
		Args:            args,
		UnderlyingToken: e.UnderlyingToken,
		UnderlyingValue: optionalFloat(e.UnderlyingValue),
		EthValue:        optionalFloat(e.ETHValue),
		StakerAddress:   e.StakerAddress,
	}
}

func withdrawalFromStore(w *store.Withdrawal) (*model.Withdrawal, error) {
	// Nonces count a staker's withdrawals; one beyond int64 is corrupt data.
	nonce, err := strconv.ParseInt(w.Nonce, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("withdrawal %s: nonce %s out of range", w.WithdrawalRoot, w.Nonce)
	}
	return &model.Withdrawal{
		WithdrawalRoot:    w.WithdrawalRoot,
		Nonce:             int(nonce),
		StakerAddress:     w.StakerAddress,
		DelegatedTo:       w.DelegatedTo,
		WithdrawerAddress: w.WithdrawerAddress,
		CreatedAtBlock:    int(w.CreatedAtBlock),
		CreatedAt:         w.CreatedAt,
		UpdatedAtBlock:    int(w.UpdatedAtBlock),
		UpdatedAt:         w.UpdatedAt,
		IsCompleted:       w.IsCompleted,
		IsWithdrawable:    w.IsWithdrawable,
	}, nil
}

func depositFromStore(d store.Deposit) *model.Deposit {
	return &model.Deposit{
		Tx:              d.TxHash,
		BlockNumber:     int(d.BlockNumber),
		BlockTime:       d.BlockTime,
		StakerAddress:   d.StakerAddress,
		TokenAddress:    d.TokenAddress,
		StrategyAddress: d.StrategyAddress,
		Shares:          d.Shares,
	}
}

func avsRewardsFromStore(address string, t *store.AVSRewardsTotals) *model.AvsRewards {
	if t == nil {
		return &model.AvsRewards{Address: address, TotalRewards: "0", RewardTokens: []string{}, RewardStrategies: []string{}}
	}
	return &model.AvsRewards{
		Address:          address,
		TotalRewards:     t.TotalRewards,
		TotalSubmissions: t.TotalSubmissions,
		RewardTokens:     nonNil(t.RewardTokens),
		RewardStrategies: nonNil(t.RewardStrategies),
	}
}

func rewardsSubmissionFromStore(r *store.RewardsSubmission) *model.RewardsSubmission {
	return &model.RewardsSubmission{
		RewardsSubmissionHash: r.Hash,
		SubmissionNonce:       r.Nonce,
		StartTimestamp:        int(r.StartTimestamp),
		Duration:              int(r.Duration),
		TotalAmount:           r.Amount,
		TokenAddress:          r.TokenAddress,
		AvsAddress:            r.AVSAddress,
		IsForAll:              r.ForAll,
		Kind:                  model.RewardsSubmissionKind(r.Kind),
		OperatorSetID:         optionalInt(r.OperatorSetID),
		Submitter:             r.Submitter,
		Description:           r.Description,
		Tx:                    r.TxHash,
		BlockNumber:           int(r.BlockNumber),
		BlockTime:             r.BlockTime,
	}
}

func submissionStrategyFromStore(s store.RewardsSubmissionStrategy) *model.RewardsSubmissionStrategy {
	return &model.RewardsSubmissionStrategy{StrategyAddress: s.StrategyAddress, Multiplier: s.Multiplier, Amount: s.Amount}
}

func submissionOperatorFromStore(o store.RewardsSubmissionOperator) *model.RewardsSubmissionOperator {
	return &model.RewardsSubmissionOperator{
		OperatorAddress: o.OperatorAddress,
		Amount:          o.Amount,
		Strategies:      o.Strategies,
		StrategyAmounts: o.StrategyAmounts,
	}
}

func operatorSetFromStore(s *store.OperatorSet) *model.OperatorSet {
	return &model.OperatorSet{
		AvsAddress:     s.AVSAddress,
		ID:             int(s.ID),
		Strategies:     nonNil([]string(s.Strategies)),
		TotalOperators: s.TotalOperators,
		CreatedAtBlock: int(s.CreatedAtBlock),
		CreatedAt:      s.CreatedAt,
	}
}

func operatorSetMemberFromStore(m store.OperatorSetMember) *model.OperatorSetMember {
	return &model.OperatorSetMember{
		OperatorAddress: m.OperatorAddress,
		AvsAddress:      m.AVSAddress,
		OperatorSetID:   int(m.OperatorSetID),
		IsActive:        m.IsActive,
		CreatedAtBlock:  int(m.CreatedAtBlock),
		CreatedAt:       m.CreatedAt,
		UpdatedAtBlock:  int(m.UpdatedAtBlock),
		UpdatedAt:       m.UpdatedAt,
	}
}

func allocationFromStore(a store.Allocation) *model.Allocation {
	return &model.Allocation{
		OperatorAddress:  a.OperatorAddress,
		AvsAddress:       a.AVSAddress,
		OperatorSetID:    int(a.OperatorSetID),
		StrategyAddress:  a.StrategyAddress,
		Magnitude:        a.Magnitude,
		PendingMagnitude: a.PendingMagnitude,
		EffectBlock:      optionalInt(a.EffectBlock),
		MaxMagnitude:     a.MaxMagnitude,
		AllocatedShares:  a.AllocatedShares,
		UpdatedAtBlock:   int(a.UpdatedAtBlock),
		UpdatedAt:        a.UpdatedAt,
	}
}

func maxMagnitudeFromStore(m store.MaxMagnitude) *model.MaxMagnitude {
	return &model.MaxMagnitude{StrategyAddress: m.StrategyAddress, MaxMagnitude: m.MaxMagnitude}
}

// slashingFromStore converts a slashing; its per-strategy arrays are
// parallel (the store reads them so), and a missing element reads as 0.
func slashingFromStore(s store.Slashing) *model.Slashing {
	at := func(list []string, i int) string {
		if i < len(list) {
			return list[i]
		}
		return "0"
	}
	strategies := make([]*model.SlashedStrategy, len(s.Strategies))
	for i, addr := range s.Strategies {
		strategies[i] = &model.SlashedStrategy{
			StrategyAddress: addr,
			WadSlashed:      at(s.WadsSlashed, i),
			SharesSlashed:   at(s.SharesSlashed, i),
			SharesBurned:    at(s.SharesBurned, i),
		}
	}
	return &model.Slashing{
		OperatorAddress: s.OperatorAddress,
		AvsAddress:      s.AVSAddress,
		OperatorSetID:   int(s.OperatorSetID),
		Strategies:      strategies,
		Description:     s.Description,
		BlockNumber:     int(s.BlockNumber),
		LogIndex:        s.LogIndex,
		TransactionHash: s.TxHash,
		CreatedAt:       s.BlockTime,
	}
}

func strategyRewardTokensFromStore(s store.StrategyRewardTokens) *model.StrategyRewardTokens {
	return &model.StrategyRewardTokens{StrategyAddress: s.StrategyAddress, Tokens: nonNil(s.Tokens)}
}

// tvlFromShares computes the TVL object of a set of shares from their values
// (which the store computed with its value functions). EIGEN counts in the
// per-strategy maps only; beacon ETH is tvlBeaconChain and is left out of
// the maps; unknown strategies count nowhere.
func tvlFromShares(shares []store.StrategyShares) *model.Tvl {
	var beacon, restaking, weth model.DecimalSum
	native, eth := map[string]*model.DecimalSum{}, map[string]*model.DecimalSum{}
	for _, s := range shares {
		var value model.DecimalSum
		value.AddText(s.ETHValue)
		switch chain.StrategyKind(s.Kind) {
		case chain.KindBeacon:
			beacon.Add(&value)
			continue
		case chain.KindLiquid:
			restaking.Add(&value)
			if s.Symbol == "WETH" {
				weth.Add(&value)
			}
		case chain.KindEigen:
		default:
			continue
		}
		sumOf(native, s.Symbol).AddText(s.UnderlyingValue)
		sumOf(eth, s.Symbol).Add(&value)
	}
	var total model.DecimalSum
	total.Add(&beacon)
	total.Add(&restaking)
	return &model.Tvl{
		Tvl:              total.Float64(),
		TvlBeaconChain:   beacon.Float64(),
		TvlRestaking:     restaking.Float64(),
		TvlWeth:          weth.Float64(),
		TvlStrategies:    model.NewStrategyValues(native),
		TvlStrategiesEth: model.NewStrategyValues(eth),
	}
}

// sumOf returns the sum kept under key in m, adding a zero one if there is
// none.
func sumOf(m map[string]*model.DecimalSum, key string) *model.DecimalSum {
	sum, ok := m[key]
	if !ok {
		sum = new(model.DecimalSum)
		m[key] = sum
	}
	return sum
}

// decimalRat parses decimal text from the database; malformed text (which
// the database does not produce) is 0.
func decimalRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return new(big.Rat)
	}
	return r
}

func ratToFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

func optionalInt(n *int64) *int {
	if n == nil {
		return nil
	}
	i := int(*n)
	return &i
}

func optionalFloat(s *string) *float64 {
	if s == nil {
		return nil
	}
	f := model.DecimalToFloat(*s)
	return &f
}

// nonNil returns s, or an empty slice for nil, so that lists are [] not null.
func nonNil[S ~[]E, E any](s S) []E {
	if s == nil {
		return []E{}
	}
	return s
}

func operatorRewardsFromStore(r *store.OperatorRewards) *model.OperatorRewards {
	return &model.OperatorRewards{
		Address:          r.Operator,
		RewardTokens:     r.RewardTokens,
		RewardStrategies: r.RewardStrategies,
	}
}
