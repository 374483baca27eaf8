package graph

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// feedArgs are the arguments every event feed shares: the transaction, the
// date range (with the rules of eventRange at the request's time) and the
// page.
type feedArgs struct {
	TxHash     string
	Start, End time.Time
	Page       store.Page
}

// feedArgsFrom validates the shared arguments of an event feed.
func feedArgsFrom(ctx context.Context, txHash, startAt, endAt *string, skip, take *int) (feedArgs, error) {
	page, err := pageFrom(skip, take)
	if err != nil {
		return feedArgs{}, err
	}
	start, end, err := eventRange(startAt, endAt, loadersFor(ctx).now)
	if err != nil {
		return feedArgs{}, err
	}
	tx, err := hashFrom("txHash", txHash)
	if err != nil {
		return feedArgs{}, err
	}
	return feedArgs{TxHash: tx, Start: start, End: end, Page: page}, nil
}

// feedPage runs one page of an event feed: the list now, within the
// request's statement budget, and the count when meta.total is selected
// and the page does not give it (see pageTotal), answered from the count
// cache by relation and filter when it holds it. keptTotal says that
// count gives a kept figure rather than the number of the list's rows, so
// that the page never gives the total.
func feedPage[K comparable, R, M any](ctx context.Context, p store.Page, relation string, filter K,
	list func(context.Context, *store.DB) ([]R, error),
	count func(context.Context, *store.DB) (int, error), keptTotal bool,
	convert func(R) (M, error),
) ([]M, *model.PageMeta, error) {
	l := loadersFor(ctx)
	db := l.db
	if err := l.spend(); err != nil {
		return nil, nil, err
	}
	rows, err := list(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	data, err := mapListErr(rows, convert)
	if err != nil {
		return nil, nil, err
	}
	total := cachedCount(l, relation, filter, spending(l, func(ctx context.Context) (int, error) { return count(ctx, db) }))
	if keptTotal {
		return data, countedPageMeta(p, total), nil
	}
	return data, pageMeta(p, len(rows), total), nil
}

// depositEventFromStore converts a deposit to its event form.
func depositEventFromStore(d store.Deposit) (*model.DepositEvent, error) {
	return &model.DepositEvent{
		Tx:          d.TxHash,
		BlockNumber: int(d.BlockNumber),
		BlockTime:   d.BlockTime,
		LogIndex:    d.LogIndex,
		Type:        model.DepositEventTypeDeposit,
		Args: &model.DepositEventArgs{
			Staker:       d.StakerAddress,
			Token:        d.TokenAddress,
			Strategy:     d.StrategyAddress,
			Shares:       d.Shares,
			SharesNumber: model.NumberFromDecimal(d.Shares),
		},
		UnderlyingToken: d.UnderlyingToken,
		UnderlyingValue: optionalFloat(d.UnderlyingValue),
		EthValue:        optionalFloat(d.ETHValue),
	}, nil
}

// withdrawalEventFromStore converts a withdrawal event. The per-strategy
// values are "" where the store does not know them, which becomes null.
func withdrawalEventFromStore(e store.WithdrawalEvent) (*model.WithdrawalEvent, error) {
	nonce, err := strconv.ParseInt(e.Nonce, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("withdrawal %s: nonce %s out of range", e.WithdrawalRoot, e.Nonce)
	}
	n := len(e.Strategies)
	// The token and values were read for every strategy or for none.
	withValues := e.UnderlyingTokens != nil || e.UnderlyingValues != nil || e.ETHValues != nil
	if len(e.Shares) != n || withValues && (len(e.UnderlyingTokens) != n || len(e.UnderlyingValues) != n || len(e.ETHValues) != n) {
		return nil, fmt.Errorf("withdrawal %s: strategy columns of unequal length", e.WithdrawalRoot)
	}
	strategies := make([]*model.WithdrawalEventStrategy, n)
	for i := range e.Strategies {
		s := &model.WithdrawalEventStrategy{Strategy: e.Strategies[i], Shares: e.Shares[i]}
		if withValues {
			s.UnderlyingToken = nonEmpty(e.UnderlyingTokens[i])
			s.UnderlyingValue = optionalFloat(nonEmpty(e.UnderlyingValues[i]))
			s.EthValue = optionalFloat(nonEmpty(e.ETHValues[i]))
		}
		strategies[i] = s
	}
	return &model.WithdrawalEvent{
		Tx:          e.TxHash,
		BlockNumber: int(e.BlockNumber),
		BlockTime:   e.BlockTime,
		LogIndex:    e.LogIndex,
		Type:        model.WithdrawalEventType(e.Type),
		Args: &model.WithdrawalEventArgs{
			Staker:         e.StakerAddress,
			WithdrawalRoot: e.WithdrawalRoot,
			DelegatedTo:    e.DelegatedTo,
			Withdrawer:     e.WithdrawerAddress,
			Nonce:          int(nonce),
			StartBlock:     int(e.StartBlock),
			Strategies:     strategies,
		},
	}, nil
}

// rewardsEventFromStore converts a rewards submission to its event form.
func rewardsEventFromStore(e store.RewardsEvent) (*model.RewardsEvent, error) {
	n := len(e.Strategies)
	if len(e.Multipliers) != n || len(e.Amounts) != n || len(e.AmountETHValues) != n {
		return nil, fmt.Errorf("rewards submission %s: strategy columns of unequal length", e.Hash)
	}
	strategies := make([]*model.RewardsEventStrategy, n)
	for i := range e.Strategies {
		strategies[i] = &model.RewardsEventStrategy{
			Strategy:       e.Strategies[i],
			Multiplier:     e.Multipliers[i],
			Amount:         e.Amounts[i],
			AmountEthValue: optionalFloat(nonEmpty(e.AmountETHValues[i])),
		}
	}
	return &model.RewardsEvent{
		Tx:          e.TxHash,
		BlockNumber: int(e.BlockNumber),
		BlockTime:   e.BlockTime,
		LogIndex:    e.LogIndex,
		Type:        model.RewardsEventTypeRewards,
		Args: &model.RewardsEventArgs{
			Avs:                             e.AVSAddress,
			SubmissionNonce:                 e.Nonce,
			SubmissionNonceNumber:           model.NumberFromDecimal(e.Nonce),
			RewardsSubmissionHash:           e.Hash,
			RewardsSubmissionToken:          e.TokenAddress,
			RewardsSubmissionAmount:         e.Amount,
			RewardsSubmissionStartTimeStamp: int(e.StartTimestamp),
			RewardsSubmissionDuration:       int(e.Duration),
			Strategies:                      strategies,
		},
		EthValue: optionalFloat(nonEmpty(e.ETHValue)),
	}, nil
}

// registrationEventFromStore converts a registration event.
func registrationEventFromStore(e store.RegistrationEvent) (*model.RegistrationEvent, error) {
	status := model.RegistrationEventStatusDeregistered
	if e.Registered {
		status = model.RegistrationEventStatusRegistered
	}
	return &model.RegistrationEvent{
		Tx:          e.TxHash,
		BlockNumber: int(e.BlockNumber),
		BlockTime:   e.BlockTime,
		LogIndex:    e.LogIndex,
		Type:        model.RegistrationEventTypeRegistrationStatus,
		Args: &model.RegistrationEventArgs{
			Operator: e.OperatorAddress,
			Avs:      e.AVSAddress,
			Status:   status,
		},
	}, nil
}

// nonEmpty returns &s, or nil for "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// withErr adapts a converter that cannot fail to feedPage.
func withErr[R, M any](convert func(R) M) func(R) (M, error) {
	return func(r R) (M, error) { return convert(r), nil }
}
