package graph

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/demo/demotest"
	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// countHistorySQL computes a count history in SQL over the daily
// snapshots, the oracle of TestCountPointsMatchSQL: %[1]s is the count's
// column, %[2]s a bucket's discrete value. For stakers this was the
// service's own statement before the history was computed from the cached
// daily counts.
const countHistorySQL = `
	WITH buckets AS (
		SELECT g::date AS first_day,
		       LEAST(g::date + ($3::int - 1), $2::date) AS last_day
		FROM generate_series($1::date, $2::date, make_interval(days => $3::int)) AS g
	)
	SELECT b.first_day::timestamp AT TIME ZONE 'UTC' AS start,
	       CASE WHEN $4 THEN COALESCE((
	           SELECT d.%[1]s FROM daily_snapshots d
	           WHERE d.day <= b.last_day
	           ORDER BY d.day DESC LIMIT 1), 0)
	       ELSE %[2]s END AS value
	FROM buckets b
	ORDER BY b.first_day`

// countAtSQL is the count of column %s at the end of day %s, 0 before the
// first snapshot.
const countAtSQL = `COALESCE((SELECT d.%s FROM daily_snapshots d WHERE d.day <= %s ORDER BY d.day DESC LIMIT 1), 0)`

// Every count series, range, bucket size and variant gives the points SQL
// gives over the same snapshots: ranges before the first snapshot, across
// it, inside the history and past the latest snapshot, buckets that do not
// divide the range. The stakers' discrete values are checked against the
// new stakers the snapshots record per day.
func TestCountPointsMatchSQL(t *testing.T) {
	ctx := context.Background()
	db := demotest.DB(t)
	days, err := db.CountDays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) < 30 {
		t.Fatalf("%d daily snapshots: the demo data should span months", len(days))
	}
	first, last := days[0].Day.UTC(), days[len(days)-1].Day.UTC()
	ranges := [][2]time.Time{
		{first.AddDate(0, 0, -40), first.AddDate(0, 0, -10)},
		{first.AddDate(0, 0, -5), first.AddDate(0, 0, 20)},
		{first.AddDate(0, 0, 17), first.AddDate(0, 0, 17)},
		{first.AddDate(0, 0, 3), last.AddDate(0, 0, -2)},
		{last.AddDate(0, 0, -30), last.AddDate(0, 0, 12)},
		{last.AddDate(0, 0, 5), last.AddDate(0, 0, 40)},
	}
	difference := func(column string) string {
		return fmt.Sprintf(countAtSQL, column, "b.last_day") + " - " + fmt.Sprintf(countAtSQL, column, "b.first_day - 1")
	}
	for series, sql := range map[model.CountSeries]string{
		model.CountSeriesStakers: fmt.Sprintf(countHistorySQL, "total_stakers",
			"COALESCE((SELECT sum(d.new_stakers) FROM daily_snapshots d WHERE d.day BETWEEN b.first_day AND b.last_day), 0)"),
		model.CountSeriesAvs:         fmt.Sprintf(countHistorySQL, "total_avs", difference("total_avs")),
		model.CountSeriesOperators:   fmt.Sprintf(countHistorySQL, "total_operators", difference("total_operators")),
		model.CountSeriesWithdrawals: fmt.Sprintf(countHistorySQL, "total_withdrawals", difference("total_withdrawals")),
	} {
		nonzero := false
		for _, r := range ranges {
			for _, bucket := range []int{1, 7} {
				for _, cumulative := range []bool{true, false} {
					name := fmt.Sprintf("%s %s..%s by %d, cumulative %v", series, r[0].Format(time.DateOnly), r[1].Format(time.DateOnly), bucket, cumulative)
					var want []struct {
						Start time.Time `db:"start"`
						Value int       `db:"value"`
					}
					if err := storetest.SQL(t, db).SelectContext(ctx, &want, sql,
						r[0].Format(time.DateOnly), r[1].Format(time.DateOnly), bucket, cumulative); err != nil {
						t.Fatal(err)
					}
					got := countPoints(days, countOf(series), r[0], r[1], bucket, cumulative)
					if len(got) != len(want) {
						t.Errorf("%s: %d points, want %d", name, len(got), len(want))
						continue
					}
					for i := range got {
						if !got[i].Timestamp.Equal(want[i].Start) || got[i].Value != want[i].Value {
							t.Errorf("%s: point %d is %s %d, want %s %d", name, i, got[i].Timestamp, got[i].Value, want[i].Start, want[i].Value)
						}
						nonzero = nonzero || got[i].Value != 0
					}
				}
			}
		}
		if !nonzero {
			t.Errorf("%s: every point is 0", series)
		}
	}
}

// The history is read once per data version, then answered from memory.
func TestCountDaysCached(t *testing.T) {
	db := demotest.DB(t)
	version := int64(1)
	entities := NewEntityCache(func() (int64, bool) { return version, true }, 0)
	ctx := context.Background()
	read := func() []store.CountDay {
		l := newLoaders(db, demotest.Now, 0, entities, nil)
		days, err := l.countDays(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return days
	}
	a := read()
	if len(a) == 0 {
		t.Fatal("no daily counts")
	}
	if _, err := storetest.SQL(t, db).ExecContext(ctx, `DELETE FROM daily_snapshots`); err != nil {
		t.Fatal(err)
	}
	if b := read(); len(b) != len(a) {
		t.Errorf("same version: %d days, want the cached %d", len(b), len(a))
	}
	version++
	if c := read(); len(c) != 0 {
		t.Errorf("new version: %d days, want none", len(c))
	}
}
