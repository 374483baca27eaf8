package graph

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// loaders are the dataloaders of one request. Every relation of the graph is
// resolved through one of them, so that resolving a field for each element of
// a list costs one SQL statement for the whole list instead of one per
// element. Batch functions query with `= ANY($1)` (or unnest for pages) and
// return results in key order; keys the database does not have get the zero
// value (nil or an empty list).
//
// Paged relations (an AVS's operators, a staker's events, ...) are keyed by
// parent and arguments: one batch runs one statement per distinct set of
// arguments, which is one for the usual query where siblings share them.
type loaders struct {
	db *store.DB
	// entities is the cache shared between requests, nil when nothing is
	// cached.
	entities *EntityCache
	// budget bounds the store reads of the request; nil for no bound.
	budget *statementBudget
	// now is the time the request started, fixed for the whole request so
	// that default date ranges agree between sibling fields (and batch
	// together).
	now time.Time

	avs                  *entityLoader[*store.AVS]
	operators            *entityLoader[*store.Operator]
	stakers              *lazyLoader[string, *store.Staker]
	operatorRewards      *lazyLoader[string, *store.OperatorRewards]
	stakerAVSApys        *lazyLoader[string, []store.StakerAVSApy]
	claimedRewards       *lazyLoader[string, []store.ClaimedRewards]
	strategies           *entityLoader[*store.StrategyState]
	withdrawals          *lazyLoader[string, *store.Withdrawal]
	submissions          *entityLoader[*store.RewardsSubmission]
	curated              *entityLoader[*store.CuratedMetadata]
	strategyAPYs         *entityLoader[[]store.StrategyAPY]
	avsShares            *entityLoader[*shareSet]
	operatorShares       *entityLoader[*shareSet]
	stakerShares         *lazyLoader[string, *shareSet]
	withdrawalShares     *lazyLoader[string, *shareSet]
	registrations        *entityLoader[[]store.Registration]
	rewardTokens         *entityLoader[[]string]
	rewardsTotals        *entityLoader[*store.AVSRewardsTotals]
	submissionStrategies *entityLoader[[]store.RewardsSubmissionStrategy]
	submissionOperators  *entityLoader[[]store.RewardsSubmissionOperator]
	operatorSets         *entityLoader[*store.OperatorSet]
	setStakes            *entityLoader[*shareSet]
	maxMagnitudes        *entityLoader[[]store.MaxMagnitude]
	memberAllocations    *lazyLoader[string, []store.Allocation]
	withdrawalPayouts    *lazyLoader[string, *withdrawalPayout]

	avsOperators           *lazyLoader[pageKey[avsOperatorArgs], []store.AVSOperator]
	avsOperatorCounts      *lazyLoader[pageKey[store.AVSOperatorFilter], int]
	avsStakers             *lazyLoader[pageKey[avsStakerArgs], []store.OperatorStaker]
	avsStakerCounts        *lazyLoader[pageKey[store.StakerFilter], int]
	operatorStakers        *lazyLoader[pageKey[store.Page], []store.OperatorStaker]
	operatorStakerCounts   *lazyLoader[pageKey[struct{}], int]
	stakerEvents           *lazyLoader[pageKey[eventArgs], []store.DelegationEvent]
	stakerEventCounts      *lazyLoader[pageKey[store.DelegationEventFilter], int]
	operatorEvents         *lazyLoader[pageKey[eventArgs], []store.DelegationEvent]
	operatorEventCounts    *lazyLoader[pageKey[store.DelegationEventFilter], int]
	stakerWithdrawals      *lazyLoader[pageKey[withdrawalArgs], []store.StakerWithdrawal]
	stakerWithdrawalCounts *lazyLoader[pageKey[store.WithdrawalStatus], int]
	stakerDeposits         *lazyLoader[pageKey[store.Page], []store.Deposit]
	stakerDepositCounts    *lazyLoader[pageKey[struct{}], int]
	avsSubmissions         *lazyLoader[pageKey[store.Page], []store.RewardsSubmission]

	avsOperatorSets          *lazyLoader[pageKey[store.Page], []store.OperatorSet]
	avsOperatorSetCounts     *lazyLoader[pageKey[struct{}], int]
	setMembers               *lazyLoader[pageKey[memberArgs], []store.OperatorSetMember]
	setMemberCounts          *lazyLoader[pageKey[store.RegistrationStatus], int]
	operatorMemberships      *lazyLoader[pageKey[memberArgs], []store.OperatorSetMember]
	operatorMembershipCounts *lazyLoader[pageKey[store.RegistrationStatus], int]
	operatorAllocations      *lazyLoader[pageKey[store.Page], []store.Allocation]
	operatorAllocationCounts *lazyLoader[pageKey[struct{}], int]
	operatorSlashings        *lazyLoader[pageKey[store.Page], []store.Slashing]
	operatorSlashingCounts   *lazyLoader[pageKey[struct{}], int]
	setSlashings             *lazyLoader[pageKey[store.Page], []store.Slashing]
	setSlashingCounts        *lazyLoader[pageKey[struct{}], int]
	setSubmissions           *lazyLoader[pageKey[store.Page], []store.RewardsSubmission]
	setSubmissionCounts      *lazyLoader[pageKey[struct{}], int]

	snapshots         memo[store.SnapshotTrio]
	incentives        memo[*store.ProgrammaticIncentives]
	strategySnapshots memo[store.StrategySnapshotTrio]
	// stakerRecords is whether the operation selects a field of a staker
	// read from its record (see stakerByAddress).
	stakerRecords memo[bool]
	// withdrawalShareValues is whether the operation selects values of
	// withdrawals' shares (see primeWithdrawalShares).
	withdrawalShareValues memo[bool]

	// countDays reads the daily counts (see countPoints).
	countDays func(ctx context.Context) ([]store.CountDay, error)
	// strategyDays reads one strategy's daily TVLs (nil for an unknown
	// strategy or one without snapshots).
	strategyDays func(ctx context.Context, strategy string) ([]store.StrategyDay, error)
	// operatorDays reads the days on which one operator's figures changed.
	operatorDays func(ctx context.Context, operator string) ([]store.OperatorDay, error)
	// avsDays reads the days on which one AVS's figures changed.
	avsDays func(ctx context.Context, avs string) ([]store.AVSDay, error)
}

// pageKey keys a paged relation: the parent's key and the arguments.
type pageKey[A comparable] struct {
	Parent string
	Args   A
}

// avsOperatorArgs are the arguments of Avs.operators.
type avsOperatorArgs struct {
	Filter store.AVSOperatorFilter
	Sort   store.Sort
	Page   store.Page
}

// avsStakerArgs are the arguments of Avs.stakers.
type avsStakerArgs struct {
	Filter store.StakerFilter
	Page   store.Page
}

// eventArgs are the arguments of the delegation event relations.
type eventArgs struct {
	Filter store.DelegationEventFilter
	Page   store.Page
}

// withdrawalArgs are the arguments of Staker.withdrawals.
type withdrawalArgs struct {
	Status store.WithdrawalStatus
	Page   store.Page
}

// memberArgs are the arguments of OperatorSet.operators and
// Operator.operatorSets.
type memberArgs struct {
	Status store.RegistrationStatus
	Page   store.Page
}

// withdrawalPayout is what a withdrawal pays out: its payout shares with
// their values, and its scaled shares (nil for a withdrawal queued before
// the slashing upgrade).
type withdrawalPayout struct {
	shares *shareSet
	scaled []*model.ScaledShares
}

// newLoaders creates the loaders of a request that started at now. wait is
// how long a loader collects keys before it runs its batch. The loaders of
// the small tables answer from entities what it holds (a nil entities
// caches nothing between requests). Every read of the store spends one
// unit of budget (nil for no bound).
func newLoaders(db *store.DB, now time.Time, wait time.Duration, entities *EntityCache, budget *statementBudget) *loaders {
	l := &loaders{db: db, entities: entities, now: now.UTC().Round(0), budget: budget}
	b := batching{wait: wait, budget: budget}

	l.avs = newEntityLoader(b, entities, "avs", func(ctx context.Context, keys []string) (map[string]*store.AVS, error) {
		rows, err := db.AVSByAddresses(ctx, keys)
		return indexBy(rows, func(r store.AVS) string { return r.Address }), err
	})
	l.operators = newEntityLoader(b, entities, "operators", func(ctx context.Context, keys []string) (map[string]*store.Operator, error) {
		rows, err := db.OperatorsByAddresses(ctx, keys)
		return indexBy(rows, func(r store.Operator) string { return r.Address }), err
	})
	// The whole series is one cached value: a chart of any range and
	// bucket size is then computed without a statement.
	countDays := cachedFetch(entities, "count days", budgeted(budget, func(ctx context.Context, _ []string) (map[string][]store.CountDay, error) {
		days, err := db.CountDays(ctx)
		return map[string][]store.CountDay{"": days}, err
	}))
	l.countDays = func(ctx context.Context) ([]store.CountDay, error) {
		days, err := countDays(ctx, []string{""})
		return days[""], err
	}
	// A strategy's series is cached whole like countDays, by strategy.
	strategyDays := cachedFetch(entities, "strategy days", budgeted(budget, func(ctx context.Context, keys []string) (map[string][]store.StrategyDay, error) {
		rows, err := db.StrategyDays(ctx, keys)
		out := make(map[string][]store.StrategyDay, len(keys))
		for _, r := range rows {
			out[r.Strategy] = append(out[r.Strategy], r)
		}
		return out, err
	}))
	l.strategyDays = func(ctx context.Context, strategy string) ([]store.StrategyDay, error) {
		days, err := strategyDays(ctx, []string{strategy})
		return days[strategy], err
	}
	// An operator's series is derived from its events; it is cached whole
	// like countDays, by operator.
	operatorDays := cachedFetch(entities, "operator days", budgeted(budget, func(ctx context.Context, keys []string) (map[string][]store.OperatorDay, error) {
		rows, err := db.OperatorDays(ctx, keys)
		return groupBy(rows, func(r store.OperatorDay) string { return r.Operator }), err
	}))
	l.operatorDays = func(ctx context.Context, operator string) ([]store.OperatorDay, error) {
		days, err := operatorDays(ctx, []string{operator})
		return days[operator], err
	}
	// An AVS's series is derived from its events, one AVS a statement; it
	// is cached whole by AVS.
	avsDays := cachedFetch(entities, "avs days", budgeted(budget, func(ctx context.Context, keys []string) (map[string][]store.AVSDay, error) {
		out := make(map[string][]store.AVSDay, len(keys))
		for _, k := range keys {
			days, err := db.AVSDays(ctx, k)
			if err != nil {
				return nil, err
			}
			out[k] = days
		}
		return out, nil
	}))
	l.avsDays = func(ctx context.Context, avs string) ([]store.AVSDay, error) {
		days, err := avsDays(ctx, []string{avs})
		return days[avs], err
	}
	l.operatorRewards = newLoader(b, func(ctx context.Context, keys []string) (map[string]*store.OperatorRewards, error) {
		rows, err := db.RewardsByOperators(ctx, keys)
		return indexBy(rows, func(r store.OperatorRewards) string { return r.Operator }), err
	})
	l.stakerAVSApys = newLoader(b, func(ctx context.Context, keys []string) (map[string][]store.StakerAVSApy, error) {
		rows, err := db.AVSApysByStakers(ctx, keys)
		return groupBy(rows, func(r store.StakerAVSApy) string { return r.Staker }), err
	})
	l.claimedRewards = newLoader(b, func(ctx context.Context, keys []string) (map[string][]store.ClaimedRewards, error) {
		rows, err := db.ClaimedRewardsByEarners(ctx, keys)
		return groupBy(rows, func(r store.ClaimedRewards) string { return r.Earner }), err
	})
	l.stakers = newLoader(b, func(ctx context.Context, keys []string) (map[string]*store.Staker, error) {
		rows, err := db.StakersByAddresses(ctx, keys)
		return indexBy(rows, func(r store.Staker) string { return r.Address }), err
	})
	l.strategies = newEntityLoader(b, entities, "strategies", func(ctx context.Context, keys []string) (map[string]*store.StrategyState, error) {
		rows, err := db.StrategiesByAddresses(ctx, keys)
		return indexBy(rows, func(r store.StrategyState) string { return r.Address }), err
	})
	l.withdrawals = newLoader(b, func(ctx context.Context, keys []string) (map[string]*store.Withdrawal, error) {
		rows, err := db.WithdrawalsByRoots(ctx, keys)
		return indexBy(rows, func(r store.Withdrawal) string { return r.WithdrawalRoot }), err
	})
	l.submissions = newEntityLoader(b, entities, "submissions", func(ctx context.Context, keys []string) (map[string]*store.RewardsSubmission, error) {
		rows, err := db.RewardsSubmissionsByHashes(ctx, keys)
		return indexBy(rows, func(r store.RewardsSubmission) string { return r.Hash }), err
	})
	l.curated = newEntityLoader(b, entities, "curated", func(ctx context.Context, keys []string) (map[string]*store.CuratedMetadata, error) {
		rows, err := db.CuratedMetadataByAVS(ctx, keys)
		return indexBy(rows, func(r store.CuratedMetadata) string { return r.AVSAddress }), err
	})
	l.strategyAPYs = newEntityLoader(b, entities, "strategy APYs", func(ctx context.Context, keys []string) (map[string][]store.StrategyAPY, error) {
		rows, err := db.StrategyAPYsByAVS(ctx, keys)
		return groupBy(rows, func(r store.StrategyAPY) string { return r.AVSAddress }), err
	})
	// Stakers and withdrawals are far too many to keep: their shares are
	// read per request.
	l.avsShares = newEntityLoader(b, entities, "AVS shares", shareSets(db.AVSSharesByAVS))
	l.operatorShares = newEntityLoader(b, entities, "operator shares", shareSets(db.OperatorSharesByOperators))
	// A request that shows only the amounts of stakers' shares reads
	// them without their values (see StakerPositionsByStakers).
	l.stakerShares = newLoader(b, shareSets(func(ctx context.Context, stakers []string) ([]store.StrategyShares, error) {
		if selectsShareValues(ctx) {
			return db.StakerSharesByStakers(ctx, stakers)
		}
		return db.StakerPositionsByStakers(ctx, stakers)
	}))
	l.withdrawalShares = newLoader(b, shareSets(db.WithdrawalSharesByRoots))
	l.registrations = newEntityLoader(b, entities, "registrations", func(ctx context.Context, keys []string) (map[string][]store.Registration, error) {
		rows, err := db.RegistrationsByOperators(ctx, keys)
		return groupBy(rows, func(r store.Registration) string { return r.OperatorAddress }), err
	})
	l.rewardTokens = newEntityLoader(b, entities, "reward tokens", func(ctx context.Context, keys []string) (map[string][]string, error) {
		rows, err := db.RewardTokensByStrategies(ctx, keys)
		out := make(map[string][]string, len(rows))
		for _, r := range rows {
			out[r.StrategyAddress] = r.Tokens
		}
		return out, err
	})
	l.rewardsTotals = newEntityLoader(b, entities, "rewards totals", func(ctx context.Context, keys []string) (map[string]*store.AVSRewardsTotals, error) {
		rows, err := db.RewardsTotalsByAVS(ctx, keys)
		return indexBy(rows, func(r store.AVSRewardsTotals) string { return r.AVSAddress }), err
	})
	l.submissionStrategies = newEntityLoader(b, entities, "submission strategies", func(ctx context.Context, keys []string) (map[string][]store.RewardsSubmissionStrategy, error) {
		rows, err := db.StrategiesBySubmissions(ctx, keys)
		return groupBy(rows, func(r store.RewardsSubmissionStrategy) string { return r.Hash }), err
	})

	l.submissionOperators = newEntityLoader(b, entities, "submission operators", func(ctx context.Context, keys []string) (map[string][]store.RewardsSubmissionOperator, error) {
		rows, err := db.OperatorsBySubmissions(ctx, keys)
		return groupBy(rows, func(r store.RewardsSubmissionOperator) string { return r.Hash }), err
	})
	// Operator sets, their stake and the operators' max magnitudes are few
	// and read by key like the AVS: kept.
	l.operatorSets = newEntityLoader(b, entities, "operator sets", func(ctx context.Context, keys []string) (map[string]*store.OperatorSet, error) {
		rows, err := db.OperatorSetsByRefs(ctx, setRefs(keys))
		return indexBy(rows, func(r store.OperatorSet) string { return r.Ref().Key() }), err
	})
	l.setStakes = newEntityLoader(b, entities, "operator set stakes", shareSets(func(ctx context.Context, keys []string) ([]store.StrategyShares, error) {
		return db.AllocatedStakeBySets(ctx, setRefs(keys))
	}))
	l.maxMagnitudes = newEntityLoader(b, entities, "max magnitudes", func(ctx context.Context, keys []string) (map[string][]store.MaxMagnitude, error) {
		rows, err := db.MaxMagnitudesByOperators(ctx, keys)
		return groupBy(rows, func(r store.MaxMagnitude) string { return r.OperatorAddress }), err
	})
	l.memberAllocations = newLoader(b, func(ctx context.Context, keys []string) (map[string][]store.Allocation, error) {
		members := make([]store.MemberRef, 0, len(keys))
		for _, k := range keys {
			if m, ok := memberRef(k); ok {
				members = append(members, m)
			}
		}
		rows, err := db.AllocationsByMembers(ctx, members)
		return groupBy(rows, func(r store.Allocation) string { return r.Key }), err
	})
	l.withdrawalPayouts = newLoader(b, func(ctx context.Context, keys []string) (map[string]*withdrawalPayout, error) {
		rows, err := db.WithdrawalPayoutsByRoots(ctx, keys)
		if err != nil {
			return nil, err
		}
		out := make(map[string]*withdrawalPayout)
		for root, group := range groupBy(rows, func(r store.WithdrawalPayout) string { return r.Owner }) {
			p := &withdrawalPayout{shares: &shareSet{}}
			for _, r := range group {
				p.shares.rows = append(p.shares.rows, r.StrategyShares)
				if r.ScaledShares != nil {
					p.scaled = append(p.scaled, &model.ScaledShares{StrategyAddress: r.StrategyAddress, ScaledShares: *r.ScaledShares})
				}
			}
			out[root] = p
		}
		return out, nil
	})

	l.avsOperators = newPageLoader(b, func(ctx context.Context, avs []string, a avsOperatorArgs) (map[string][]store.AVSOperator, error) {
		rows, err := db.ListAVSOperators(ctx, avs, a.Filter, a.Sort, a.Page)
		return groupBy(rows, func(r store.AVSOperator) string { return r.AVSAddress }), err
	})
	l.avsOperatorCounts = newPageLoader(b, db.CountAVSOperators)
	l.avsStakers = newPageLoader(b, func(ctx context.Context, avs []string, a avsStakerArgs) (map[string][]store.OperatorStaker, error) {
		rows, err := db.ListAVSStakers(ctx, avs, a.Filter, a.Page)
		return groupBy(rows, func(r store.OperatorStaker) string { return r.Key }), err
	})
	l.avsStakerCounts = newPageLoader(b, db.CountAVSStakers)
	l.operatorStakers = newPageLoader(b, func(ctx context.Context, ops []string, p store.Page) (map[string][]store.OperatorStaker, error) {
		rows, err := db.ListOperatorStakers(ctx, ops, p)
		return groupBy(rows, func(r store.OperatorStaker) string { return r.Key }), err
	})
	l.operatorStakerCounts = newPageLoader(b, func(ctx context.Context, ops []string, _ struct{}) (map[string]int, error) {
		return db.CountOperatorStakers(ctx, ops)
	})
	l.stakerEvents = newPageLoader(b, func(ctx context.Context, stakers []string, a eventArgs) (map[string][]store.DelegationEvent, error) {
		rows, err := db.ListDelegationEventsByStakers(ctx, stakers, a.Filter, a.Page)
		return groupBy(rows, func(r store.DelegationEvent) string { return r.Key }), err
	})
	l.stakerEventCounts = newPageLoader(b, db.CountDelegationEventsByStakers)
	l.operatorEvents = newPageLoader(b, func(ctx context.Context, ops []string, a eventArgs) (map[string][]store.DelegationEvent, error) {
		rows, err := db.ListDelegationEventsByOperators(ctx, ops, a.Filter, a.Page)
		return groupBy(rows, func(r store.DelegationEvent) string { return r.Key }), err
	})
	// An operator's event count over a date range is the same for every
	// page of it (a frontend pages through a busy operator's events), and
	// counting a busy operator's month takes tens of milliseconds: kept.
	// The budget is spent by the read, not by the batch, which the cache
	// may answer.
	l.operatorEventCounts = newPageLoader(batching{wait: wait}, func(ctx context.Context, ops []string, f store.DelegationEventFilter) (map[string]int, error) {
		relation := fmt.Sprintf("operator event counts %d %d %q %q %q %q %q",
			f.Start.UnixNano(), f.End.UnixNano(), f.TxHash, f.Type, f.Strategy, f.Operator, f.Staker)
		return cachedFetch(entities, relation, budgeted(budget, func(ctx context.Context, ops []string) (map[string]int, error) {
			return db.CountDelegationEventsByOperators(ctx, ops, f)
		}))(ctx, ops)
	})
	l.stakerWithdrawals = newPageLoader(b, func(ctx context.Context, stakers []string, a withdrawalArgs) (map[string][]store.StakerWithdrawal, error) {
		rows, err := db.ListWithdrawalsByStakers(ctx, stakers, a.Status, a.Page)
		return groupBy(rows, func(r store.StakerWithdrawal) string { return r.Key }), err
	})
	l.stakerWithdrawalCounts = newPageLoader(b, db.CountWithdrawalsByStakers)
	l.stakerDeposits = newPageLoader(b, func(ctx context.Context, stakers []string, p store.Page) (map[string][]store.Deposit, error) {
		rows, err := db.ListDepositsByStakers(ctx, stakers, p)
		return groupBy(rows, func(r store.Deposit) string { return r.Key }), err
	})
	l.stakerDepositCounts = newPageLoader(b, func(ctx context.Context, stakers []string, _ struct{}) (map[string]int, error) {
		return db.CountDepositsByStakers(ctx, stakers)
	})
	l.avsSubmissions = newPageLoader(b, func(ctx context.Context, avs []string, p store.Page) (map[string][]store.RewardsSubmission, error) {
		rows, err := db.ListRewardsSubmissionsByAVS(ctx, avs, p)
		return groupBy(rows, func(r store.RewardsSubmission) string { return r.Key }), err
	})

	l.avsOperatorSets = newPageLoader(b, func(ctx context.Context, avs []string, p store.Page) (map[string][]store.OperatorSet, error) {
		rows, err := db.ListOperatorSetsByAVS(ctx, avs, p)
		out := make(map[string][]store.OperatorSet)
		for _, r := range rows {
			out[r.Key] = append(out[r.Key], r.OperatorSet)
		}
		return out, err
	})
	l.avsOperatorSetCounts = newPageLoader(b, func(ctx context.Context, avs []string, _ struct{}) (map[string]int, error) {
		return db.CountOperatorSetsByAVS(ctx, avs)
	})
	l.setMembers = newPageLoader(b, func(ctx context.Context, sets []string, a memberArgs) (map[string][]store.OperatorSetMember, error) {
		rows, err := db.ListOperatorSetMembers(ctx, setRefs(sets), a.Status, a.Page)
		return groupBy(rows, func(r store.OperatorSetMember) string { return r.Key }), err
	})
	l.setMemberCounts = newPageLoader(b, func(ctx context.Context, sets []string, status store.RegistrationStatus) (map[string]int, error) {
		return db.CountOperatorSetMembers(ctx, setRefs(sets), status)
	})
	l.operatorMemberships = newPageLoader(b, func(ctx context.Context, ops []string, a memberArgs) (map[string][]store.OperatorSetMember, error) {
		rows, err := db.ListOperatorSetMembershipsByOperators(ctx, ops, a.Status, a.Page)
		return groupBy(rows, func(r store.OperatorSetMember) string { return r.Key }), err
	})
	l.operatorMembershipCounts = newPageLoader(b, db.CountOperatorSetMembershipsByOperators)
	l.operatorAllocations = newPageLoader(b, func(ctx context.Context, ops []string, p store.Page) (map[string][]store.Allocation, error) {
		rows, err := db.ListAllocationsByOperators(ctx, ops, p)
		return groupBy(rows, func(r store.Allocation) string { return r.Key }), err
	})
	l.operatorAllocationCounts = newPageLoader(b, func(ctx context.Context, ops []string, _ struct{}) (map[string]int, error) {
		return db.CountAllocationsByOperators(ctx, ops)
	})
	l.operatorSlashings = newPageLoader(b, func(ctx context.Context, ops []string, p store.Page) (map[string][]store.Slashing, error) {
		rows, err := db.ListSlashingsByOperators(ctx, ops, p)
		return groupBy(rows, func(r store.Slashing) string { return r.Key }), err
	})
	l.operatorSlashingCounts = newPageLoader(b, func(ctx context.Context, ops []string, _ struct{}) (map[string]int, error) {
		return db.CountSlashingsByOperators(ctx, ops)
	})
	l.setSlashings = newPageLoader(b, func(ctx context.Context, sets []string, p store.Page) (map[string][]store.Slashing, error) {
		rows, err := db.ListSlashingsBySets(ctx, setRefs(sets), p)
		return groupBy(rows, func(r store.Slashing) string { return r.Key }), err
	})
	l.setSlashingCounts = newPageLoader(b, func(ctx context.Context, sets []string, _ struct{}) (map[string]int, error) {
		return db.CountSlashingsBySets(ctx, setRefs(sets))
	})
	l.setSubmissions = newPageLoader(b, func(ctx context.Context, sets []string, p store.Page) (map[string][]store.RewardsSubmission, error) {
		rows, err := db.ListRewardsSubmissionsBySets(ctx, setRefs(sets), p)
		return groupBy(rows, func(r store.RewardsSubmission) string { return r.Key }), err
	})
	l.setSubmissionCounts = newPageLoader(b, func(ctx context.Context, sets []string, _ struct{}) (map[string]int, error) {
		return db.CountRewardsSubmissionsBySets(ctx, setRefs(sets))
	})
	return l
}

// setRefs parses operator set keys (store.OperatorSetRef.Key), which the
// resolvers make; a key that does not parse names no set and is left out.
func setRefs(keys []string) []store.OperatorSetRef {
	refs := make([]store.OperatorSetRef, 0, len(keys))
	for _, k := range keys {
		if r, ok := store.ParseOperatorSetKey(k); ok {
			refs = append(refs, r)
		}
	}
	return refs
}

// memberRef parses a member key (store.MemberRef.Key).
func memberRef(key string) (store.MemberRef, bool) {
	op, set, ok := strings.Cut(key, "/")
	if !ok {
		return store.MemberRef{}, false
	}
	ref, ok := store.ParseOperatorSetKey(set)
	return store.MemberRef{Operator: op, Set: ref}, ok
}

// batching configures the loaders of a request: how long a loader collects
// keys before it runs its batch, and the statement budget that each read of
// the store spends (nil for no bound).
type batching struct {
	wait   time.Duration
	budget *statementBudget
}

// newLoader returns a loader, made on its first use, whose batch function
// fetches the values of a batch of keys as a map and answers in key order;
// keys missing from the map get the zero value of V. Each fetch spends one
// unit of b's budget.
func newLoader[V any](b batching, fetch func(ctx context.Context, keys []string) (map[string]V, error)) *lazyLoader[string, V] {
	return &lazyLoader[string, V]{build: func() *dataloader.Loader[string, V] { return newBatchedLoader(b, fetch) }}
}

// newBatchedLoader makes the dataloader of newLoader.
func newBatchedLoader[V any](b batching, fetch func(ctx context.Context, keys []string) (map[string]V, error)) *dataloader.Loader[string, V] {
	fetch = budgeted(b.budget, fetch)
	return dataloader.NewBatchedLoader(func(ctx context.Context, keys []string) []*dataloader.Result[V] {
		values, err := fetch(ctx, keys)
		out := make([]*dataloader.Result[V], len(keys))
		for i, k := range keys {
			if err != nil {
				out[i] = &dataloader.Result[V]{Error: err}
			} else {
				out[i] = &dataloader.Result[V]{Data: values[k]}
			}
		}
		return out
	}, dataloader.WithWait[string, V](b.wait), dataloader.WithInputCapacity[string, V](batchInputCapacity))
}

// batchInputCapacity is the buffer of the channel through which a loader's
// calls reach the batch being collected. A call blocks only while the
// buffer is full and the batch's goroutine has not yet taken from it.
// The library's default of 1,000 made each batch allocate 8 KB, which
// pages of at most a few hundred elements never fill.
const batchInputCapacity = 128

// lazyLoader is a dataloader made on its first use. A request uses a few
// of its several dozen loaders; making every one of them up front was 6%
// of the bytes a REST route allocated per response-cache miss.
type lazyLoader[K comparable, V any] struct {
	once   sync.Once
	build  func() *dataloader.Loader[K, V]
	loader *dataloader.Loader[K, V]
}

// get returns the loader, made on the first call.
func (l *lazyLoader[K, V]) get() *dataloader.Loader[K, V] {
	l.once.Do(func() {
		l.loader = l.build()
		l.build = nil
	})
	return l.loader
}

// Load loads key through the batch (see dataloader.Loader.Load).
func (l *lazyLoader[K, V]) Load(ctx context.Context, key K) dataloader.Thunk[V] {
	return l.get().Load(ctx, key)
}

// Prime adds key's value to the loader's cache unless it holds one
// already (see dataloader.Loader.Prime).
func (l *lazyLoader[K, V]) Prime(ctx context.Context, key K, value V) {
	l.get().Prime(ctx, key, value)
}

// entityLoader is a loader of a relation the entity cache keeps. A key the
// cache holds at the current data version is answered at once, without
// waiting for the batch window (a page's strategies, operators and AVS
// are then no round of the request); the other keys are batched, fetched
// and kept for the next requests.
type entityLoader[V any] struct {
	*lazyLoader[string, V]
	entities *entityTable[V] // nil when nothing is cached
	// fetch is the loader's batch fetch: from the cache, then from the
	// database for the keys it does not hold.
	fetch func(ctx context.Context, keys []string) (map[string]V, error)
}

// newEntityLoader creates the loader of relation, whose records fetch reads
// from the database, answered from entities when it holds them (a nil
// entities caches nothing). Only the reads of the database spend b's
// budget.
func newEntityLoader[V any](b batching, entities *EntityCache, relation string, fetch func(ctx context.Context, keys []string) (map[string]V, error)) *entityLoader[V] {
	cached := cachedFetch(entities, relation, budgeted(b.budget, fetch))
	return &entityLoader[V]{lazyLoader: newLoader(batching{wait: b.wait}, cached), entities: entityTableOf[V](entities, relation), fetch: cached}
}

// Load returns the value of key: at once when the entity cache holds it,
// else through the batch.
func (l *entityLoader[V]) Load(ctx context.Context, key string) dataloader.Thunk[V] {
	if v, ok := l.entities.get(key); ok {
		return func() (V, error) { return v.value, nil }
	}
	return l.lazyLoader.Load(ctx, key)
}

// newPageLoader returns a loader, made on its first use, for a relation
// with arguments. Its batch function groups the keys by arguments, fetches
// each group with one call of fetch, and answers in key order. Each call of
// fetch spends one unit of b's budget.
func newPageLoader[A comparable, V any](b batching, fetch func(ctx context.Context, parents []string, args A) (map[string]V, error)) *lazyLoader[pageKey[A], V] {
	return &lazyLoader[pageKey[A], V]{build: func() *dataloader.Loader[pageKey[A], V] { return newBatchedPageLoader(b, fetch) }}
}

// newBatchedPageLoader makes the dataloader of newPageLoader.
func newBatchedPageLoader[A comparable, V any](b batching, fetch func(ctx context.Context, parents []string, args A) (map[string]V, error)) *dataloader.Loader[pageKey[A], V] {
	return dataloader.NewBatchedLoader(func(ctx context.Context, keys []pageKey[A]) []*dataloader.Result[V] {
		groups := make(map[A][]string)
		var order []A
		for _, k := range keys {
			if _, ok := groups[k.Args]; !ok {
				order = append(order, k.Args)
			}
			groups[k.Args] = append(groups[k.Args], k.Parent)
		}
		results := make(map[pageKey[A]]*dataloader.Result[V], len(keys))
		for _, args := range order {
			var values map[string]V
			err := b.budget.spend()
			if err == nil {
				values, err = fetch(ctx, groups[args], args)
			}
			for _, parent := range groups[args] {
				if err != nil {
					results[pageKey[A]{parent, args}] = &dataloader.Result[V]{Error: err}
				} else {
					results[pageKey[A]{parent, args}] = &dataloader.Result[V]{Data: values[parent]}
				}
			}
		}
		out := make([]*dataloader.Result[V], len(keys))
		for i, k := range keys {
			out[i] = results[k]
		}
		return out
	}, dataloader.WithWait[pageKey[A], V](b.wait), dataloader.WithInputCapacity[pageKey[A], V](batchInputCapacity))
}

// shareSet is the shares of one owner (an AVS, operator, staker or
// withdrawal), in the store's order, with the TVL they add up to, computed
// the first time it is asked for. It is not modified once built, except
// for that computation, and may be shared by concurrent requests through
// the EntityCache. A nil *shareSet is an owner without shares.
type shareSet struct {
	rows []store.StrategyShares
	once sync.Once
	tvl  *model.Tvl

	// restaked holds the subsets restakedFor made, by which of rows
	// they hold (see restakedFor).
	mu       sync.Mutex
	restaked map[string]*shareSet
}

// restakedFor returns the shares in the given strategies (an operator's
// restaked strategies for one AVS), made once per subset of the rows. A
// subset is keyed by which rows it holds, a bit per row, rather than by
// the strategies asked for: the registrations of an operator that restake
// the same of its strategies share one subset, and one holding all its
// rows is the set itself. Keyed by the strategies' addresses, the subsets
// of the operators' registrations were a tenth of the live heap after the
// bench's full run (12 MB).
func (s *shareSet) restakedFor(strategies []string) *shareSet {
	if s == nil {
		return nil
	}
	held := make([]byte, (len(s.rows)+7)/8)
	all := true
	for i, r := range s.rows {
		if slices.Contains(strategies, r.StrategyAddress) {
			held[i/8] |= 1 << (i % 8)
		} else {
			all = false
		}
	}
	if all {
		return s
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub, ok := s.restaked[string(held)]; ok {
		return sub
	}
	sub := &shareSet{}
	for i, r := range s.rows {
		if held[i/8]&(1<<(i%8)) != 0 {
			sub.rows = append(sub.rows, r)
		}
	}
	if s.restaked == nil {
		s.restaked = make(map[string]*shareSet)
	}
	s.restaked[string(held)] = sub
	return sub
}

// Rows returns the shares.
func (s *shareSet) Rows() []store.StrategyShares {
	if s == nil {
		return nil
	}
	return s.rows
}

// TVL returns the TVL of the shares.
func (s *shareSet) TVL() *model.Tvl {
	if s == nil {
		return tvlFromShares(nil)
	}
	s.once.Do(func() { s.tvl = tvlFromShares(s.rows) })
	return s.tvl
}

// shareSets turns a store read of the shares of owners into a batch
// function answering a shareSet per owner.
func shareSets(fetch func(context.Context, []string) ([]store.StrategyShares, error)) func(context.Context, []string) (map[string]*shareSet, error) {
	return func(ctx context.Context, keys []string) (map[string]*shareSet, error) {
		rows, err := fetch(ctx, keys)
		if err != nil {
			return nil, err
		}
		out := make(map[string]*shareSet)
		for owner, group := range groupBy(rows, func(r store.StrategyShares) string { return r.Owner }) {
			out[owner] = &shareSet{rows: group}
		}
		return out, nil
	}
}

// indexBy maps each row's key to (a copy of) the row.
func indexBy[T any](rows []T, key func(T) string) map[string]*T {
	out := make(map[string]*T, len(rows))
	for i := range rows {
		out[key(rows[i])] = &rows[i]
	}
	return out
}

// groupBy groups rows by key, keeping their order within each group. The
// store returns a batch ordered by its key, so each group is a run of rows
// and is kept as a slice of rows itself (capped, so that appending to one
// group cannot overwrite the next) instead of a copy: copying the rows of
// the share batches one by one into growing slices had been 8% of the
// bytes an uncached /avs/{address}/stakers request allocated. A key whose
// rows are not all in one run has its later rows appended to a copy.
func groupBy[T any](rows []T, key func(T) string) map[string][]T {
	out := make(map[string][]T)
	for i := 0; i < len(rows); {
		k := key(rows[i])
		j := i + 1
		for j < len(rows) && key(rows[j]) == k {
			j++
		}
		if prev, ok := out[k]; ok {
			out[k] = append(prev, rows[i:j]...)
		} else {
			out[k] = rows[i:j:j]
		}
		i = j
	}
	return out
}

// memo is a value computed at most once per request.
type memo[T any] struct {
	once  sync.Once
	value T
	err   error
}

// get returns the value, computing it with compute the first time.
func (m *memo[T]) get(compute func() (T, error)) (T, error) {
	m.once.Do(func() { m.value, m.err = compute() })
	return m.value, m.err
}

type loadersKey struct{}

// programmaticIncentives reads the programmatic incentives as of the
// request's time, once per request.
func (l *loaders) programmaticIncentives(ctx context.Context) (*store.ProgrammaticIncentives, error) {
	return l.incentives.get(func() (*store.ProgrammaticIncentives, error) {
		if err := l.spend(); err != nil {
			return nil, err
		}
		return l.db.ProgrammaticIncentives(ctx, l.now, nil)
	})
}

// spend records one read of the store that a resolver makes itself,
// outside the loaders. It returns an error when the request's statement
// budget does not allow it.
func (l *loaders) spend() error { return l.budget.spend() }

// withLoaders returns ctx carrying l.
func withLoaders(ctx context.Context, l *loaders) context.Context {
	return context.WithValue(ctx, loadersKey{}, l)
}

// loadersFor returns the loaders of the request. NewHandler and Executor
// attach them to every request, so their absence is a programming error.
func loadersFor(ctx context.Context) *loaders {
	l, ok := ctx.Value(loadersKey{}).(*loaders)
	if !ok {
		panic("graph: no dataloaders in the request context")
	}
	return l
}
