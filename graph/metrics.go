package graph

import (
	"context"
	"math/big"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// Metrics come from the daily snapshots: the latest one holds the current
// values (as of the last refresh) and the ones one and seven days before it
// give the changes. Both snapshot reads are made at most once per request.

func (l *loaders) snapshotTrio(ctx context.Context) (store.SnapshotTrio, error) {
	return l.snapshots.get(func() (store.SnapshotTrio, error) { return l.db.LatestSnapshots(ctx) })
}

func (l *loaders) strategySnapshotTrio(ctx context.Context) (store.StrategySnapshotTrio, error) {
	return l.strategySnapshots.get(func() (store.StrategySnapshotTrio, error) {
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

// restakingValues returns the per-strategy TVL maps of the restaking
// strategies (all but beacon ETH) of one snapshot day.
func restakingValues(snaps []store.StrategySnapshot) (native, eth model.StrategyValues) {
	native, eth = model.StrategyValues{}, model.StrategyValues{}
	for _, s := range snaps {
		if chain.StrategyKind(s.Kind) == chain.KindBeacon {
			continue
		}
		addTo(native, s.Symbol, decimalRat(s.TVL))
		addTo(eth, s.Symbol, decimalRat(s.TVLETH))
	}
	return native, eth
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
