package rest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// nullPaths names members of a JSON document that are left out when their
// value is null. Each path is a dot-separated list of member names from
// the document's root, with "*" standing for every element of an array:
// "data.*.args.strategy" is the strategy of the args of every element of
// data.
type nullPaths []string

// leaveOutNulls returns the JSON document raw with the members that paths
// name left out where their value is null. Everything else, the order of
// members and the text of every value included, is copied as it is, so the
// document is never decoded into Go values and written again (which would
// cost a quarter of an event page's CPU and reorder its members).
func leaveOutNulls(raw []byte, paths nullPaths) ([]byte, error) {
	s := nullScanner{in: raw, out: make([]byte, 0, len(raw))}
	for _, p := range paths {
		s.drop = append(s.drop, strings.Split(p, "."))
	}
	out, err := s.document()
	if err != nil {
		return nil, fmt.Errorf("leave out nulls: %w", err)
	}
	return out, nil
}

// writeNullsAs returns the JSON document raw with the null members that
// the keys of defaults name (paths as in nullPaths) written as the JSON
// text their values give, copying everything else as leaveOutNulls does.
func writeNullsAs(raw []byte, defaults map[string]string) ([]byte, error) {
	s := nullScanner{in: raw, out: make([]byte, 0, len(raw)+len(raw)/8)}
	for p, text := range defaults {
		s.replace = append(s.replace, replacement{path: strings.Split(p, "."), text: []byte(text)})
	}
	out, err := s.document()
	if err != nil {
		return nil, fmt.Errorf("write nulls: %w", err)
	}
	return out, nil
}

// nullScanner copies a JSON document from in to out, leaving out the null
// members whose paths match one of drop and writing those whose paths match
// one of replace as its text. It also writes the numbers at the paths of
// quote as strings, and with copied set, copies a member into objects. path
// is the path of the value at the scanner's position: member names as
// written between their quotes, and "*" for an array's element.
type nullScanner struct {
	in, out []byte
	i       int
	drop    [][]string
	replace []replacement
	quote   [][]string
	copied  *memberCopy
	path    [][]byte
}

// memberCopy copies the string member at from into the objects at into, as
// their first member, named name. Each object at into takes the value from
// the object that holds both it and the member (a staker's address into
// each of the staker's shares), where the member must come first. from and
// into are paths as in nullPaths.
type memberCopy struct {
	from, into []string
	name       string
	// value is the member's text, quotes included, while in the object
	// that holds it.
	value []byte
}

// replacement is the text written for a null member at path.
type replacement struct {
	path []string
	text []byte
}

// document copies the whole of in, one JSON document, and returns the copy.
func (s *nullScanner) document() ([]byte, error) {
	if err := s.value(); err != nil {
		return nil, err
	}
	s.space()
	if s.i != len(s.in) {
		return nil, fmt.Errorf("text after the document at byte %d", s.i)
	}
	return s.out, nil
}

// element is the path element of an array's elements.
var element = []byte("*")

var errSyntax = errors.New("not a JSON document")

// space skips white space.
func (s *nullScanner) space() {
	for s.i < len(s.in) {
		switch s.in[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value copies the value at the scanner's position.
func (s *nullScanner) value() error {
	s.space()
	if s.i >= len(s.in) {
		return errSyntax
	}
	switch s.in[s.i] {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		start := s.i
		if err := s.skipString(); err != nil {
			return err
		}
		if c := s.copied; c != nil && len(c.from) == len(s.path) && s.pathIs(c.from) {
			c.value = s.in[start:s.i]
		}
		s.out = append(s.out, s.in[start:s.i]...)
		return nil
	default:
		start := s.i
		s.skipLiteral()
		if s.i == start {
			return errSyntax
		}
		if literal := s.in[start:s.i]; (literal[0] == '-' || literal[0] >= '0' && literal[0] <= '9') && s.quoted() {
			s.out = append(append(append(s.out, '"'), literal...), '"')
			return nil
		}
		s.out = append(s.out, s.in[start:s.i]...)
		return nil
	}
}

// object copies the object at the scanner's position.
func (s *nullScanner) object() error {
	s.i++ // {
	s.out = append(s.out, '{')
	written := false
	if c := s.copied; c != nil {
		switch {
		case len(c.into) == len(s.path) && s.pathIs(c.into):
			if c.value == nil {
				return fmt.Errorf("no %s before %s", strings.Join(c.from, "."), strings.Join(c.into, "."))
			}
			s.out = append(append(append(append(s.out, '"'), c.name...), '"', ':'), c.value...)
			written = true
		case len(c.from)-1 == len(s.path) && s.pathIs(c.from[:len(s.path)]):
			c.value = nil // a new holder of the member
		}
	}
	for read := 0; ; read++ {
		s.space()
		if s.i >= len(s.in) {
			return errSyntax
		}
		if s.in[s.i] == '}' {
			s.i++
			s.out = append(s.out, '}')
			return nil
		}
		if read > 0 {
			if s.in[s.i] != ',' {
				return errSyntax
			}
			s.i++
			s.space()
		}
		keyStart := s.i
		if s.i >= len(s.in) || s.in[s.i] != '"' {
			return errSyntax
		}
		if err := s.skipString(); err != nil {
			return err
		}
		key := s.in[keyStart:s.i]
		s.space()
		if s.i >= len(s.in) || s.in[s.i] != ':' {
			return errSyntax
		}
		s.i++
		s.space()
		s.path = append(s.path, key[1:len(key)-1])
		var text []byte
		if s.isNull() {
			if s.dropped() {
				s.i += len("null")
				s.path = s.path[:len(s.path)-1]
				continue
			}
			text = s.replacement()
		}
		if written {
			s.out = append(s.out, ',')
		}
		written = true
		s.out = append(s.out, key...)
		s.out = append(s.out, ':')
		if text != nil {
			s.i += len("null")
			s.out = append(s.out, text...)
		} else if err := s.value(); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
	}
}

// array copies the array at the scanner's position.
func (s *nullScanner) array() error {
	s.i++ // [
	s.out = append(s.out, '[')
	s.path = append(s.path, element)
	defer func() { s.path = s.path[:len(s.path)-1] }()
	for n := 0; ; n++ {
		s.space()
		if s.i >= len(s.in) {
			return errSyntax
		}
		if s.in[s.i] == ']' {
			s.i++
			s.out = append(s.out, ']')
			return nil
		}
		if n > 0 {
			if s.in[s.i] != ',' {
				return errSyntax
			}
			s.i++
			s.out = append(s.out, ',')
		}
		if err := s.value(); err != nil {
			return err
		}
	}
}

// skipString moves past the string at the scanner's position.
func (s *nullScanner) skipString() error {
	for s.i++; s.i < len(s.in); s.i++ {
		switch s.in[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return nil
		}
	}
	return errSyntax
}

// skipLiteral moves past the number, true, false or null at the scanner's
// position.
func (s *nullScanner) skipLiteral() {
	for s.i < len(s.in) {
		switch c := s.in[s.i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c == '-', c == '+', c == '.', c == 'E':
			s.i++
		default:
			return
		}
	}
}

// isNull tells whether the value at the scanner's position is null.
func (s *nullScanner) isNull() bool {
	if !bytes.HasPrefix(s.in[s.i:], []byte("null")) {
		return false
	}
	end := s.i + len("null")
	return end == len(s.in) || bytes.IndexByte([]byte(" \t\r\n,}]"), s.in[end]) >= 0
}

// dropped tells whether a null member at the scanner's path is left out.
func (s *nullScanner) dropped() bool {
	for _, d := range s.drop {
		if len(d) == len(s.path) && s.pathIs(d) {
			return true
		}
	}
	return false
}

// replacement returns the text written for a null member at the scanner's
// path, nil when it is written as null.
func (s *nullScanner) replacement() []byte {
	for _, r := range s.replace {
		if len(r.path) == len(s.path) && s.pathIs(r.path) {
			return r.text
		}
	}
	return nil
}

// quoted tells whether a number at the scanner's path is written as a
// string.
func (s *nullScanner) quoted() bool {
	for _, q := range s.quote {
		if len(q) == len(s.path) && s.pathIs(q) {
			return true
		}
	}
	return false
}

// pathIs tells whether the scanner's path is pattern, of the same length.
func (s *nullScanner) pathIs(pattern []string) bool {
	for i, name := range pattern {
		if string(s.path[i]) != name {
			return false
		}
	}
	return true
}
