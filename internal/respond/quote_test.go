package respond

import (
	"strings"
	"testing"
)

func TestQuoteInput(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"abc", `"abc"`},
		{"a\x00\xff\n", `"a\x00\xff\n"`},
		{strings.Repeat("x", 100), `"` + strings.Repeat("x", 100) + `"`},
		{strings.Repeat("x", 101), `"` + strings.Repeat("x", 100) + `"… (101 bytes)`},
		// A character across the cut is left out whole.
		{strings.Repeat("x", 99) + "é" + "yz", `"` + strings.Repeat("x", 99) + `"… (103 bytes)`},
		// Without a character start near the limit, the cut is at most three
		// bytes before it.
		{strings.Repeat("\x80", 120), `"` + strings.Repeat(`\x80`, 96) + `"… (120 bytes)`},
	} {
		if got := QuoteInput(tc.in); got != tc.want {
			t.Errorf("QuoteInput(%.20q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
