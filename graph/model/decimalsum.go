package model

import (
	"math/big"
	"strconv"
)

// DecimalSum is the exact sum of decimal numbers given as text, kept as an
// integer number of units of 10^-scale. Its zero value is 0.
//
// Adding costs a parse and, when the scales differ, a multiplication by a
// power of ten. It never reduces a fraction: big.Rat divides numerator
// and denominator by their greatest common divisor on every parse and
// every addition, which was an eighth of the server's time on a page of
// stakers with their TVL.
//
// A sum of one number, which most of a staker's sums are (its one beacon
// chain position, or each strategy's value), keeps that number's text
// instead, and its float64 is the text's: strconv.ParseFloat rounds the
// exact decimal as Float64 does, without the big arithmetic, which had
// taken two fifths of the time and more than half of the allocations of
// the TVLs of a page of stakers.
type DecimalSum struct {
	units big.Int
	scale int
	// text is the sum's only term while there is one (units is then 0),
	// and "" otherwise.
	text string
}

// AddText adds the decimal text s: an optional sign, digits and an
// optional fraction, as PostgreSQL writes a numeric. Malformed text
// (which the database does not produce) counts as 0.
func (d *DecimalSum) AddText(s string) {
	if !isDecimal(s) {
		return
	}
	if d.text == "" && d.units.Sign() == 0 {
		d.text = s
		return
	}
	d.spell()
	var x big.Int
	scale, _ := parseDecimal(&x, s)
	d.add(&x, scale)
}

// Add adds e to d; e is not changed.
func (d *DecimalSum) Add(e *DecimalSum) {
	if e.text != "" {
		d.AddText(e.text)
		return
	}
	d.spell()
	var x big.Int
	x.Set(&e.units)
	d.add(&x, e.scale)
}

// spell turns a sum kept as the text of its only term into units.
func (d *DecimalSum) spell() {
	if d.text == "" {
		return
	}
	d.scale, _ = parseDecimal(&d.units, d.text)
	d.text = ""
}

// add adds x units of 10^-scale to d, using x as scratch space.
func (d *DecimalSum) add(x *big.Int, scale int) {
	switch {
	case scale > d.scale:
		d.units.Mul(&d.units, powerOfTen(scale-d.scale))
		d.scale = scale
	case scale < d.scale:
		x.Mul(x, powerOfTen(d.scale-scale))
	}
	d.units.Add(&d.units, x)
}

// Float64 returns the float64 nearest the sum (ties to even), as
// big.Rat's Float64 does for the same number: strconv.ParseFloat rounds
// the exact decimal correctly. A zero sum is +0.
func (d *DecimalSum) Float64() float64 {
	if d.text != "" {
		f, _ := strconv.ParseFloat(d.text, 64) // ±Inf beyond float64's range
		if f == 0 {
			return 0 // not -0
		}
		return f
	}
	if d.units.Sign() == 0 {
		return 0
	}
	var buf [128]byte
	b := d.units.Append(buf[:0], 10)
	if d.scale > 0 {
		b = append(b, "e-"...)
		b = strconv.AppendInt(b, int64(d.scale), 10)
	}
	f, _ := strconv.ParseFloat(string(b), 64) // ±Inf beyond float64's range
	return f
}

// isDecimal reports whether s is decimal text as parseDecimal reads it:
// an optional sign, then digits with at most one point, which is not
// first, and at least one digit.
func isDecimal(s string) bool {
	digits, point := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' && !point && i > 0:
			point = true
		case (c == '-' || c == '+') && i == 0:
		default:
			return false
		}
	}
	return digits
}

// parseDecimal sets x to the digits of decimal text s without its point
// and returns the number of digits after the point.
func parseDecimal(x *big.Int, s string) (scale int, ok bool) {
	var buf [64]byte
	digits := buf[:0]
	negative, point := false, -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '.' && point < 0 && i > 0:
			point = len(digits)
		case (c == '-' || c == '+') && i == 0:
			negative = c == '-'
		default:
			return 0, false
		}
	}
	if len(digits) == 0 {
		return 0, false
	}
	if len(digits) <= 19 {
		n, err := strconv.ParseUint(string(digits), 10, 64)
		if err != nil {
			return 0, false
		}
		x.SetUint64(n)
	} else if _, ok := x.SetString(string(digits), 10); !ok {
		return 0, false
	}
	if negative {
		x.Neg(x)
	}
	if point >= 0 {
		scale = len(digits) - point
	}
	return scale, true
}

// powersOfTen holds 10^0 to 10^39, the scales PostgreSQL's numeric
// divisions produce; larger powers are computed when needed.
var powersOfTen = func() []*big.Int {
	p := make([]*big.Int, 40)
	p[0] = big.NewInt(1)
	for i := 1; i < len(p); i++ {
		p[i] = new(big.Int).Mul(p[i-1], big.NewInt(10))
	}
	return p
}()

// powerOfTen returns 10^n, which the caller must not change.
func powerOfTen(n int) *big.Int {
	if n < len(powersOfTen) {
		return powersOfTen[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
