package rest

import (
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestOperationsMatchSchema checks every embedded operation against the
// GraphQL schema, so that a change of the schema that breaks a REST route
// fails here, before any request is made.
func TestOperationsMatchSchema(t *testing.T) {
	src, err := os.ReadFile("../schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(src)})
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	ops := embeddedOperations
	files, err := fs.Glob(os.DirFS("operations"), "*.graphql")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(ops) {
		t.Errorf("%d operation files, %d embedded operations", len(files), len(ops))
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".graphql")
		op, ok := ops[name]
		if !ok {
			t.Errorf("operations/%s is not used by any route", f)
			continue
		}
		doc, errs := gqlparser.LoadQuery(schema, op)
		if len(errs) > 0 {
			t.Errorf("operations/%s: %v", f, errs)
			continue
		}
		// cutPath takes the result out of the executor's answer by its
		// enclosing text, which needs one field at each level down to the
		// field aliased "result". An event feed may also look up the
		// subject of its per-subject routes beside the result, included
		// only for them (feedResult decodes those answers).
		root := doc.Operations[0].SelectionSet
		if n := len(root); n > 1 {
			if last, ok := root[n-1].(*ast.Field); ok && last.Alias == "result" && allIncluded(root[:n-1]) {
				continue
			}
		}
		for set := root; ; {
			field, ok := set[0].(*ast.Field)
			if len(set) != 1 || !ok {
				t.Errorf("operations/%s: %d selections above the result; want one field", f, len(set))
				break
			}
			if field.Alias == "result" {
				break
			}
			set = field.SelectionSet
		}
	}
}

func TestCutPath(t *testing.T) {
	for _, tc := range []struct {
		data string
		path []string
		want string // "" when cutPath must leave it to decoding
	}{
		{`{"result":{"data":[],"meta":{"total":0}}}`, []string{"result"}, `{"data":[],"meta":{"total":0}}`},
		{`{"avs":{"result":[1,2]}}`, []string{"avs", "result"}, `[1,2]`},
		{`{"avs":null}`, []string{"avs", "result"}, ""},
		{`{"avs":{"result":null}}`, []string{"avs", "result"}, ""},
		{`{"result":"text"}`, []string{"result"}, ""},
		{`{"results":{"a":1}}`, []string{"result"}, ""},
		{`{"result" :{"a":1}}`, []string{"result"}, ""},
		{`{"res`, []string{"result"}, ""},
		{`{}`, []string{"result"}, ""},
		{``, []string{"result"}, ""},
	} {
		got, ok := cutPath(json.RawMessage(tc.data), tc.path)
		if tc.want == "" {
			if ok {
				t.Errorf("cutPath(%s, %q) = %s; want it left to decoding", tc.data, tc.path, got)
			}
			continue
		}
		if !ok || string(got) != tc.want {
			t.Errorf("cutPath(%s, %q) = %s, %v; want %s", tc.data, tc.path, got, ok, tc.want)
		}
	}
}

// allIncluded reports whether every selection is a field with an @include
// directive.
func allIncluded(set ast.SelectionSet) bool {
	for _, sel := range set {
		f, ok := sel.(*ast.Field)
		if !ok || f.Directives.ForName("include") == nil {
			return false
		}
	}
	return true
}

// embeddedOperations are the routes' operations by the name of their file.
var embeddedOperations = map[string]string{
	"avs_list":                 avsListOp,
	"avs_addresses":            avsAddressesOp,
	"avs_operators":            avsOperatorsOp,
	"avs_rewards":              avsRewardsOp,
	"operator_list":            operatorListOp,
	"staker_delegation_events": stakerDelegationEventsOp,
	"events_delegation":        delegationEventsOp,
	"events_deposit":           depositEventsOp,
	"events_withdrawal":        withdrawalEventsOp,
	"events_rewards":           rewardsEventsOp,
	"events_registration":      registrationEventsOp,
	"withdrawals":              withdrawalsOp,
	"metrics":                  metricsOp,
	"restaking_tvl":            restakingTVLOp,
	"strategy_tvl":             strategyTVLOp,
	"total_withdrawals":        totalWithdrawalsOp,
	"total_stakers":            totalStakersOp,
	"deployment_ratio":         deploymentRatioOp,
	"restaking_ratio":          restakingRatioOp,
	"programmatic_incentives":  programmaticIncentivesOp,
	"historical_count":         historicalCountOp,
	"historical_tvl":           historicalTVLOp,
	"reward_strategies":        rewardStrategiesOp,
	"avs_operator_sets":        avsOperatorSetsOp,
	"operator_set":             operatorSetOp,
	"operator_allocations":     operatorAllocationsOp,
	"slashings":                slashingsOp,
	"avs_detail":               avsDetailOp,
	"operator_detail":          operatorDetailOp,
	"operator_addresses":       operatorAddressesOp,
	"operator_rewards":         operatorRewardsOp,
	"withdrawal_detail":        withdrawalDetailOp,
	"deposits":                 depositsOp,
	"avs_stakers":              avsStakersOp,
	"stakers":                  stakersOp,
	"staker_detail":            stakerDetailOp,
	"total_count":              totalCountOp,
	"total_tvl":                totalTVLOp,
	"beacon_chain_tvl":         beaconChainTVLOp,
	"historical_value":         historicalValueOp,
	"historical_strategy_tvl":  historicalStrategyTVLOp,
	"historical_operator":      historicalOperatorOp,
	"historical_avs":           historicalAVSOp,
}
