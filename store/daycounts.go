package store

import "time"

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
// count returns for a sub-range [from, to] (zero times open), each from
// its nearer midnight: a partial day of more than half a day is counted
// as its whole day's kept count less the rows outside the range, so that
// at most half a day's rows are counted at each edge (a range that ends
// now, in the afternoon, counts none after it). A range within one day is
// counted row by row alone.
func dayCounted(q *queryArgs, feed, subject string, start, end time.Time, count func(from, to time.Time) string) string {
	return dayCountedOf(q, feed, func() string { return q.add(subject) }, start, end, count)
}

// dayCountedOf is dayCounted for the subject that the SQL expression
// subject returns, such as a column of the statement's keys, so that one
// statement counts the events of many subjects.
func dayCountedOf(q *queryArgs, feed string, subject func() string, start, end time.Time, count func(from, to time.Time) string) string {
	const day = 24 * time.Hour
	start, end = start.UTC(), end.UTC()
	if !start.IsZero() && !end.IsZero() && !start.Add(day-1).Truncate(day).Before(end.Truncate(day)) {
		// No whole day between the first midnight at or after start
		// and the last at or before end.
		return "(" + count(start, end) + ")"
	}
	first, last, edges := dayCountedEdges(start, end, count)
	days := `SELECT COALESCE(sum(c.n), 0) FROM event_day_counts c WHERE c.feed = ` + q.add(feed) + ` AND c.subject = ` + subject()
	if !first.IsZero() {
		days += ` AND c.day >= ` + q.add(first.Format(time.DateOnly)) + `::date`
	}
	if !last.IsZero() {
		days += ` AND c.day < ` + q.add(last.Format(time.DateOnly)) + `::date`
	}
	expr := "(" + days + ")"
	for _, e := range edges {
		expr += " " + e.sign + " (" + e.rows + ")"
	}
	return "(" + expr + ")"
}

// dayCountEdge is a count of rows at an edge of a day-counted range, added
// to the whole days' counts (sign "+") or taken from them ("-").
type dayCountEdge struct {
	sign, rows string
}

// dayCountedEdges returns the whole UTC days [first, last) whose kept
// counts a count of [start, end] sums (zero for an open side), and the
// row counts (made by count) that complete it: the part of a partial
// edge day inside the range when that is at most half the day, else its
// part outside the range, to be taken from the day's whole count. Event
// times are whole microseconds at most, so the microsecond next to an
// edge bounds the part outside it.
func dayCountedEdges(start, end time.Time, count func(from, to time.Time) string) (first, last time.Time, edges []dayCountEdge) {
	const day = 24 * time.Hour
	if !start.IsZero() {
		first = start.Truncate(day)
		if first.Before(start) {
			if next := first.Add(day); start.Sub(first) <= next.Sub(start) {
				edges = append(edges, dayCountEdge{"-", count(first, start.Add(-time.Microsecond))})
			} else {
				edges = append(edges, dayCountEdge{"+", count(start, next.Add(-time.Microsecond))})
				first = next
			}
		}
	}
	if !end.IsZero() {
		last = end.Truncate(day)
		if next := last.Add(day); end.After(last) && next.Sub(end) < end.Sub(last) {
			edges = append(edges, dayCountEdge{"-", count(end.Add(time.Microsecond), next.Add(-time.Microsecond))})
			last = next
		} else {
			edges = append(edges, dayCountEdge{"+", count(last, end)})
		}
	}
	return first, last, edges
}
