package store

import (
	"errors"
	"testing"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

func TestTextSearchCondition(t *testing.T) {
	for _, tc := range []struct {
		search TextSearch
		cond   string
		args   []any
	}{
		{TextSearch{}, "", nil},
		{TextSearch{Text: "Eigen"}, "lower(a.name) LIKE $1", []any{"%eigen%"}},
		{TextSearch{Text: "Eigen", Mode: SearchStartsWith}, "lower(a.name) LIKE $1", []any{"eigen%"}},
		{TextSearch{Text: `50%_off\`}, "lower(a.name) LIKE $1", []any{`%50\%\_off\\%`}},
		// Hex digits may be part of an address too; a prefix search for
		// them matches addresses that start with 0x and the digits.
		{TextSearch{Text: "ABC", Mode: SearchStartsWith}, "(lower(a.name) LIKE $1 OR a.address LIKE $2)", []any{"abc%", "0xabc%"}},
		{TextSearch{Text: "0xAbC", Mode: SearchStartsWith}, "(lower(a.name) LIKE $1 OR a.address LIKE $2)", []any{"0xabc%", "0xabc%"}},
		{TextSearch{Text: "beef"}, "(lower(a.name) LIKE $1 OR a.address LIKE $2)", []any{"%beef%", "%beef%"}},
	} {
		var q queryArgs
		cond, err := tc.search.condition(&q, "a.name", "a.address")
		if err != nil {
			t.Fatal(err)
		}
		if cond != tc.cond || len(q.args) != len(tc.args) {
			t.Errorf("%+v: %q %v, want %q %v", tc.search, cond, q.args, tc.cond, tc.args)
			continue
		}
		for i := range q.args {
			if q.args[i] != tc.args[i] {
				t.Errorf("%+v: argument %d is %v, want %v", tc.search, i, q.args[i], tc.args[i])
			}
		}
	}
	var q queryArgs
	if _, err := (TextSearch{Text: "x", Mode: "endsWith"}).condition(&q, "n", "a"); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestPageAndSortValidation(t *testing.T) {
	for _, p := range []Page{{Skip: -1, Take: 1}, {Take: 0}, {Take: MaxTake + 1}} {
		if err := p.Validate(); !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("page %+v: %v", p, err)
		}
	}
	if err := (Page{Skip: 5, Take: MaxTake}).Validate(); err != nil {
		t.Error(err)
	}
	if _, err := (Sort{Key: SortByTotalAVS}).orderBy(avsSortColumns, "a.address"); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("AVS sorted by total AVS: %v", err)
	}
	got, err := (Sort{Key: SortByTVL, Desc: true}).orderBy(avsSortColumns, "a.address")
	if err != nil || got != "a.tvl_eth DESC, a.address DESC" {
		t.Errorf("orderBy: %q, %v", got, err)
	}
}
