package graph

import (
	"context"
	"math/big"
	"sort"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// Metrics come from the daily snapshots: the latest one holds the current
// values (as of the last refresh) and the ones one and seven days before it
// give the changes. Both snapshot reads are made at most once per request.

func (l *loaders) snapshotTrio(ctx context.Context) (store.SnapshotTrio, error) {
	return l.snapshots.get(func() (store.SnapshotTrio, error) {
		if err := l.spend(); err != nil {
			return store.SnapshotTrio{}, err
		}
		return l.db.LatestSnapshots(ctx)
	})
}

func (l *loaders) strategySnapshotTrio(ctx context.Context) (store.StrategySnapshotTrio, error) {
	return l.strategySnapshots.get(func() (store.StrategySnapshotTrio, error) {
		if err := l.spend(); err != nil {
			return store.StrategySnapshotTrio{}, err
		}
		return l.db.LatestStrategySnapshots(ctx, "")
	})
}

// change returns the change from then to now: the difference, and the
// difference relative to then in percent (0 when then is 0).
func change(now, then *big.Rat) *model.Change {
	diff := new(big.Rat).Sub(now, then)
	c := &model.Change{Value: ratToFloat(diff)}
	if then.Sign() != 0 {
		pct := new(big.Rat).Quo(diff, then)
		pct.Mul(pct, big.NewRat(100, 1))
		c.Percent = ratToFloat(pct)
	}
	return c
}

// countChange is change for counts.
func countChange(now, then int) *model.Change {
	return change(big.NewRat(int64(now), 1), big.NewRat(int64(then), 1))
}

// decimalChange is change for decimal text; the empty text of a missing
// snapshot is 0.
func decimalChange(now, then string) *model.Change {
	return change(decimalRat(now), decimalRat(then))
}

// countMetric is a count with its changes from trio.
func countMetric(trio store.SnapshotTrio, count func(store.DailySnapshot) int) *model.CountMetric {
	return &model.CountMetric{
		Value:     count(trio.Latest),
		Change24h: countChange(count(trio.Latest), count(trio.DayBefore)),
		Change7d:  countChange(count(trio.Latest), count(trio.WeekBefore)),
	}
}

// snapshotMetric computes a metric with metric from the request's latest
// daily snapshot and those one and seven days before it.
func snapshotMetric[M any](ctx context.Context, metric func(store.SnapshotTrio) *M) (*M, error) {
	trio, err := snapshots(ctx)
	if err != nil {
		return nil, err
	}
	return metric(trio), nil
}

// totalCount returns the metric of the count that count reads from a
// snapshot, with its changes.
func totalCount(count func(store.DailySnapshot) int) func(store.SnapshotTrio) *model.TotalCount {
	return func(trio store.SnapshotTrio) *model.TotalCount {
		m := countMetric(trio, count)
		return &model.TotalCount{Total: m.Value, Change24h: m.Change24h, Change7d: m.Change7d}
	}
}

// tvlChange returns the metric of the TVL in ETH (decimal text) that tvl
// reads from a snapshot, with its changes.
func tvlChange(tvl func(store.DailySnapshot) string) func(store.SnapshotTrio) *model.TvlChange {
	return func(trio store.SnapshotTrio) *model.TvlChange {
		return &model.TvlChange{
			Tvl:       model.DecimalToFloat(tvl(trio.Latest)),
			Change24h: decimalChange(tvl(trio.Latest), tvl(trio.DayBefore)),
			Change7d:  decimalChange(tvl(trio.Latest), tvl(trio.WeekBefore)),
		}
	}
}

// restakingRatio returns the restaking ratio of trio with its changes, or
// nil while no ETH supply has been recorded.
func restakingRatio(trio store.SnapshotTrio) *model.RestakingRatio {
	if trio.Latest.RestakingRatio == "" {
		return nil
	}
	return &model.RestakingRatio{
		Ratio:     model.DecimalToFloat(trio.Latest.RestakingRatio),
		Change24h: decimalChange(trio.Latest.RestakingRatio, trio.DayBefore.RestakingRatio),
		Change7d:  decimalChange(trio.Latest.RestakingRatio, trio.WeekBefore.RestakingRatio),
		EthSupply: trio.Latest.ETHSupply,
	}
}

// restakingValues returns the per-strategy TVL maps of the restaking
// strategies (all but beacon ETH) of one snapshot day.
func restakingValues(snaps []store.StrategySnapshot) (native, eth model.StrategyValues) {
	nativeValues, ethValues := map[string]*model.DecimalSum{}, map[string]*model.DecimalSum{}
	for _, s := range snaps {
		if chain.StrategyKind(s.Kind) == chain.KindBeacon {
			continue
		}
		sumOf(nativeValues, s.Symbol).AddText(s.TVL)
		sumOf(ethValues, s.Symbol).AddText(s.TVLETH)
	}
	return model.NewStrategyValues(nativeValues), model.NewStrategyValues(ethValues)
}

// strategySnapshot returns the snapshot of strategy among snaps, or the zero
// snapshot when it has none that day.
func strategySnapshot(snaps []store.StrategySnapshot, strategy string) store.StrategySnapshot {
	for _, s := range snaps {
		if s.StrategyAddress == strategy {
			return s
		}
	}
	return store.StrategySnapshot{TVL: "0", TVLETH: "0"}
}

// bucket is one point of a history: the first day of a bucket and its
// value.
type bucket[V int | float64] struct {
	Start time.Time
	Value V
}

// buckets returns the history of the figure that value reads from the
// daily figures days (oldest first, each at the UTC midnight that dayOf
// reads) in consecutive buckets of bucketDays days, the first starting at
// from and the last containing to (both UTC midnights). Cumulative values
// are the figure at the end of each bucket (its last day, or to for the last
// bucket); discrete values are its change within the bucket: the figure at
// its end less the figure the day before it. Days after the latest snapshot
// carry its figures; days before the first have 0.
func buckets[D any, V int | float64](days []D, dayOf func(D) time.Time, value func(D) V, from, to time.Time, bucketDays int, cumulative bool) []bucket[V] {
	// at returns the figure at the end of day t.
	at := func(t time.Time) V {
		i := sort.Search(len(days), func(i int) bool { return dayOf(days[i]).After(t) })
		if i == 0 {
			return 0
		}
		return value(days[i-1])
	}
	var out []bucket[V]
	for first := from; !first.After(to); first = first.AddDate(0, 0, bucketDays) {
		last := first.AddDate(0, 0, bucketDays-1)
		if last.After(to) {
			last = to
		}
		v := at(last)
		if !cumulative {
			v -= at(first.AddDate(0, 0, -1))
		}
		out = append(out, bucket[V]{Start: first, Value: v})
	}
	return out
}

// countDayOf is the day of a store.CountDay.
func countDayOf(d store.CountDay) time.Time { return d.Day }

// countPoints returns the history of the count that count reads from the
// daily figures (see buckets): discrete values are what appeared within a
// bucket.
func countPoints(days []store.CountDay, count func(store.CountDay) int, from, to time.Time, bucketDays int, cumulative bool) []*model.CountPoint {
	bs := buckets(days, countDayOf, count, from, to, bucketDays, cumulative)
	out := make([]*model.CountPoint, len(bs))
	for i, b := range bs {
		out[i] = &model.CountPoint{Timestamp: b.Start, Value: b.Value}
	}
	return out
}

// snapshotCountOf returns what a count series reads from a daily
// snapshot: the same count as countOf.
func snapshotCountOf(series model.CountSeries) func(store.DailySnapshot) int {
	switch series {
	case model.CountSeriesAvs:
		return func(d store.DailySnapshot) int { return d.TotalAVS }
	case model.CountSeriesOperators:
		return func(d store.DailySnapshot) int { return d.TotalOperators }
	case model.CountSeriesWithdrawals:
		return func(d store.DailySnapshot) int { return d.TotalWithdrawals }
	case model.CountSeriesDeposits:
		return func(d store.DailySnapshot) int { return d.TotalDeposits }
	default:
		return func(d store.DailySnapshot) int { return d.TotalStakers }
	}
}

// countOf returns what a count series reads from a day's counts.
func countOf(series model.CountSeries) func(store.CountDay) int {
	switch series {
	case model.CountSeriesAvs:
		return func(d store.CountDay) int { return d.AVS }
	case model.CountSeriesOperators:
		return func(d store.CountDay) int { return d.Operators }
	case model.CountSeriesWithdrawals:
		return func(d store.CountDay) int { return d.Withdrawals }
	case model.CountSeriesDeposits:
		return func(d store.CountDay) int { return d.Deposits }
	default:
		return func(d store.CountDay) int { return d.Stakers }
	}
}

// tvlHistory resolves the history of a TVL in ETH, which tvl reads from
// the daily figures, at the request's time, with the range rules of the
// count histories.
func tvlHistory(ctx context.Context, tvl func(store.CountDay) string, frequency *string, variant *model.CountVariant, startAt, endAt *string) (*model.TvlHistory, error) {
	bs, err := valueBuckets(ctx, func(ctx context.Context) ([]store.CountDay, error) { return loadersFor(ctx).countDays(ctx) },
		countDayOf, tvl, frequency, variant, startAt, endAt)
	if err != nil {
		return nil, err
	}
	return tvlPoints(bs), nil
}

// tvlPoints converts buckets of a TVL.
func tvlPoints(bs []bucket[float64]) *model.TvlHistory {
	out := &model.TvlHistory{Data: make([]*model.TvlPoint, len(bs))}
	for i, b := range bs {
		out.Data[i] = &model.TvlPoint{Timestamp: b.Start, TvlEth: b.Value}
	}
	return out
}

// valueBuckets reads the daily figures with load and returns the buckets
// of the decimal value that value reads from them, at the request's time,
// with the range rules of the count histories.
func valueBuckets[D any](ctx context.Context, load func(context.Context) ([]D, error), dayOf func(D) time.Time, value func(D) string,
	frequency *string, variant *model.CountVariant, startAt, endAt *string,
) ([]bucket[float64], error) {
	from, to, bucketDays, err := historyRange(frequency, startAt, endAt, loadersFor(ctx).now)
	if err != nil {
		return nil, err
	}
	days, err := load(ctx)
	if err != nil {
		return nil, err
	}
	cumulative := variant == nil || *variant == model.CountVariantCumulative
	number := func(d D) float64 { return model.DecimalToFloat(value(d)) }
	return buckets(days, dayOf, number, from, to, bucketDays, cumulative), nil
}

// valueHistory resolves the history of a value in ETH of series.
func valueHistory(ctx context.Context, series model.ValueSeries, frequency *string, variant *model.CountVariant, startAt, endAt *string) (*model.ValueHistory, error) {
	value := func(d store.CountDay) string { return d.DepositsETH }
	if series == model.ValueSeriesWithdrawals {
		value = func(d store.CountDay) string { return d.WithdrawalsETH }
	}
	bs, err := valueBuckets(ctx, func(ctx context.Context) ([]store.CountDay, error) { return loadersFor(ctx).countDays(ctx) },
		countDayOf, value, frequency, variant, startAt, endAt)
	if err != nil {
		return nil, err
	}
	out := &model.ValueHistory{Data: make([]*model.ValuePoint, len(bs))}
	for i, b := range bs {
		out.Data[i] = &model.ValuePoint{Timestamp: b.Start, ValueEth: b.Value}
	}
	return out, nil
}

// strategyTvlHistory resolves the TVL history of one strategy, or nil when
// there is no such strategy.
func strategyTvlHistory(ctx context.Context, strategy string, frequency *string, variant *model.CountVariant, startAt, endAt *string) (*model.TvlHistory, error) {
	s, err := strategyByAddress(ctx, strategy)
	if err != nil || s == nil {
		return nil, err
	}
	bs, err := valueBuckets(ctx, func(ctx context.Context) ([]store.StrategyDay, error) {
		return loadersFor(ctx).strategyDays(ctx, strategy)
	},
		func(d store.StrategyDay) time.Time { return d.Day }, func(d store.StrategyDay) string { return d.TVLETH },
		frequency, variant, startAt, endAt)
	if err != nil {
		return nil, err
	}
	return tvlPoints(bs), nil
}

// operatorHistory resolves the history of one operator's figures, or nil
// when there is no such operator.
func operatorHistory(ctx context.Context, operator string, frequency *string, variant *model.CountVariant, startAt, endAt *string) (*model.OperatorHistory, error) {
	op, err := operatorByAddress(ctx, operator)
	if err != nil || op == nil {
		return nil, err
	}
	l := loadersFor(ctx)
	from, to, bucketDays, err := historyRange(frequency, startAt, endAt, l.now)
	if err != nil {
		return nil, err
	}
	days, err := l.operatorDays(ctx, operator)
	if err != nil {
		return nil, err
	}
	cumulative := variant == nil || *variant == model.CountVariantCumulative
	dayOf := func(d store.OperatorDay) time.Time { return d.Day }
	tvl := buckets(days, dayOf, func(d store.OperatorDay) float64 { return model.DecimalToFloat(d.TVLETH) }, from, to, bucketDays, cumulative)
	stakers := buckets(days, dayOf, func(d store.OperatorDay) int { return d.Stakers }, from, to, bucketDays, cumulative)
	avs := buckets(days, dayOf, func(d store.OperatorDay) int { return d.AVS }, from, to, bucketDays, cumulative)
	out := &model.OperatorHistory{Data: make([]*model.OperatorPoint, len(tvl))}
	for i := range tvl {
		out.Data[i] = &model.OperatorPoint{Timestamp: tvl[i].Start, TvlEth: tvl[i].Value, TotalStakers: stakers[i].Value, TotalAvs: avs[i].Value}
	}
	return out, nil
}

// avsHistory resolves the history of one AVS's figures, or nil when there
// is no such AVS.
func avsHistory(ctx context.Context, avs string, frequency *string, variant *model.CountVariant, startAt, endAt *string) (*model.AvsHistory, error) {
	a, err := avsByAddress(ctx, avs)
	if err != nil || a == nil {
		return nil, err
	}
	l := loadersFor(ctx)
	from, to, bucketDays, err := historyRange(frequency, startAt, endAt, l.now)
	if err != nil {
		return nil, err
	}
	days, err := l.avsDays(ctx, avs)
	if err != nil {
		return nil, err
	}
	cumulative := variant == nil || *variant == model.CountVariantCumulative
	dayOf := func(d store.AVSDay) time.Time { return d.Day }
	tvl := buckets(days, dayOf, func(d store.AVSDay) float64 { return model.DecimalToFloat(d.TVLETH) }, from, to, bucketDays, cumulative)
	stakers := buckets(days, dayOf, func(d store.AVSDay) int { return d.Stakers }, from, to, bucketDays, cumulative)
	operators := buckets(days, dayOf, func(d store.AVSDay) int { return d.Operators }, from, to, bucketDays, cumulative)
	out := &model.AvsHistory{Data: make([]*model.AvsPoint, len(tvl))}
	for i := range tvl {
		out.Data[i] = &model.AvsPoint{Timestamp: tvl[i].Start, TvlEth: tvl[i].Value, TotalStakers: stakers[i].Value, TotalOperators: operators[i].Value}
	}
	return out, nil
}

// countHistory resolves a count history of series at the request's time.
func countHistory(ctx context.Context, series model.CountSeries, frequency *string, variant *model.CountVariant, startAt, endAt *string) (*model.CountHistory, error) {
	l := loadersFor(ctx)
	from, to, bucketDays, err := historyRange(frequency, startAt, endAt, l.now)
	if err != nil {
		return nil, err
	}
	days, err := l.countDays(ctx)
	if err != nil {
		return nil, err
	}
	cumulative := variant == nil || *variant == model.CountVariantCumulative
	return &model.CountHistory{Data: countPoints(days, countOf(series), from, to, bucketDays, cumulative)}, nil
}
