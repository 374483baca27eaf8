package bench_test

import (
	"strings"
	"testing"
)

// TestPlanViolations checks the plan rules on hand-made plans: a page
// sorted from one range of an index passes up to its bound, while a sort
// of a whole table's rows, an oversized window or a bad scan below the
// sort or in the page's subqueries is reported.
func TestPlanViolations(t *testing.T) {
	large := map[string]bool{"stakers": true}
	rangeScan := planNode{NodeType: "Index Only Scan", Relation: "stakers", IndexName: "stakers_updated_at_idx",
		IndexCond: "(updated_at >= now())", PlanRows: 16000, Parent: "Outer"}
	fullScan := planNode{NodeType: "Seq Scan", Relation: "stakers", PlanRows: 300000, Parent: "Outer"}
	page := func(sortRows float64, input planNode, subqueries ...planNode) planNode {
		input.Parent = "Outer"
		sort := planNode{NodeType: "Sort", PlanRows: sortRows, Parent: "Outer",
			Plans: []planNode{{NodeType: "Result", PlanRows: sortRows, Parent: "Outer", Plans: []planNode{input}}}}
		return planNode{NodeType: "Limit", PlanRows: 12, Plans: append(subqueries, sort)}
	}
	count := planNode{NodeType: "Aggregate", PlanRows: 1, Parent: "InitPlan", Plans: []planNode{rangeScan}}
	badCount := planNode{NodeType: "Aggregate", PlanRows: 1, Parent: "InitPlan", Plans: []planNode{fullScan}}
	for _, c := range []struct {
		name string
		plan planNode
		want string // a part of the one violation expected, or "" for none
	}{
		{"window sort", page(16000, rangeScan, count), ""},
		{"window sort with a bad subquery", page(16000, rangeScan, badCount), "sequential scan of stakers"},
		{"window sort too large", page(60000, rangeScan), "sort of 60000 estimated rows"},
		{"sort of a whole table", page(300000, fullScan), "sequential scan of stakers"},
		{"sort without a limit", planNode{NodeType: "Sort", PlanRows: 16000, Plans: []planNode{rangeScan}}, "sort of 16000 estimated rows"},
	} {
		got := planViolations(c.plan, large)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: %q; want none", c.name, got)
		case c.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "; "), c.want)):
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}
