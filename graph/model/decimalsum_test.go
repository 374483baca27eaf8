package model

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestDecimalSumIsBigRatSum adds random decimal text of every scale and
// sign with DecimalSum and with big.Rat and checks that both give the
// same float64.
func TestDecimalSumIsBigRatSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	decimal := func() string {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteByte('-')
		}
		b.WriteString(strconv.FormatUint(r.Uint64()>>r.IntN(64), 10))
		for range r.IntN(3) {
			b.WriteString(strconv.FormatUint(r.Uint64(), 10))
		}
		if scale := r.IntN(45); scale > 0 {
			b.WriteByte('.')
			for range scale {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		return b.String()
	}
	for range 20000 {
		var sum DecimalSum
		var want big.Rat
		var texts []string
		next := func() string {
			text := decimal()
			texts = append(texts, text)
			x, ok := new(big.Rat).SetString(text)
			if !ok {
				t.Fatalf("big.Rat rejects %q", text)
			}
			want.Add(&want, x)
			return text
		}
		// Sums of one term keep its text: terms are added as text, as
		// sums of one term and as sums of two.
		for range 1 + r.IntN(5) {
			switch r.IntN(3) {
			case 0:
				sum.AddText(next())
			case 1:
				var one DecimalSum
				one.AddText(next())
				sum.Add(&one)
			default:
				var two DecimalSum
				two.AddText(next())
				two.AddText(next())
				sum.Add(&two)
			}
		}
		w, _ := want.Float64()
		if got := sum.Float64(); got != w {
			t.Fatalf("sum of %q = %v, want %v", texts, got, w)
		}
	}
}

func TestDecimalSumEdges(t *testing.T) {
	for _, tc := range []struct {
		texts []string
		want  float64
	}{
		{nil, 0},
		{[]string{"0"}, 0},
		{[]string{"-0.000"}, 0},
		{[]string{"1.5", "-1.50"}, 0},
		{[]string{"0.1", "0.2"}, 0.3},
		{[]string{"5."}, 5},
		{[]string{"+2", "-.5"}, 1.5},
		{[]string{"1" + strings.Repeat("0", 400)}, math.Inf(1)},
		{[]string{"0." + strings.Repeat("0", 400) + "1"}, 0},
		{[]string{"12.5", "NaN", "Infinity", "", "-", ".", "1e5", "1.2.3", "0x10"}, 12.5},
	} {
		var sum DecimalSum
		for _, x := range tc.texts {
			sum.AddText(x)
		}
		if got := sum.Float64(); got != tc.want || math.Signbit(got) {
			t.Errorf("sum of %q = %v, want %v", tc.texts, got, tc.want)
		}
	}
}

func BenchmarkDecimalSum(b *testing.B) {
	texts := []string{"5.05339175997705602460", "570.31437715252980001958", "4.7192676129781995"}
	b.Run("DecimalSum", func(b *testing.B) {
		for range b.N {
			var sum DecimalSum
			for _, x := range texts {
				sum.AddText(x)
			}
			_ = sum.Float64()
		}
	})
	b.Run("big.Rat", func(b *testing.B) {
		for range b.N {
			var sum big.Rat
			for _, x := range texts {
				v, _ := new(big.Rat).SetString(x)
				sum.Add(&sum, v)
			}
			_, _ = sum.Float64()
		}
	})
}
