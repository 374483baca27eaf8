package respond

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxQuoted is the most bytes of a client's value that QuoteInput quotes.
const MaxQuoted = 100

// QuoteInput quotes s, a value as the client sent it, for an error message
// that names it: in Go syntax, so that control characters and invalid UTF-8
// show as escapes. A value longer than MaxQuoted bytes is cut at a character
// boundary, and its length follows the quotation: "abcd"… (2048 bytes).
func QuoteInput(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > MaxQuoted-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
