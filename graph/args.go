package graph

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
)

// This file turns GraphQL arguments into store arguments, validating them.
// Every rejection wraps derrors.InvalidArgument, which the error presenter
// reports as unprocessable_entity.

// defaultTake is the page size of the REST contract.
const defaultTake = 12

// pageFrom returns the page of skip and take (nil takes the default).
func pageFrom(skip, take *int) (store.Page, error) {
	p := store.Page{Skip: 0, Take: defaultTake}
	if skip != nil {
		p.Skip = *skip
	}
	if take != nil {
		p.Take = *take
	}
	return p, p.Validate()
}

// submissionsPageFrom is pageFrom for AvsRewards.submissions, whose take
// defaults to the maximum: the REST rewards record is not paginated.
func submissionsPageFrom(skip, take *int) (store.Page, error) {
	if take == nil {
		max := store.MaxTake
		take = &max
	}
	return pageFrom(skip, take)
}

// searchFrom returns the text search of mode and text.
func searchFrom(mode *model.SearchMode, text *string) store.TextSearch {
	var s store.TextSearch
	if text != nil {
		s.Text = strings.TrimSpace(*text)
	}
	if mode != nil {
		s.Mode = store.SearchMode(*mode)
	}
	return s
}

// sortOption is one sort argument of a list.
type sortOption struct {
	name  string
	key   store.SortKey
	order *model.SortOrder
}

// sortFrom returns the sort that the given sort arguments ask for. At most
// one may be set: the REST contract does not say how several combine, and
// each single order is backed by an index.
func sortFrom(options ...sortOption) (store.Sort, error) {
	var s store.Sort
	var chosen string
	for _, o := range options {
		if o.order == nil {
			continue
		}
		if chosen != "" {
			return store.Sort{}, fmt.Errorf("%w: sort by one field at a time, not by both %s and %s",
				derrors.InvalidArgument, chosen, o.name)
		}
		chosen = o.name
		s = store.Sort{Key: o.key, Desc: *o.order == model.SortOrderDesc}
	}
	return s, nil
}

// stringValue returns *s, or "" for nil.
func stringValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

var hashRE = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// hashFrom validates an optional 32-byte hash argument and returns it
// lowercase ("" for none).
func hashFrom(name string, s *string) (string, error) {
	if s == nil || *s == "" {
		return "", nil
	}
	if !hashRE.MatchString(*s) {
		return "", fmt.Errorf("%w: %s must be 0x followed by 64 hex digits", derrors.InvalidArgument, name)
	}
	return strings.ToLower(*s), nil
}

// Date-range rules of the delegation events (REST contract 4.6).
const (
	defaultEventRange = 7 * 24 * time.Hour
	maxEventRange     = 30 * 24 * time.Hour
)

// eventRange applies the date rules of delegation events to the optional
// startAt and endAt arguments at time now:
//   - with neither, the 7 days ending now;
//   - with only startAt, until 7 days later or now, whichever is earlier;
//   - with only endAt, the 7 days before it;
//   - endAt before startAt, a range over 30 days, a start in the future and
//     an unparseable date are invalid arguments.
func eventRange(startAt, endAt *string, now time.Time) (start, end time.Time, err error) {
	hasStart, hasEnd := startAt != nil && *startAt != "", endAt != nil && *endAt != ""
	if hasStart {
		if start, err = parseISOTime("startAt", *startAt); err != nil {
			return
		}
	}
	if hasEnd {
		if end, err = parseISOTime("endAt", *endAt); err != nil {
			return
		}
	}
	switch {
	case !hasStart && !hasEnd:
		end = now
		start = end.Add(-defaultEventRange)
	case hasStart && !hasEnd:
		if start.After(now) {
			return start, end, fmt.Errorf("%w: startAt is in the future", derrors.InvalidArgument)
		}
		end = start.Add(defaultEventRange)
		if end.After(now) {
			end = now
		}
	case !hasStart && hasEnd:
		start = end.Add(-defaultEventRange)
	}
	if end.Before(start) {
		return start, end, fmt.Errorf("%w: endAt is before startAt", derrors.InvalidArgument)
	}
	if end.Sub(start) > maxEventRange {
		return start, end, fmt.Errorf("%w: the date range may be at most 30 days", derrors.InvalidArgument)
	}
	return start.UTC().Round(0), end.UTC().Round(0), nil
}

// historyFrequency describes one frequency of the historical counts.
type historyFrequency struct {
	bucketDays  int
	defaultDays int // the range without dates: this many days ending today
	maxDays     int // the longest range allowed
}

var historyFrequencies = map[string]historyFrequency{
	"1d": {bucketDays: 1, defaultDays: 31, maxDays: 365},
	"7d": {bucketDays: 7, defaultDays: 365, maxDays: 720},
}

// historyRange applies the rules of the historical counts (REST contract
// 4.8.7) and returns the first and last day of the range (UTC midnights)
// and the bucket length in days. Without dates the range is the default
// number of days ending today; endAt defaults to now and startAt to the
// default number of days before endAt.
func historyRange(frequency, startAt, endAt *string, now time.Time) (from, to time.Time, bucketDays int, err error) {
	freq := "1d"
	if frequency != nil && *frequency != "" {
		freq = *frequency
	}
	f, ok := historyFrequencies[freq]
	if !ok {
		return from, to, 0, fmt.Errorf("%w: frequency must be 1d or 7d", derrors.InvalidArgument)
	}
	end := now
	if endAt != nil && *endAt != "" {
		if end, err = parseISOTime("endAt", *endAt); err != nil {
			return
		}
	}
	to = day(end)
	from = to.AddDate(0, 0, -(f.defaultDays - 1))
	if startAt != nil && *startAt != "" {
		start, err := parseISOTime("startAt", *startAt)
		if err != nil {
			return from, to, 0, err
		}
		from = day(start)
	}
	if to.Before(from) {
		return from, to, 0, fmt.Errorf("%w: endAt is before startAt", derrors.InvalidArgument)
	}
	if days := int(to.Sub(from)/(24*time.Hour)) + 1; days > f.maxDays {
		return from, to, 0, fmt.Errorf("%w: the range may be at most %d days for frequency %s",
			derrors.InvalidArgument, f.maxDays, freq)
	}
	return from, to, f.bucketDays, nil
}

// day returns the UTC midnight starting t's day.
func day(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// isoLayouts are the ISO 8601 forms accepted for dates; those without a zone
// are UTC.
var isoLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02T15:04Z07:00",
	time.DateOnly,
}

// parseISOTime parses an ISO 8601 date or date-time argument.
func parseISOTime(name, s string) (time.Time, error) {
	for _, layout := range isoLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s %q is not an ISO 8601 date", derrors.InvalidArgument, name, s)
}

// maxOperatorSetID is the largest operator set id: the contracts' ids are
// uint32.
const maxOperatorSetID = 1<<32 - 1

// operatorSetIDFrom validates an operator set id argument.
func operatorSetIDFrom(id int) (int64, error) {
	if id < 0 || id > maxOperatorSetID {
		return 0, fmt.Errorf("%w: id must be between 0 and %d", derrors.InvalidArgument, maxOperatorSetID)
	}
	return int64(id), nil
}

// registrationStatusFrom returns the membership filter of an isActive
// argument: nil keeps every membership.
func registrationStatusFrom(isActive *bool) store.RegistrationStatus {
	switch {
	case isActive == nil:
		return store.AnyRegistration
	case *isActive:
		return store.ActiveRegistration
	default:
		return store.InactiveRegistration
	}
}

// slashingDatesFrom parses the optional date range of the slashings: each
// date bounds the range on its side, and endAt may not be before startAt.
func slashingDatesFrom(startAt, endAt *string) (start, end *time.Time, err error) {
	if startAt != nil && *startAt != "" {
		t, err := parseISOTime("startAt", *startAt)
		if err != nil {
			return nil, nil, err
		}
		start = &t
	}
	if endAt != nil && *endAt != "" {
		t, err := parseISOTime("endAt", *endAt)
		if err != nil {
			return nil, nil, err
		}
		end = &t
	}
	if start != nil && end != nil && end.Before(*start) {
		return nil, nil, fmt.Errorf("%w: endAt is before startAt", derrors.InvalidArgument)
	}
	return start, end, nil
}

// stakerFilterFrom validates the optional updatedSince argument of a
// staker list.
func stakerFilterFrom(updatedSince *string) (store.StakerFilter, error) {
	var f store.StakerFilter
	if updatedSince == nil || *updatedSince == "" {
		return f, nil
	}
	t, err := parseISOTime("updatedSince", *updatedSince)
	f.UpdatedSince = t
	return f, err
}
