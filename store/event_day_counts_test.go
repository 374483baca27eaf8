package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// dayCountRanges returns time ranges that cover every way the feed
// totals combine day counts and row counts: whole days, partial days at
// either edge (counted from either midnight: parts of a day under, at
// and over half of it), a range within one day, open sides and an empty
// range.
func dayCountRanges(first, last time.Time) [][2]time.Time {
	const day = 24 * time.Hour
	mid := first.Add(last.Sub(first) / 2).Truncate(day)
	return [][2]time.Time{
		{first, last},
		{first.Add(-time.Hour), last.Add(time.Hour)},
		{mid, mid.Add(7 * day)},
		{mid, mid.Add(7*day - time.Microsecond)},
		{mid.Add(90 * time.Minute), mid.Add(30*day + 5*time.Hour + 17*time.Second)},
		{mid.Add(2 * time.Hour), mid.Add(9*day + 13*time.Hour)},
		{mid.Add(12 * time.Hour), mid.Add(2*day + 12*time.Hour)},
		{mid.Add(22*time.Hour + 5*time.Second), mid.Add(3*day + 20*time.Hour)},
		{mid.Add(3 * time.Hour), mid.Add(20 * time.Hour)},
		{last.Add(-36 * time.Hour), last},
		{last.Truncate(day), last.Truncate(day).Add(day)},
		{mid.Add(day), mid},
	}
}

// TestEventDayCountsStayExact checks the feeds' totals (and the number of
// stakers updated since a time), which add day counts kept by triggers to
// row counts at the edges, and the stakers' counts by address bucket and
// day, against counting rows: after a load, after a
// rollback (deletes, reopened completions, stakers derived again) and
// after a truncation.
func TestEventDayCountsStayExact(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var strategy, operator string
	if err := sql.GetContext(ctx, &strategy, `SELECT strategy_address FROM deposits GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	if err := sql.GetContext(ctx, &operator, `SELECT operator_address FROM delegation_events GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	var first, last time.Time
	if err := sql.QueryRowContext(ctx, `SELECT min(block_time), max(block_time) FROM delegation_events`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	brute := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := sql.GetContext(ctx, &n, query, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(stage string) {
		t.Helper()
		var checked, nonZero int
		for _, r := range dayCountRanges(first, last) {
			start, end := r[0], r[1]
			for _, c := range []struct {
				name  string
				count func() (int, error)
				want  int
			}{
				{"deposits", func() (int, error) { return db.CountDeposits(ctx, store.DepositFilter{Start: start, End: end}) },
					brute(`SELECT count(*) FROM deposits WHERE block_time BETWEEN $1 AND $2`, start, end)},
				{"deposits until end", func() (int, error) { return db.CountDeposits(ctx, store.DepositFilter{End: end}) },
					brute(`SELECT count(*) FROM deposits WHERE block_time <= $1`, end)},
				{"deposits from start", func() (int, error) {
					return db.CountDeposits(ctx, store.DepositFilter{Start: start, Strategy: strategy})
				}, brute(`SELECT count(*) FROM deposits WHERE block_time >= $1 AND strategy_address = $2`, start, strategy)},
				{"deposits of a strategy", func() (int, error) {
					return db.CountDeposits(ctx, store.DepositFilter{Start: start, End: end, Strategy: strategy})
				}, brute(`SELECT count(*) FROM deposits WHERE block_time BETWEEN $1 AND $2 AND strategy_address = $3`, start, end, strategy)},
				{"delegation events", func() (int, error) {
					return db.CountDelegationEvents(ctx, store.DelegationEventFilter{Start: start, End: end})
				}, brute(`SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2`, start, end)},
				{"delegation events of an operator", func() (int, error) {
					return db.CountDelegationEvents(ctx, store.DelegationEventFilter{Start: start, End: end, Operator: operator})
				}, brute(`SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2 AND operator_address = $3`, start, end, operator)},
				{"delegation events of a type", func() (int, error) {
					return db.CountDelegationEvents(ctx, store.DelegationEventFilter{Start: start, End: end, Type: "SHARES_INCREASED"})
				}, brute(`SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2 AND type = 'SHARES_INCREASED'`, start, end)},
				{"delegation events of a type and an operator", func() (int, error) {
					return db.CountDelegationEvents(ctx, store.DelegationEventFilter{Start: start, End: end, Type: "DELEGATION", Operator: operator})
				}, brute(`SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2 AND type = 'DELEGATION' AND operator_address = $3`, start, end, operator)},
				{"delegation events by operator", func() (int, error) {
					n, err := db.CountDelegationEventsByOperators(ctx, []string{operator, "0x" + strings.Repeat("0", 40)}, store.DelegationEventFilter{Start: start, End: end})
					return n[operator], err
				}, brute(`SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2 AND operator_address = $3`, start, end, operator)},
				{"delegation events of a type by operator", func() (int, error) {
					n, err := db.CountDelegationEventsByOperators(ctx, []string{operator}, store.DelegationEventFilter{Start: start, End: end, Type: "DELEGATION"})
					return n[operator], err
				}, brute(`SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2 AND type = 'DELEGATION' AND operator_address = $3`, start, end, operator)},
				{"stakers updated since", func() (int, error) {
					return db.CountStakers(ctx, store.StakerFilter{UpdatedSince: start})
				}, brute(`SELECT count(*) FROM stakers WHERE updated_at >= $1`, start)},
				{"withdrawal events", func() (int, error) {
					return db.CountWithdrawalEvents(ctx, store.WithdrawalEventFilter{Start: start, End: end})
				}, brute(`SELECT (SELECT count(*) FROM withdrawals WHERE created_at BETWEEN $1 AND $2)
					+ (SELECT count(*) FROM withdrawals WHERE is_completed AND completed_at BETWEEN $1 AND $2)`, start, end)},
				{"completed withdrawal events", func() (int, error) {
					return db.CountWithdrawalEvents(ctx, store.WithdrawalEventFilter{Start: start, End: end, Type: store.WithdrawalEventCompleted})
				}, brute(`SELECT count(*) FROM withdrawals WHERE is_completed AND completed_at BETWEEN $1 AND $2`, start, end)},
			} {
				got, err := c.count()
				if err != nil {
					t.Fatalf("%s: %s in [%s, %s]: %v", stage, c.name, start, end, err)
				}
				if got != c.want {
					t.Errorf("%s: %s in [%s, %s] = %d; counting the rows gives %d", stage, c.name, start, end, got, c.want)
				}
				checked++
				if c.want > 0 {
					nonZero++
				}
			}
		}
		if nonZero < checked/2 {
			t.Errorf("%s: only %d of %d totals are above zero; the ranges miss the data", stage, nonZero, checked)
		}
		// The stakers by address bucket and day of last update, which
		// deep pages of the stakers updated since a time start from.
		if n := brute(`
			SELECT count(*)
			FROM (
			    SELECT left(address, 3) AS subject, (updated_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n
			    FROM stakers
			    GROUP BY 1, 2
			) s
			FULL JOIN (
			    SELECT subject, day, n FROM event_day_counts WHERE feed = 'staker_updated' AND subject <> ''
			) c USING (subject, day)
			WHERE s.n IS DISTINCT FROM c.n`); n != 0 {
			t.Errorf("%s: %d counts of stakers by address bucket and day differ from counting the stakers", stage, n)
		}
		if n := brute(`SELECT count(*) FROM event_day_counts WHERE n <= 0`); n != 0 {
			t.Errorf("%s: %d day counts are zero or below; want only positive counts", stage, n)
		}
	}
	check("loaded")

	var firstBlock, lastBlock uint64
	if err := sql.QueryRowContext(ctx, `SELECT min(block_number), max(block_number) FROM delegation_events`).Scan(&firstBlock, &lastBlock); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.RollbackAfter(ctx, firstBlock+(lastBlock-firstBlock)*2/3) }); err != nil {
		t.Fatal(err)
	}
	check("rolled back")

	for _, table := range []string{"deposits", "delegation_events", "withdrawals", "stakers"} {
		if _, err := sql.ExecContext(ctx, `TRUNCATE `+table); err != nil {
			t.Fatal(err)
		}
	}
	if n := brute(`SELECT count(*) FROM event_day_counts`); n != 0 {
		t.Errorf("%d day counts are left after the feeds' tables were truncated", n)
	}
}
