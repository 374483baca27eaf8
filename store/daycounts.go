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
	if !start.IsZero() && !end.IsZero() && !hasWholeDay(start, end) {
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
// to the whole days' counts (sign "+") or taken from them ("-"); day is
// the UTC day of those rows.
type dayCountEdge struct {
	sign, rows string
	day        time.Time
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
				edges = append(edges, dayCountEdge{"-", count(first, start.Add(-time.Microsecond)), first})
			} else {
				edges = append(edges, dayCountEdge{"+", count(start, next.Add(-time.Microsecond)), first})
				first = next
			}
		}
	}
	if !end.IsZero() {
		last = end.Truncate(day)
		if next := last.Add(day); end.After(last) && next.Sub(end) < end.Sub(last) {
			edges = append(edges, dayCountEdge{"-", count(end.Add(time.Microsecond), next.Add(-time.Microsecond)), last})
			last = next
		} else {
			edges = append(edges, dayCountEdge{"+", count(last, end), last})
		}
	}
	return first, last, edges
}

// dayBuckets returns a statement selecting (bucket, n): for each UTC day
// that [start, end] touches, as a date, the number of the events of the
// given feeds (the whole feeds) whose time is in the range; it is
// bucketStart's buckets of a feed read newest first. Whole days come from
// event_day_counts and the partial days at the edges are completed by
// the statements count returns for a feed and a sub-range, as dayCounted
// does. Both ends must be set, with a whole day between them (see
// hasWholeDay).
func dayBuckets(q *queryArgs, feeds []string, start, end time.Time, count func(feed string, from, to time.Time) string) string {
	var first, last time.Time
	var edgeRows []string
	for _, feed := range feeds {
		var edges []dayCountEdge
		first, last, edges = dayCountedEdges(start.UTC(), end.UTC(), func(from, to time.Time) string { return count(feed, from, to) })
		for _, e := range edges {
			edgeRows = append(edgeRows, `
			    SELECT `+q.add(e.day.Format(time.DateOnly))+`::date, `+e.sign+`(`+e.rows+`)`)
		}
	}
	feedList := make([]string, len(feeds))
	for i, feed := range feeds {
		feedList[i] = q.add(feed)
	}
	return `
		    SELECT b.day AS bucket, sum(b.n) AS n
		    FROM (
			    SELECT c.day, c.n
			    FROM event_day_counts c
			    WHERE c.feed IN (` + strings.Join(feedList, ", ") + `) AND c.subject = ''
			      AND c.day >= ` + q.add(first.Format(time.DateOnly)) + `::date AND c.day < ` + q.add(last.Format(time.DateOnly)) + `::date` +
		strings.Join(append([]string{""}, edgeRows...), "\n\t\t\t    UNION ALL") + `
		    ) b(day, n)
		    GROUP BY b.day`
}

// hasWholeDay reports whether a UTC day lies wholly within [start, end]
// (both set), so that the range's events can be counted by day.
func hasWholeDay(start, end time.Time) bool {
	const day = 24 * time.Hour
	start, end = start.UTC(), end.UTC()
	return !start.IsZero() && !end.IsZero() && start.Add(day-1).Truncate(day).Before(end.Truncate(day))
}
