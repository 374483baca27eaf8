package graph

import (
	"slices"
	"testing"

	"github.com/stakegraph/stakegraph/store"
)

// TestGroupBy checks that groupBy keeps each key's rows in order, whether
// they come in one run (a batch ordered by key) or in several, and that a
// group appended to leaves the rows of the others alone.
func TestGroupBy(t *testing.T) {
	type row struct{ key, value string }
	rows := []row{{"a", "1"}, {"a", "2"}, {"b", "3"}, {"c", "4"}, {"b", "5"}, {"c", "6"}, {"c", "7"}}
	got := groupBy(rows, func(r row) string { return r.key })
	values := func(rs []row) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.value)
		}
		return out
	}
	want := map[string][]string{"a": {"1", "2"}, "b": {"3", "5"}, "c": {"4", "6", "7"}}
	if len(got) != len(want) {
		t.Fatalf("%d groups, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if g := values(got[k]); !slices.Equal(g, w) {
			t.Errorf("group %s = %v, want %v", k, g, w)
		}
	}
	a := append(got["a"], row{"a", "x"})
	if rows[2] != (row{"b", "3"}) || got["b"][0] != (row{"b", "3"}) {
		t.Errorf("appending to group a overwrote the next row: %v", rows[2])
	}
	if len(a) != 3 {
		t.Errorf("appended group has %d rows", len(a))
	}
	if g := groupBy([]row(nil), func(r row) string { return r.key }); len(g) != 0 {
		t.Errorf("no rows gave %d groups", len(g))
	}
}

// TestRestakedFor checks the subsets of a share set by strategies: in the
// set's order, the set itself when it holds every row, and one subset for
// the same rows however the strategies are listed.
func TestRestakedFor(t *testing.T) {
	set := &shareSet{rows: []store.StrategyShares{
		{Owner: "o", StrategyAddress: "0xa", Shares: "1"},
		{Owner: "o", StrategyAddress: "0xb", Shares: "2"},
		{Owner: "o", StrategyAddress: "0xc", Shares: "3"},
	}}
	if got := set.restakedFor([]string{"0xc", "0xb", "0xa", "0xd"}); got != set {
		t.Errorf("all the strategies: a new subset %v, want the set itself", got.Rows())
	}
	ac := set.restakedFor([]string{"0xc", "0xa"})
	if got := ac.Rows(); len(got) != 2 || got[0].Shares != "1" || got[1].Shares != "3" {
		t.Errorf("0xc and 0xa: %v, want the shares of 0xa then 0xc", got)
	}
	if again := set.restakedFor([]string{"0xa", "0xc", "0xe"}); again != ac {
		t.Error("the same rows asked for with other strategies made another subset")
	}
	if none := set.restakedFor([]string{"0xe"}); len(none.Rows()) != 0 || none.TVL() == nil {
		t.Errorf("no strategy of the set: %v", none.Rows())
	}
	var unknown *shareSet
	if unknown.restakedFor([]string{"0xa"}) != nil {
		t.Error("an owner without shares has a subset")
	}
}
