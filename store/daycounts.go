package store

import (
	"strings"
	"time"
)

// The event feeds counted by UTC day in event_day_counts (migrations
// 00023, 00026 and 00033), whose triggers keep the counts exact; stakers
// count there by the day of their last update, as a whole (the empty subject)
// and by the first hex digit of their address (subjects '0x0' to '0xf').
const (
	dayCountedDeposits            = "deposit"
	dayCountedDelegations         = "delegation"
	dayCountedWithdrawalQueued    = "withdrawal_queued"
	dayCountedWithdrawalCompleted = "withdrawal_completed"
	dayCountedStakerUpdates       = "staker_updated"
)

// dayCounted returns an expression (in parentheses) of the number of the
// events of feed, for subject ("" for the whole feed), whose time is in
// [start, end]; a zero start or end leaves that side open. The UTC days
// wholly inside the range are summed from event_day_counts, and the
// partial days at its edges are counted row by row by the statement that
// count returns for a sub-range [from, to] (zero times open). A range
// within one day is counted row by row alone.
func dayCounted(q *queryArgs, feed, subject string, start, end time.Time, count func(from, to time.Time) string) string {
	const day = 24 * time.Hour
	start, end = start.UTC(), end.UTC()
	// The whole days are [first, last): first is the first midnight at
	// or after start, last the last midnight at or before end.
	var first, last time.Time
	if !start.IsZero() {
		first = start.Truncate(day)
		if first.Before(start) {
			first = first.Add(day)
		}
	}
	if !end.IsZero() {
		last = end.Truncate(day)
	}
	if !start.IsZero() && !end.IsZero() && !first.Before(last) {
		return "(" + count(start, end) + ")"
	}
	days := `SELECT COALESCE(sum(c.n), 0) FROM event_day_counts c WHERE c.feed = ` + q.add(feed) + ` AND c.subject = ` + q.add(subject)
	if !first.IsZero() {
		days += ` AND c.day >= ` + q.add(first.Format(time.DateOnly)) + `::date`
	}
	if !last.IsZero() {
		days += ` AND c.day < ` + q.add(last.Format(time.DateOnly)) + `::date`
	}
	parts := []string{"(" + days + ")"}
	if !start.IsZero() && start.Before(first) {
		// Event times are whole microseconds at most, so the last
		// microsecond before first ends the partial first day.
		parts = append(parts, "("+count(start, first.Add(-time.Microsecond))+")")
	}
	if !end.IsZero() {
		parts = append(parts, "("+count(last, end)+")")
	}
	return "(" + strings.Join(parts, " + ") + ")"
}
