package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

var (
	addressRE = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	bigIntRE  = regexp.MustCompile(`^-?[0-9]+$`)
	// decimalRE matches a plain decimal JSON number: no exponent, no
	// leading zeros, no leading plus sign.
	decimalRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)
)

// AppendFloat appends f as the shortest plain decimal that reads back as f:
// never in exponent form, and an integer value without a fraction
// (2075390.5994251065, 960000000000000000). Negative zero is written as 0.
func AppendFloat(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// MarshalFloat writes the Float scalar with AppendFloat, where gqlgen's
// own marshaller writes %g (2.0753905994251065e+06). Infinities and NaN,
// which JSON cannot represent, are an error of the field, as in gqlgen.
func MarshalFloat(f float64) graphql.ContextMarshaler {
	return graphql.ContextWriterFunc(func(_ context.Context, w io.Writer) error {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return errors.New("cannot marshal infinite or NaN float values")
		}
		_, err := w.Write(AppendFloat(nil, f))
		return err
	})
}

// UnmarshalFloat reads a Float argument as gqlgen does.
func UnmarshalFloat(ctx context.Context, v any) (float64, error) {
	return graphql.UnmarshalFloatContext(ctx, v)
}

// Number is a Float of the schema held as plain decimal text, written as it
// is, so that a value that float64 cannot hold exactly, such as an integer
// amount of shares beyond 2^53, keeps every digit. gqlgen binds a field
// to it when the field's Go type is Number (see gqlgen.yml).
type Number string

// NumberFromDecimal returns decimal text from the database as a Number: as
// it is when it is a plain decimal, or else (never for the database's
// numeric text) the float64 nearest to it, written by AppendFloat.
func NumberFromDecimal(s string) Number {
	if decimalRE.MatchString(s) {
		return Number(s)
	}
	return Number(AppendFloat(nil, DecimalToFloat(s)))
}

// MarshalGQL writes the number as a JSON number.
func (n Number) MarshalGQL(w io.Writer) {
	if n == "" {
		_, _ = io.WriteString(w, "0")
		return
	}
	_, _ = io.WriteString(w, string(n))
}

// UnmarshalGQL reads a Float argument into a Number.
func (n *Number) UnmarshalGQL(v any) error {
	switch v := v.(type) {
	case json.Number:
		*n = NumberFromDecimal(v.String())
		return nil
	case string:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%w: %s is not a number", derrors.InvalidArgument, describe(v))
		}
		*n = NumberFromDecimal(v)
		return nil
	}
	f, err := graphql.UnmarshalFloat(v)
	if err != nil {
		return fmt.Errorf("%w: %s is not a number", derrors.InvalidArgument, describe(v))
	}
	*n = Number(AppendFloat(nil, f))
	return nil
}

// MarshalAddress writes an address (already lowercase in the store) as a
// JSON string.
func MarshalAddress(s string) graphql.Marshaler {
	return addressText(s)
}

// addressText is an address that marshals as a lowercase JSON string. An
// address from the store is lowercase hex, which needs neither lowering
// nor escaping, and is written as it is in one pass; anything else is
// lowered and escaped as graphql.MarshalString does. A page of operators
// writes thousands of addresses: lowering, then escaping each one, took a
// tenth of the server's time on such pages.
type addressText string

// MarshalGQL implements graphql.Marshaler.
func (a addressText) MarshalGQL(w io.Writer) {
	s := string(a)
	for i := 0; i < len(s); i++ {
		if !plainLowerBytes[s[i]] {
			graphql.MarshalString(strings.ToLower(s)).MarshalGQL(w)
			return
		}
	}
	writeQuoted(w, s)
}

// plainText is text that marshals as a JSON string, written in one pass
// when no byte of it needs escaping (decimal integers always) and as
// graphql.MarshalString writes it otherwise.
type plainText string

// MarshalGQL implements graphql.Marshaler.
func (p plainText) MarshalGQL(w io.Writer) {
	s := string(p)
	for i := 0; i < len(s); i++ {
		if !plainBytes[s[i]] {
			graphql.MarshalString(s).MarshalGQL(w)
			return
		}
	}
	writeQuoted(w, s)
}

// plainBytes says which bytes stand for themselves inside a JSON string as
// graphql.MarshalString writes it: ASCII from the space on, other than the
// quote and the backslash. plainLowerBytes also leaves out the capital
// letters, which an address is written without. A table lookup per byte
// is about twice as fast as the comparisons it replaces.
var plainBytes, plainLowerBytes = func() (plain, lower [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		plain[c] = c != '"' && c != '\\'
		lower[c] = plain[c] && !('A' <= c && c <= 'Z')
	}
	return plain, lower
}()

// writeQuoted writes s, which needs no escaping, between double quotes.
func writeQuoted(w io.Writer, s string) {
	if b, ok := w.(*bytes.Buffer); ok {
		b.Grow(len(s) + 2)
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	io.WriteString(w, `"`)
	io.WriteString(w, s)
	io.WriteString(w, `"`)
}

// UnmarshalAddress accepts a 0x-prefixed 20-byte hex address in any case
// and returns it lowercase. Anything else is an invalid argument.
func UnmarshalAddress(v any) (string, error) {
	s, ok := v.(string)
	if !ok || !addressRE.MatchString(s) {
		return "", fmt.Errorf("%w: %s is not an address (0x followed by 40 hex digits)", derrors.InvalidArgument, describe(v))
	}
	return strings.ToLower(s), nil
}

// MarshalBigInt writes an integer held as decimal text as a JSON string.
func MarshalBigInt(s string) graphql.Marshaler {
	return plainText(s)
}

// UnmarshalBigInt accepts decimal integer text (or a JSON integer) and
// returns it as canonical decimal text.
func UnmarshalBigInt(v any) (string, error) {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	case int:
		text = strconv.Itoa(v)
	case int64:
		text = strconv.FormatInt(v, 10)
	default:
		return "", fmt.Errorf("%w: %s is not an integer", derrors.InvalidArgument, describe(v))
	}
	if !bigIntRE.MatchString(text) {
		return "", fmt.Errorf("%w: %s is not an integer", derrors.InvalidArgument, describe(v))
	}
	n, _ := new(big.Int).SetString(text, 10)
	return n.String(), nil
}

// dateTimeLayout is ISO 8601 in UTC with milliseconds, as the REST contract
// shows times.
const dateTimeLayout = "2006-01-02T15:04:05.000Z"

// MarshalDateTime writes t in UTC as ISO 8601 with milliseconds.
func MarshalDateTime(t time.Time) graphql.Marshaler {
	return dateTimeText(t)
}

// dateTimeText is a time that marshals as MarshalDateTime says. Into a
// bytes.Buffer, as compiled operations write, it is formatted in place
// instead of into a string of its own. The layout's digits, letters and
// punctuation need no escaping.
type dateTimeText time.Time

// MarshalGQL implements graphql.Marshaler.
func (d dateTimeText) MarshalGQL(w io.Writer) {
	t := time.Time(d).UTC()
	if b, ok := w.(*bytes.Buffer); ok {
		b.Grow(len(dateTimeLayout) + 2)
		b.WriteByte('"')
		b.Write(t.AppendFormat(b.AvailableBuffer(), dateTimeLayout))
		b.WriteByte('"')
		return
	}
	graphql.MarshalString(t.Format(dateTimeLayout)).MarshalGQL(w)
}

// UnmarshalDateTime accepts an RFC 3339 time.
func UnmarshalDateTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %s is not a date-time", derrors.InvalidArgument, describe(v))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q is not an ISO 8601 date-time", derrors.InvalidArgument, s)
	}
	return t.UTC(), nil
}

// StrategyValues maps strategy symbols to exact amounts. It is written as a
// JSON object of numbers with its keys sorted, converting to float64 only
// there, at the edge where the contract wants numbers. It holds that text
// alone, made once by NewStrategyValues: a TVL is kept for many requests
// (the entity cache's AVS and operators), where writing its maps again for
// each one was a twelfth of the server's time on a page of operators, and
// keeping the maps' exact sums besides was a tenth of the live heap.
type StrategyValues struct {
	text []byte
}

// NewStrategyValues returns the amounts of values as they are written;
// values is not kept.
func NewStrategyValues(values map[string]*DecimalSum) StrategyValues {
	return StrategyValues{text: strategyValuesText(values)}
}

// MarshalGQL writes the map as a JSON object of numbers.
func (v StrategyValues) MarshalGQL(w io.Writer) {
	if v.text == nil {
		w.Write([]byte("{}")) // the zero value
		return
	}
	w.Write(v.text)
}

// strategyValuesText returns values as a JSON object of numbers, its keys
// sorted.
func strategyValuesText(values map[string]*DecimalSum) []byte {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		appendJSONString(&buf, k)
		buf.WriteByte(':')
		buf.Write(AppendFloat(buf.AvailableBuffer(), values[k].Float64()))
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// appendJSONString writes s as encoding/json writes a string: a symbol of
// plain ASCII as it is between quotes, anything else through json.Marshal.
func appendJSONString(buf *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s)
			buf.Write(quoted)
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}

// UnmarshalGQL rejects input: StrategyValues is an output type.
func (v *StrategyValues) UnmarshalGQL(any) error {
	return fmt.Errorf("%w: StrategyValues is an output type", derrors.InvalidArgument)
}

// DecimalToFloat converts decimal text from the database to the nearest
// float64; empty or malformed text (which the database never produces) is 0.
func DecimalToFloat(s string) float64 {
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// describe renders a rejected input value for an error message.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return fmt.Sprintf("%T value", v)
	}
	return string(b)
}
