package model

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
)

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-2.5, "-2.5"},
		{2075390.5994251065, "2075390.5994251065"},
		{9.6e17, "960000000000000000"},
		{1e21, "1000000000000000000000"},
		{1.5e-7, "0.00000015"},
	} {
		got := string(AppendFloat(nil, tc.f))
		if got != tc.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
		if back, err := strconv.ParseFloat(got, 64); err != nil || back != tc.f {
			t.Errorf("AppendFloat(%v) = %s reads back as %v, %v", tc.f, got, back, err)
		}
	}
}

func TestMarshalFloat(t *testing.T) {
	var buf bytes.Buffer
	if err := MarshalFloat(2.0753905994251065e+06).MarshalGQLContext(context.Background(), &buf); err != nil || buf.String() != "2075390.5994251065" {
		t.Errorf("MarshalFloat = %q, %v", buf.String(), err)
	}
	for _, f := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		if err := MarshalFloat(f).MarshalGQLContext(context.Background(), &bytes.Buffer{}); err == nil {
			t.Errorf("MarshalFloat(%v) succeeded", f)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"960000000000000000", "960000000000000000"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		{"-17", "-17"},
		{"1.25", "1.25"},
		{"1e3", "1000"},
		{"007", "7"},
	} {
		var buf bytes.Buffer
		NumberFromDecimal(tc.in).MarshalGQL(&buf)
		if buf.String() != tc.want {
			t.Errorf("NumberFromDecimal(%s) writes %s, want %s", tc.in, buf.String(), tc.want)
		}
	}
	var n Number
	if err := n.UnmarshalGQL(json.Number("123456789012345678901")); err != nil || n != "123456789012345678901" {
		t.Errorf("UnmarshalGQL = %q, %v", n, err)
	}
	if err := n.UnmarshalGQL("x"); err == nil {
		t.Errorf("UnmarshalGQL(%q) succeeded", "x")
	}
}

func TestStrategyValuesArePlainDecimals(t *testing.T) {
	sum := func(texts ...string) *DecimalSum {
		var d DecimalSum
		for _, x := range texts {
			d.AddText(x)
		}
		return &d
	}
	v := NewStrategyValues(map[string]*DecimalSum{"a": sum("96"), "b": sum("2075390.5994251065"), "c": sum("900000000000000000", "60000000000000000.000")})
	var buf bytes.Buffer
	v.MarshalGQL(&buf)
	if want := `{"a":96,"b":2075390.5994251065,"c":960000000000000000}`; buf.String() != want {
		t.Errorf("StrategyValues = %s, want %s", buf.String(), want)
	}
	buf.Reset()
	StrategyValues{}.MarshalGQL(&buf)
	if buf.String() != "{}" {
		t.Errorf("the zero StrategyValues = %s, want {}", buf.String())
	}
}

// TestAppendJSONStringIsJSON checks the keys of StrategyValues against
// encoding/json, for symbols and for text it must escape.
func TestAppendJSONStringIsJSON(t *testing.T) {
	for _, s := range []string{"", "stETH", "ETHx", "a b", `q"uote`, `back\slash`, "<tag>&", "\x01ctl", "\x7f", "naïve", "\u2028", "\xff"} {
		var buf bytes.Buffer
		appendJSONString(&buf, s)
		want, _ := json.Marshal(s)
		if buf.String() != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, buf.String(), want)
		}
	}
}

// writerOnly hides a writer's other methods, as a writer other than a
// bytes.Buffer would.
type writerOnly struct{ w *bytes.Buffer }

func (o writerOnly) Write(p []byte) (int, error) { return o.w.Write(p) }

// marshalled returns what m writes into a bytes.Buffer (holding some text
// already, as a page does) and into another writer; both must agree.
func marshalled(t *testing.T, m interface{ MarshalGQL(io.Writer) }) string {
	t.Helper()
	buf := bytes.NewBufferString("prefix")
	m.MarshalGQL(buf)
	var other bytes.Buffer
	m.MarshalGQL(writerOnly{&other})
	got, ok := strings.CutPrefix(buf.String(), "prefix")
	if !ok || got != other.String() {
		t.Fatalf("into a bytes.Buffer %q, into another writer %q", buf.String(), other.String())
	}
	return got
}

// TestLeafMarshallersMatchMarshalString checks that the one-pass writers
// of addresses, integers and times write what graphql.MarshalString writes
// for the text they stand for, whatever the text holds.
func TestLeafMarshallersMatchMarshalString(t *testing.T) {
	reference := func(s string) string {
		var buf bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&buf)
		return buf.String()
	}
	texts := []string{
		"", "0x7e95bf4c5be6a9840e173056c1a044a1656daba5", "0x7E95BF4C5BE6A9840E173056C1A044A1656DABA5",
		"0", "-12", "115792089237316195423570985008687907853269984665640564039457584007913129639935",
		`a"b`, `a\b`, "tab\there", "line\nbreak", "\x00\x1f\x7f", "Ünïcode É", "\xff\xfe invalid", "ẞ",
	}
	for _, s := range texts {
		if got, want := marshalled(t, MarshalAddress(s)), reference(strings.ToLower(s)); got != want {
			t.Errorf("MarshalAddress(%q) wrote %s, want %s", s, got, want)
		}
		if got, want := marshalled(t, MarshalBigInt(s)), reference(s); got != want {
			t.Errorf("MarshalBigInt(%q) wrote %s, want %s", s, got, want)
		}
	}
	for _, tm := range []time.Time{
		time.Date(2026, 11, 29, 2, 3, 4, 5_678_000, time.UTC),
		time.Date(2025, 1, 1, 23, 59, 59, 999_999_999, time.FixedZone("east", 5*3600)),
		{},
		time.Date(12345, 6, 7, 8, 9, 10, 0, time.UTC),
		time.Date(-44, 3, 15, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := marshalled(t, MarshalDateTime(tm)), reference(tm.UTC().Format(dateTimeLayout)); got != want {
			t.Errorf("MarshalDateTime(%v) wrote %s, want %s", tm, got, want)
		}
	}
}
