package model

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"testing"
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
