package rest

import (
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
)

// Paging limits. Skip is bounded by GraphQL's 32-bit Int.
const (
	defaultTake = 12
	minTake     = 1
	maxTake     = 1000
	maxSkip     = 1<<31 - 1
)

// ParamError says which request parameter was malformed, what it was, and
// what was expected instead. It wraps derrors.InvalidArgument, so it is
// answered with 422 unprocessable_entity and its Error text as the message.
type ParamError struct {
	Name  string // the parameter as the client spelled it
	In    string // "query" or "path"
	Value string // the value as the client sent it (URL-decoded)
	Want  string // what a valid value looks like
}

// Error names the parameter and quotes its value as sent, cut after
// respond.MaxQuoted bytes.
func (e *ParamError) Error() string {
	return fmt.Sprintf("invalid %s parameter %q: expected %s, got %s", e.In, e.Name, e.Want, respond.QuoteInput(e.Value))
}

// Unwrap makes errors.Is(err, derrors.InvalidArgument) hold.
func (e *ParamError) Unwrap() error { return derrors.InvalidArgument }

// params reads typed values from a request's query string. The first
// malformed value is remembered and reported by Err; later reads still
// return zero values, so a handler reads everything and checks Err once.
// Unknown parameters are ignored. A parameter given with an empty value
// counts as absent, and of a repeated parameter only the first value counts.
type params struct {
	values url.Values
	err    error
}

func newParams(values url.Values) *params { return &params{values: values} }

// Err returns the first parameter error, or nil.
func (p *params) Err() error { return p.err }

func (p *params) fail(name, value, want string) {
	if p.err == nil {
		p.err = &ParamError{Name: name, In: "query", Value: value, Want: want}
	}
}

// raw returns the parameter's first value and whether it is present and
// non-empty.
func (p *params) raw(name string) (string, bool) {
	v := p.values.Get(name)
	return v, v != ""
}

// Text returns a free-text parameter, or nil when absent.
func (p *params) Text(name string) *string {
	v, ok := p.raw(name)
	if !ok {
		return nil
	}
	return &v
}

// Bool reads a toggle: the strings "true" or "false", default false.
func (p *params) Bool(name string) bool {
	v, ok := p.raw(name)
	switch {
	case !ok || v == "false":
		return false
	case v == "true":
		return true
	}
	p.fail(name, v, `"true" or "false"`)
	return false
}

// Enum reads a parameter that must be one of allowed (matched exactly) and
// returns def when it is absent.
func (p *params) Enum(name, def string, allowed ...string) string {
	v, ok := p.raw(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(name, v, "one of "+quoteAll(allowed))
	return def
}

// OptionalEnum is Enum without a default: nil when absent.
func (p *params) OptionalEnum(name string, allowed ...string) *string {
	if _, ok := p.raw(name); !ok {
		return nil
	}
	v := p.Enum(name, "", allowed...)
	if v == "" {
		return nil
	}
	return &v
}

// Sort reads a sort direction, "asc" or "desc"; nil when absent.
func (p *params) Sort(name string) *string { return p.OptionalEnum(name, "asc", "desc") }

// Int reads a decimal integer in [min, max], returning def when absent.
func (p *params) Int(name string, def, min, max int) int {
	v, ok := p.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	// Atoi accepts a leading sign; only plain digits are allowed here.
	if err != nil || v[0] == '+' || n < min || n > max {
		p.fail(name, v, fmt.Sprintf("an integer from %d to %d", min, max))
		return def
	}
	return n
}

// Page reads skip (default 0) and take (default 12, 1 to 1000).
func (p *params) Page() (skip, take int) {
	return p.Int("skip", 0, 0, maxSkip), p.Int("take", defaultTake, minTake, maxTake)
}

// Address reads a 0x-prefixed 20-byte hex address and returns it lowercase,
// or nil when absent.
func (p *params) Address(name string) *string {
	v, ok := p.raw(name)
	if !ok {
		return nil
	}
	if !chain.IsAddress(v) {
		p.fail(name, v, "an address: 0x followed by 40 hexadecimal digits")
		return nil
	}
	v = strings.ToLower(v)
	return &v
}

// List reads a comma-separated list of at most max values, each of which
// valid accepts (want describes them), or nil when absent.
func (p *params) List(name string, max int, valid func(string) bool, want string) []string {
	v, ok := p.raw(name)
	if !ok {
		return nil
	}
	items := strings.Split(v, ",")
	if len(items) > max {
		p.fail(name, v, fmt.Sprintf("at most %d comma-separated %s", max, want))
		return nil
	}
	for _, item := range items {
		if !valid(item) {
			p.fail(name, v, "comma-separated "+want)
			return nil
		}
	}
	return items
}

// isUint256 says whether s is a decimal integer in [0, 2^256).
func isUint256(s string) bool {
	if s == "" || len(s) > 78 || strings.Trim(s, "0123456789") != "" {
		return false
	}
	n, ok := new(big.Int).SetString(s, 10)
	return ok && n.BitLen() <= 256
}

// Hash reads a 0x-prefixed 32-byte hex hash and returns it lowercase, or nil
// when absent.
func (p *params) Hash(name string) *string {
	v, ok := p.raw(name)
	if !ok {
		return nil
	}
	if !chain.IsHash(v) {
		p.fail(name, v, "a transaction hash: 0x followed by 64 hexadecimal digits")
		return nil
	}
	v = strings.ToLower(v)
	return &v
}

// Time reads an ISO 8601 date or date-time (see parseTime); nil when absent.
func (p *params) Time(name string) *time.Time {
	v, ok := p.raw(name)
	if !ok {
		return nil
	}
	t, ok := parseTime(v)
	if !ok {
		p.fail(name, v, "an ISO 8601 date or date-time such as 2024-04-11 or 2024-04-11T08:31:11.000Z")
		return nil
	}
	return &t
}

// timeLayouts are the accepted date-time forms. A value without a zone is
// UTC, as EigenExplorer's 2024-04-11T08:31:11.000 is. The fractional
// seconds of the layouts ending in .999999999 are optional.
var timeLayouts = []string{
	time.RFC3339Nano,                // 2024-04-11T08:31:11.123Z, 2024-04-11T08:31:11+02:00
	"2006-01-02T15:04:05.999999999", // no zone: UTC
	"2006-01-02T15:04Z07:00",        // no seconds: 2024-04-11T08:31Z
	"2006-01-02T15:04",              // no seconds, no zone: UTC
	"2006-01-02",                    // a plain date: its UTC midnight
}

// parseTime parses an ISO 8601 date or date-time. A '+' zone sign that a
// client left unencoded in the query string arrives as a space; it is read
// as '+' again.
func parseTime(s string) (time.Time, bool) {
	if i := strings.LastIndexByte(s, ' '); i > 0 && strings.Contains(s[:i], "T") {
		s = s[:i] + "+" + s[i+1:]
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// pathAddress validates an address path parameter and returns it lowercase.
func pathAddress(name, v string) (string, error) {
	if !chain.IsAddress(v) {
		return "", &ParamError{Name: name, In: "path", Value: v, Want: "an address: 0x followed by 40 hexadecimal digits"}
	}
	return strings.ToLower(v), nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
