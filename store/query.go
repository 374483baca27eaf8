package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// MaxTake is the largest page any list query returns.
const MaxTake = 1000

// rowsFor returns the capacity to give the slice that a read expecting
// about n rows scans into, so that sqlx appends them without growing it
// by doubling (a tenth of the bytes an uncached page of an AVS's stakers
// allocated). The estimate is capped: a page per key of many keys may
// return far fewer rows than it allows.
func rowsFor(n int) int { return min(max(n, 0), 256) }

// Page selects a window of an ordered list: Skip records are skipped and at
// most Take are returned.
type Page struct {
	Skip int
	Take int
}

// Validate reports a derrors.InvalidArgument error when the page is out of
// range: a negative skip, or a take outside 1..MaxTake.
func (p Page) Validate() error {
	if p.Skip < 0 {
		return fmt.Errorf("%w: skip must not be negative", derrors.InvalidArgument)
	}
	if p.Take < 1 || p.Take > MaxTake {
		return fmt.Errorf("%w: take must be between 1 and %d", derrors.InvalidArgument, MaxTake)
	}
	return nil
}

// SearchMode says how a TextSearch matches.
type SearchMode string

// The two search modes of the REST contract.
const (
	SearchContains   SearchMode = "contains"
	SearchStartsWith SearchMode = "startsWith"
)

// TextSearch is a case-insensitive search of names (and addresses) by text.
// The zero value matches everything.
type TextSearch struct {
	Text string
	Mode SearchMode // SearchContains when empty
}

// hexFragmentRE matches text that can be part of an address.
var hexFragmentRE = regexp.MustCompile(`^(0x)?[0-9a-f]+$|^0x$`)

// condition returns the SQL condition matching the lower-cased name column
// and the address column against the search text, adding its arguments to
// q. It returns "" when there is nothing to search for. Text that cannot be
// part of an address (anything but hex digits after an optional 0x) is
// matched against the name only, so that a startsWith search can use the
// lower(name) text_pattern_ops index; a startsWith search for hex digits
// without 0x matches addresses that start with 0x and those digits.
func (s TextSearch) condition(q *queryArgs, nameColumn, addressColumn string) (string, error) {
	if s.Text == "" {
		return "", nil
	}
	// PostgreSQL text holds neither NUL nor invalid UTF-8, and refuses
	// parameters that do.
	if !utf8.ValidString(s.Text) || strings.ContainsRune(s.Text, 0) {
		return "", fmt.Errorf("%w: the search text must be UTF-8 text without NUL characters", derrors.InvalidArgument)
	}
	text := strings.ToLower(s.Text)
	var name, address string
	switch s.Mode {
	case SearchContains, "":
		name = "%" + escapeLike(text) + "%"
		address = name
	case SearchStartsWith:
		name = escapeLike(text) + "%"
		address = escapeLike("0x"+strings.TrimPrefix(text, "0x")) + "%"
	default:
		return "", fmt.Errorf("%w: unknown search mode %q", derrors.InvalidArgument, s.Mode)
	}
	if !hexFragmentRE.MatchString(text) {
		return fmt.Sprintf("lower(%s) LIKE %s", nameColumn, q.add(name)), nil
	}
	return fmt.Sprintf("(lower(%s) LIKE %s OR %s LIKE %s)", nameColumn, q.add(name), addressColumn, q.add(address)), nil
}

// escapeLike escapes the LIKE wildcards and the escape character itself, so
// that user text matches literally.
func escapeLike(s string) string {
	return likeEscaper.Replace(s)
}

// likeEscaper is escapeLike's replacer, built once: building one is a
// few hundred bytes of tables, which made escapeLike 1% of the server's
// allocations in a bench run.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// SortKey names what a list can be sorted by. Each list accepts a subset;
// the empty key is the list's default order.
type SortKey string

// The sort keys of the REST contract.
const (
	SortDefault          SortKey = ""
	SortByAPY            SortKey = "apy"
	SortByTVL            SortKey = "tvl"
	SortByTotalStakers   SortKey = "totalStakers"
	SortByTotalOperators SortKey = "totalOperators"
	SortByTotalAVS       SortKey = "totalAvs"
)

// Sort is the order of a list.
type Sort struct {
	Key  SortKey
	Desc bool
}

// orderBy returns the ORDER BY list for s, given the column each accepted key
// sorts by. The tie-breaker column keeps the order total (so that pages do not
// overlap) and follows the direction of the sort.
func (s Sort) orderBy(columns map[SortKey]string, tieBreaker string) (string, error) {
	col, ok := columns[s.Key]
	if !ok {
		return "", fmt.Errorf("%w: this list cannot be sorted by %s", derrors.InvalidArgument, s.Key)
	}
	dir := "ASC"
	if s.Desc {
		dir = "DESC"
	}
	return fmt.Sprintf("%s %s, %s %s", col, dir, tieBreaker, dir), nil
}

// queryArgs collects the positional arguments of a query built from parts.
type queryArgs struct {
	args []any
}

// add appends v and returns its placeholder ($1, $2, ...).
func (q *queryArgs) add(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// where joins the non-empty conditions with AND into a WHERE clause, or
// returns "" when there are none.
func where(conds ...string) string {
	var nonEmpty []string
	for _, c := range conds {
		if c != "" {
			nonEmpty = append(nonEmpty, c)
		}
	}
	if len(nonEmpty) == 0 {
		return ""
	}
	return "WHERE " + strings.Join(nonEmpty, "\n\t\t  AND ")
}

// and joins the non-empty conditions with AND, for use inside a WHERE clause
// that already has a condition; it returns "" when there are none.
func and(conds ...string) string {
	var b strings.Builder
	for _, c := range conds {
		if c != "" {
			b.WriteString("\n\t\t  AND ")
			b.WriteString(c)
		}
	}
	return b.String()
}
